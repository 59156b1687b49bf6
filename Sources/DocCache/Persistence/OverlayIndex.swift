package import DocModel

/// The query index of the overlays (`KeySchema` tables 0x31–0x33): for each user, the rows the
/// local view of each document with pending writes would have in the remote documents' field,
/// array, unindexed-value and composite indexes, under a prefix of the user. A limited query
/// walks them in index order beside the remote documents' rows, instead of reading every
/// overlay of its collection.
///
/// A local write does not index its overlay: that would add a row per field to every write, on
/// the path the app waits for. Instead every overlay written by a batch above the user's
/// *watermark* counts as unindexed; ``LocalStore/indexOverlays(maxBatches:)`` indexes them
/// later and raises the watermark (``ClientCore`` runs it once enough writes wait), and a query
/// reads the overlays of the batches above the watermark directly. Every other change of an
/// overlay (a batch acknowledged, rejected or reverted, a remote document changed under a
/// pending write) updates its rows in the same transaction (``update(_:to:user:in:)``). So the
/// rows are exact for every overlay that no batch above the watermark writes.
///
/// Each indexed overlay also has a row listing its index rows (0x32), so an update deletes
/// exactly the rows that no longer apply, whatever local writes changed in between.
package final class OverlayIndex {
    /// Computes the rows (those of the remote documents' indexes, with their declared
    /// composite indexes).
    let remoteDocuments: RemoteDocumentCache

    init(remoteDocuments: RemoteDocumentCache) {
        self.remoteDocuments = remoteDocuments
    }

    /// The record name in decoding errors.
    static let recordName = "overlay index rows"

    /// What `user`'s overlay index rows start with: put in front of a remote index scan's
    /// range, the scan walks the same index over `user`'s overlays.
    package static func space(_ user: String) -> [UInt8] { KeySchema.overlayIndexSpace(user) }

    /// Makes the index rows of `key`'s overlay for `user` those of `document` (the overlay's
    /// local view; `nil` or a no-document when it has none), deleting the rows it had that no
    /// longer apply.
    func update(_ key: DocumentKey, to document: MaybeDocument?, user: String, in txn: PersistenceTransaction) throws(DocError) {
        let listKey = KeySchema.overlayIndexRows(user, key)
        let raw = try txn.get(listKey)
        let oldRows = try raw.map { raw throws(DocError) in try Self.decodeRows(raw) } ?? []
        // Each row once (a document's rows are unique by construction, see FieldIndexer).
        let newRows = document?.document.map(remoteDocuments.indexRows(for:)) ?? []
        let space = Self.space(user)
        // The usual cases compare nothing: an acknowledged or rejected batch's overlay leaves
        // (every old row goes), an overlay is indexed for the first time (every new row comes).
        if newRows.isEmpty {
            guard raw != nil else { return }
            for row in oldRows { txn.delete(space + row) }
            txn.delete(listKey)
            return
        }
        if oldRows.isEmpty {
            for row in newRows { txn.put(space + row, []) }
            txn.put(listKey, Self.encodeRows(newRows))
            return
        }
        let old = Set(oldRows.map(HashedBytes.init))
        let new = Set(newRows.map(HashedBytes.init))
        for row in old where !new.contains(row) { txn.delete(space + row.bytes) }
        for row in new where !old.contains(row) { txn.put(space + row.bytes, []) }
        // Unchanged rows (an acknowledgement that only moved the version, an overlay indexed
        // again) keep their stored list: equal sets encode to equal bytes.
        let encoded = Self.encodeRows(newRows)
        if encoded != raw { txn.put(listKey, encoded) }
    }

    /// The batch id through which every overlay of `user` is indexed (``batchIDUnknown``:
    /// none is).
    package func watermark(user: String, in txn: PersistenceTransaction) throws(DocError) -> BatchID {
        guard let raw = try txn.get(KeySchema.overlayIndexState(user)) else { return batchIDUnknown }
        var r = ByteReader(raw, record: Self.recordName)
        let value = try r.zigzag()
        try r.finish()
        guard let id = BatchID(exactly: value) else {
            throw DocError(.dataLoss, "corrupt stored overlay index watermark \(value) of user \"\(user)\"")
        }
        return id
    }

    /// Records that every overlay of `user` written by a batch up to `id` is indexed.
    func setWatermark(_ id: BatchID, user: String, in txn: PersistenceTransaction) {
        var w = ByteWriter(capacity: 10)
        w.zigzag(Int64(id))
        txn.put(KeySchema.overlayIndexState(user), w.bytes)
    }

    /// Whether a pending batch of `queue` is above its user's watermark (two seeks, no batch
    /// decoded).
    func hasUnindexedBatches(in queue: MutationQueue, in txn: PersistenceTransaction) throws(DocError) -> Bool {
        try queue.highestUnacknowledgedBatchID(in: txn) > watermark(user: queue.user, in: txn)
    }

    /// Lowers every user's watermark to "nothing indexed", so every overlay is indexed again
    /// (with the indexes declared now) and read directly until then.
    func resetWatermarks(in txn: PersistenceTransaction) throws(DocError) {
        for entry in txn.scan(prefix: KeySchema.Table.overlayIndexState.prefix) { txn.delete(entry.key) }
        if let failure = txn.failure { throw failure }
    }

    /// `rows` (each once) in key order, so equal sets of rows are stored as equal bytes.
    private static func encodeRows(_ rows: [[UInt8]]) -> [UInt8] {
        let sorted = rows.sorted { compareKeys($0, $1) < 0 }
        var w = ByteWriter(capacity: sorted.reduce(2) { $0 + $1.count + 2 })
        w.varint(UInt64(sorted.count))
        for row in sorted { w.lengthPrefixed(row) }
        return w.bytes
    }

    private static func decodeRows(_ raw: [UInt8]) throws(DocError) -> [[UInt8]] {
        var r = ByteReader(raw, record: recordName)
        let count = try r.varint()
        guard count <= UInt64(raw.count) else { throw r.fail("\(count) rows in \(raw.count) bytes") }
        var rows: [[UInt8]] = []
        rows.reserveCapacity(Int(count))
        for _ in 0..<count { rows.append(try r.lengthPrefixed()) }
        try r.finish()
        return rows
    }
}

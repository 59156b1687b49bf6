package import DocModel

/// The materialized local view of a document with pending writes for a user: the remote
/// document with every pending batch applied (a document, or a no-document for a pending
/// delete), and the largest batch id that contributed to it.
package struct Overlay: Sendable, Hashable {
    /// The document.
    package var key: DocumentKey
    /// The largest id of the batches applied.
    package var largestBatchID: BatchID
    /// The local view: a ``Document`` or, for a pending delete, a ``NoDocument``.
    package var document: MaybeDocument

    /// Creates an overlay.
    package init(key: DocumentKey, largestBatchID: BatchID, document: MaybeDocument) {
        self.key = key
        self.largestBatchID = largestBatchID
        self.document = document
    }
}

/// Overlays per user, stored under (user, collection path, document id) so the overlays of a
/// collection are one prefix scan.
package final class DocumentOverlayCache {
    /// Creates the cache (the store owns one).
    init() {}

    /// The record name in decoding errors.
    static let recordName = "overlay"

    /// The overlay of `key` for `user`, or `nil`.
    package func overlay(for key: DocumentKey, user: String, in txn: PersistenceTransaction) throws(DocError) -> Overlay? {
        guard let raw = try txn.get(KeySchema.overlay(user, key)) else { return nil }
        return try Self.decode(raw, key: key, user: user, in: txn)
    }

    /// Whether `key` has an overlay for `user` (not decoded).
    package func contains(_ key: DocumentKey, user: String, in txn: PersistenceTransaction) throws(DocError) -> Bool {
        try txn.get(KeySchema.overlay(user, key)) != nil
    }

    /// Whether any document directly in the collection `path` has an overlay for `user` (one
    /// seek).
    package func hasOverlays(inCollection path: ResourcePath, user: String, in txn: PersistenceTransaction) throws(DocError) -> Bool {
        let found = txn.containsKey(withPrefix: KeySchema.overlaysPrefix(user, collection: path))
        if let failure = txn.failure { throw failure }
        return found
    }

    /// The overlays of `keys` for `user` (keys without one are absent).
    package func overlays(for keys: some Collection<DocumentKey>, user: String, in txn: PersistenceTransaction) throws(DocError) -> [DocumentKey: Overlay] {
        var out: [DocumentKey: Overlay] = [:]
        for key in keys {
            if let o = try overlay(for: key, user: user, in: txn) { out[key] = o }
        }
        return out
    }

    /// The overlays of the documents directly in the collection `path` for `user`. With a
    /// `projection`, stored documents hold only those top-level fields (for choosing which
    /// overlays a query needs; read those again in full with ``overlay(for:user:in:)``).
    package func overlays(
        inCollection path: ResourcePath, user: String, projecting projection: FieldProjection? = nil, in txn: PersistenceTransaction
    ) throws(DocError) -> [DocumentKey: Overlay] {
        var out: [DocumentKey: Overlay] = [:]
        let prefix = KeySchema.overlaysPrefix(user, collection: path)
        for entry in txn.scan(prefix: prefix) {
            // The prefix names the user and the collection: only the id is left to read.
            let id = try KeySchema.decodeTrailingDocumentID(entry.key, prefixCount: prefix.count)
            let key = DocumentKey(unchecked: path, id: id)
            out[key] = try Self.decode(entry.value, key: key, user: user, projecting: projection, in: txn)
        }
        if let failure = txn.failure { throw failure }
        return out
    }

    /// The overlays of the documents of every collection with id `collectionID` for `user`
    /// (a scan of the user's overlays, which are few: one per document with pending writes).
    package func overlays(inCollectionGroup collectionID: String, user: String, in txn: PersistenceTransaction) throws(DocError) -> [DocumentKey: Overlay] {
        var out: [DocumentKey: Overlay] = [:]
        for entry in txn.scan(prefix: KeySchema.overlaysPrefix(user)) {
            let (_, key) = try KeySchema.decodeOverlay(entry.key)
            guard key.collectionGroup == collectionID else { continue }
            out[key] = try Self.decode(entry.value, key: key, user: user, in: txn)
        }
        if let failure = txn.failure { throw failure }
        return out
    }

    /// Every overlay of `user`.
    package func allOverlays(user: String, in txn: PersistenceTransaction) throws(DocError) -> [DocumentKey: Overlay] {
        var out: [DocumentKey: Overlay] = [:]
        for entry in txn.scan(prefix: KeySchema.overlaysPrefix(user)) {
            let (_, key) = try KeySchema.decodeOverlay(entry.key)
            out[key] = try Self.decode(entry.value, key: key, user: user, in: txn)
        }
        if let failure = txn.failure { throw failure }
        return out
    }

    /// Stores (replaces) the overlay of `overlay.key` for `user`.
    ///
    /// - Throws: `invalidArgument` when the overlay's document is for another key.
    package func save(_ overlay: Overlay, user: String, in txn: PersistenceTransaction) throws(DocError) {
        guard overlay.document.key == overlay.key else {
            throw DocError(.invalidArgument, "the overlay of \(overlay.key) holds a document for \(overlay.document.key)")
        }
        txn.put(KeySchema.overlay(user, overlay.key),
                DocumentRecord.encode(overlay.document, extra: Int64(overlay.largestBatchID)))
    }

    /// Stores (replaces) the overlay of `key` for `user` as a reference to `batch`: the local
    /// view is what `batch` makes of no document. For a batch of one write that replaces the
    /// document: the batch holds the data, the overlay does not copy it. The overlay must be
    /// rewritten or removed when the batch leaves the queue (``OverlayMaintenance`` does, as
    /// the batch is then the overlay's largest).
    ///
    /// - Throws: `invalidArgument` when the batch is not one write to `key` that replaces it.
    package func saveReference(to batch: MutationBatch, for key: DocumentKey, user: String, in txn: PersistenceTransaction) throws(DocError) {
        guard batch.mutations.count == 1, batch.baseMutations.isEmpty, batch.mutations[0].key == key,
              batch.mutations[0].replacesDocument
        else {
            throw DocError(.invalidArgument, "the overlay of \(key) cannot refer to batch \(batch.batchID): it is not one set of it")
        }
        txn.put(KeySchema.overlay(user, key), DocumentRecord.encodeBatchReference(Int64(batch.batchID)))
    }

    /// Removes the overlay of `key` for `user` (nothing happens when there is none).
    package func remove(_ key: DocumentKey, user: String, in txn: PersistenceTransaction) throws(DocError) {
        txn.delete(KeySchema.overlay(user, key))
    }

    /// The number of overlays of `user`.
    package func count(user: String, in txn: PersistenceTransaction) throws(DocError) -> Int {
        try txn.countKeys(withPrefix: KeySchema.overlaysPrefix(user))
    }

    private static func decode(
        _ raw: [UInt8], key: DocumentKey, user: String, projecting projection: FieldProjection? = nil, in txn: PersistenceTransaction
    ) throws(DocError) -> Overlay {
        let (stored, extra) = try DocumentRecord.decodeOverlay(raw, record: recordName, projecting: projection)
        guard let id = BatchID(exactly: extra) else { throw DocError(.dataLoss, "corrupt stored overlay of \(key): batch id \(extra)") }
        let document: MaybeDocument
        if let stored {
            document = stored
        } else {
            // A batch reference: the batch's one write made the local view from nothing.
            guard let batch = try MutationQueue.batch(id, user: user, in: txn) else {
                throw DocError(.dataLoss, "corrupt store: the overlay of \(key) refers to batch \(id), which is not in the queue")
            }
            guard let view = batch.applyToLocalView(nil, for: key) else {
                throw DocError(.dataLoss, "corrupt store: the overlay of \(key) refers to batch \(id), which does not write it")
            }
            document = view
        }
        guard document.key == key else {
            throw DocError(.dataLoss, "corrupt stored overlay: the row of \(key) holds a document for \(document.key)")
        }
        return Overlay(key: key, largestBatchID: id, document: document)
    }
}

package import DocModel

/// The global facts of the target cache, kept in one row.
package struct TargetMetadata: Sendable, Hashable {
    /// The highest target id ever added (0 when none): new query targets take the next even
    /// id above it.
    package var highestTargetID: TargetID
    /// The highest listen sequence number used (the LRU clock survives restarts through it).
    package var highestListenSequenceNumber: ListenSequenceNumber
    /// The snapshot version of the last consistent remote event.
    package var lastRemoteSnapshotVersion: SnapshotVersion
    /// The number of targets in the cache.
    package var targetCount: Int

    /// Creates metadata; the defaults describe an empty cache.
    package init(
        highestTargetID: TargetID = 0, highestListenSequenceNumber: ListenSequenceNumber = 0,
        lastRemoteSnapshotVersion: SnapshotVersion = .none, targetCount: Int = 0
    ) {
        self.highestTargetID = highestTargetID
        self.highestListenSequenceNumber = highestListenSequenceNumber
        self.lastRemoteSnapshotVersion = lastRemoteSnapshotVersion
        self.targetCount = targetCount
    }
}

/// The targets the client listens to (or listened to): their ``TargetData`` by id, an index
/// from canonical id to target id, the documents matching each target (stored both ways:
/// target → document and document → target) and the target metadata.
///
/// Adding or removing matching keys stamps the documents' LRU sentinels with the
/// transaction's sequence number (the document was used).
package final class TargetCache {
    /// The store state (the LRU clock).
    let state: PersistenceState

    /// Creates the cache (the store owns one).
    init(state: PersistenceState) {
        self.state = state
    }

    /// The format byte of the metadata row.
    static let metadataFormat: UInt8 = 1

    // MARK: Targets

    /// Adds a target: its data, its canonical-id index row; updates the metadata (count,
    /// highest target id, highest sequence number). Adding an id that is already stored
    /// replaces it (as ``update(_:in:)``).
    package func add(_ data: TargetData, in txn: PersistenceTransaction) throws(DocError) {
        let existing = try targetData(forID: data.targetID, in: txn)
        try write(data, replacing: existing, in: txn)
        var m = txn.targetMetadata
        if existing == nil { m.targetCount += 1 }
        m.highestTargetID = max(m.highestTargetID, data.targetID)
        m.highestListenSequenceNumber = max(m.highestListenSequenceNumber, data.sequenceNumber)
        txn.targetMetadata = m
        state.lastSequenceNumber = max(state.lastSequenceNumber, data.sequenceNumber)
    }

    /// Replaces the stored data of a target (resume token, snapshot version, sequence
    /// number…); updates the highest sequence number.
    ///
    /// - Throws: `notFound` when no target has this id.
    package func update(_ data: TargetData, in txn: PersistenceTransaction) throws(DocError) {
        guard let existing = try targetData(forID: data.targetID, in: txn) else {
            throw DocError(.notFound, "cannot update target \(data.targetID): it is not in the target cache")
        }
        try write(data, replacing: existing, in: txn)
        var m = txn.targetMetadata
        m.highestTargetID = max(m.highestTargetID, data.targetID)
        m.highestListenSequenceNumber = max(m.highestListenSequenceNumber, data.sequenceNumber)
        txn.targetMetadata = m
        state.lastSequenceNumber = max(state.lastSequenceNumber, data.sequenceNumber)
    }

    private func write(_ data: TargetData, replacing existing: TargetData?, in txn: PersistenceTransaction) throws(DocError) {
        let canonical = data.target.canonicalID
        txn.put(KeySchema.target(data.targetID), TargetCoding.encode(data))
        // The canonical-id row of an updated target is already there.
        if let existing, existing.target.canonicalID == canonical { return }
        if let existing {
            txn.delete(KeySchema.canonicalID(existing.target.canonicalID, existing.targetID))
        }
        txn.put(KeySchema.canonicalID(canonical, data.targetID), [])
    }

    /// Removes a target: its data, its canonical-id row and its matching-key rows (the
    /// documents' sentinels are stamped: they were just used). Removing a missing target
    /// does nothing.
    package func remove(_ data: TargetData, in txn: PersistenceTransaction) throws(DocError) {
        try removeTarget(id: data.targetID, stampingDocuments: true, in: txn)
    }

    /// Removes target `id` and its rows; returns whether it existed.
    @discardableResult
    func removeTarget(id: TargetID, stampingDocuments: Bool, in txn: PersistenceTransaction) throws(DocError) -> Bool {
        guard let existing = try targetData(forID: id, in: txn) else { return false }
        txn.delete(KeySchema.target(id))
        txn.delete(KeySchema.canonicalID(existing.target.canonicalID, id))
        try removeAllMatchingKeys(for: id, stampingDocuments: stampingDocuments, in: txn)
        var m = txn.targetMetadata
        m.targetCount = max(0, m.targetCount - 1)
        txn.targetMetadata = m
        return true
    }

    /// The stored data of `target` (looked up by canonical id, then compared in full), or
    /// `nil`.
    package func targetData(for target: Target, in txn: PersistenceTransaction) throws(DocError) -> TargetData? {
        let canonical = target.canonicalID
        let prefix = KeySchema.canonicalIDPrefix(canonical)
        var ids: [TargetID] = []
        for entry in txn.scan(prefix: prefix) {
            ids.append(try KeySchema.decodeCanonicalID(entry.key))
        }
        for id in ids {
            if let data = try targetData(forID: id, in: txn), data.target == target { return data }
        }
        return nil
    }

    /// The stored data of target `id`, or `nil`.
    package func targetData(forID id: TargetID, in txn: PersistenceTransaction) throws(DocError) -> TargetData? {
        guard let raw = try txn.get(KeySchema.target(id)) else { return nil }
        return try TargetCoding.decodeTargetData(raw)
    }

    /// Every stored target, in target-id order.
    package func allTargets(in txn: PersistenceTransaction) throws(DocError) -> [TargetData] {
        var out: [TargetData] = []
        for entry in txn.scan(prefix: KeySchema.Table.targets.prefix) {
            out.append(try TargetCoding.decodeTargetData(entry.value))
        }
        return out
    }

    // MARK: Matching keys

    /// Records that `keys` match target `id` (both index directions); stamps their sentinels.
    package func addMatchingKeys(_ keys: some Collection<DocumentKey>, to id: TargetID, in txn: PersistenceTransaction) throws(DocError) {
        guard !keys.isEmpty else { return }
        for key in keys {
            txn.put(KeySchema.targetDocument(id, key), [])
            txn.put(KeySchema.documentTarget(key, id), [])
            txn.stampSentinel(key)
        }
    }

    /// Records that `keys` no longer match target `id`; stamps their sentinels.
    package func removeMatchingKeys(_ keys: some Collection<DocumentKey>, from id: TargetID, in txn: PersistenceTransaction) throws(DocError) {
        guard !keys.isEmpty else { return }
        for key in keys {
            txn.delete(KeySchema.targetDocument(id, key))
            txn.delete(KeySchema.documentTarget(key, id))
            txn.stampSentinel(key)
        }
    }

    /// Removes every matching key of target `id`; stamps their sentinels.
    package func removeAllMatchingKeys(for id: TargetID, in txn: PersistenceTransaction) throws(DocError) {
        try removeAllMatchingKeys(for: id, stampingDocuments: true, in: txn)
    }

    private func removeAllMatchingKeys(for id: TargetID, stampingDocuments: Bool, in txn: PersistenceTransaction) throws(DocError) {
        let keys = try matchingKeyList(for: id, in: txn)
        for key in keys {
            txn.delete(KeySchema.targetDocument(id, key))
            txn.delete(KeySchema.documentTarget(key, id))
            if stampingDocuments { txn.stampSentinel(key) }
        }
    }

    /// The documents matching target `id`.
    package func matchingKeys(for id: TargetID, in txn: PersistenceTransaction) throws(DocError) -> Set<DocumentKey> {
        Set(try matchingKeyList(for: id, in: txn))
    }

    /// The documents matching target `id`, in key order.
    package func matchingKeyList(for id: TargetID, in txn: PersistenceTransaction) throws(DocError) -> [DocumentKey] {
        var out: [DocumentKey] = []
        for entry in txn.scan(prefix: KeySchema.targetDocumentsPrefix(id)) {
            out.append(try KeySchema.decodeTargetDocument(entry.key).1)
        }
        return out
    }

    /// Whether `key` matches any target (such a document is not garbage).
    package func containsKey(_ key: DocumentKey, in txn: PersistenceTransaction) throws(DocError) -> Bool {
        txn.containsKey(withPrefix: KeySchema.documentTargetsPrefix(key))
    }

    // MARK: Metadata

    /// The target metadata as the transaction sees it.
    package func metadata(in txn: PersistenceTransaction) throws(DocError) -> TargetMetadata {
        txn.targetMetadata
    }

    /// Records the snapshot version of the last consistent remote event.
    package func setLastRemoteSnapshotVersion(_ version: SnapshotVersion, in txn: PersistenceTransaction) throws(DocError) {
        var m = txn.targetMetadata
        m.lastRemoteSnapshotVersion = version
        txn.targetMetadata = m
    }

    /// The number of targets (from the metadata).
    package func count(in txn: PersistenceTransaction) throws(DocError) -> Int {
        txn.targetMetadata.targetCount
    }

    /// The stored form of the metadata row.
    static func encode(_ m: TargetMetadata) -> [UInt8] {
        var w = ByteWriter(format: metadataFormat, capacity: 24)
        w.zigzag(Int64(m.highestTargetID))
        w.zigzag(m.highestListenSequenceNumber)
        w.zigzag(m.lastRemoteSnapshotVersion.microseconds)
        w.varint(UInt64(m.targetCount))
        return w.bytes
    }

    /// Decodes the metadata row; `dataLoss` on corrupt input.
    static func decodeMetadata(_ bytes: [UInt8]) throws(DocError) -> TargetMetadata {
        var r = ByteReader(bytes, record: "target metadata")
        let f = try r.byte()
        guard f == metadataFormat else { throw r.fail("unsupported format \(f)", at: 0) }
        let highestTarget = try r.int32()
        let highestSequence = try r.zigzag()
        let version = SnapshotVersion(microseconds: try r.zigzag())
        let countAt = r.offset
        let count = try r.varint()
        guard count <= UInt64(Int.max) else { throw r.fail("target count out of range", at: countAt) }
        try r.finish()
        return TargetMetadata(
            highestTargetID: highestTarget, highestListenSequenceNumber: highestSequence,
            lastRemoteSnapshotVersion: version, targetCount: Int(count))
    }
}

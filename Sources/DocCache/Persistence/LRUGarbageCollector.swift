package import DocModel
internal import LevelDB

/// What a garbage collection run did.
package struct GarbageCollectionResult: Sendable, Hashable {
    /// Whether it ran (it does not when the cache is unlimited or below its size limit).
    package var didRun: Bool
    /// How many of the least recently used sequence numbers it collected up to.
    package var sequenceNumbersCollected: Int
    /// The targets removed.
    package var targetsRemoved: Int
    /// The documents removed from the remote document cache (orphaned sentinels of documents
    /// that were not cached are removed too, but not counted).
    package var documentsRemoved: Int

    /// Creates a result.
    package init(didRun: Bool, sequenceNumbersCollected: Int = 0, targetsRemoved: Int = 0, documentsRemoved: Int = 0) {
        self.didRun = didRun
        self.sequenceNumbersCollected = sequenceNumbersCollected
        self.targetsRemoved = targetsRemoved
        self.documentsRemoved = documentsRemoved
    }

    /// A run that did not happen.
    package static let didNotRun = GarbageCollectionResult(didRun: false)
}

/// Least-recently-used garbage collection of the cache, in the Firestore model.
///
/// Every cached document has a sentinel row holding the listen sequence number at which it
/// was last used: stamped when the document is stored, added to or removed from a target,
/// and when one of its pending batches is removed. Documents shown in views are not stamped:
/// the local store passes them as `pinnedKeys` to every run. Targets carry their own sequence
/// number.
///
/// A run (``collect(cacheSizeLimit:activeTargetIDs:pinnedKeys:in:)``) happens when the store
/// is larger than the limit. It takes the least recently used ``percentileToCollect`` percent
/// (at most ``maximumSequenceNumbersToCollect``) of the sequence numbers of all targets and
/// orphaned documents, then removes every inactive target at or below that sequence number,
/// then every orphaned document at or below it. A document is orphaned when it is in no
/// target, has no pending batch and no overlay for any user, and is not pinned by the caller.
/// Documents with pending writes or in active targets (or in any target not removed) are
/// never collected.
package final class LRUGarbageCollector {
    /// The smallest cache size limit accepted: 1 MiB.
    package static let minimumCacheSizeBytes: Int64 = 1024 * 1024

    /// The percentage of sequence numbers collected per run (Firestore: 10).
    package var percentileToCollect: Int = 10
    /// The most sequence numbers collected per run (Firestore: 1,000).
    package var maximumSequenceNumbersToCollect: Int = 1_000

    /// The caches it collects from.
    let remoteDocuments: RemoteDocumentCache
    let targets: TargetCache

    /// Creates the collector (the store owns one).
    init(remoteDocuments: RemoteDocumentCache, targets: TargetCache) {
        self.remoteDocuments = remoteDocuments
        self.targets = targets
    }

    /// Checks a cache size limit: ``Persistence/unlimited`` or at least
    /// ``minimumCacheSizeBytes``. The one rule for every size limit of a store (the document
    /// cache's and the attachment cache's; `StoreSettings` checks both here).
    ///
    /// - Parameter name: the setting, for the message.
    /// - Throws: `invalidArgument` otherwise.
    package static func validate(cacheSizeLimit: Int64, name: String = "the cache size limit") throws(DocError) {
        guard cacheSizeLimit == Persistence.unlimited || cacheSizeLimit >= minimumCacheSizeBytes else {
            throw DocError(
                .invalidArgument,
                "\(name) must be at least \(minimumCacheSizeBytes) bytes (1 MiB) or unlimited (-1), got \(cacheSizeLimit)")
        }
    }

    // MARK: Recording use

    /// Stamps the sentinels of `keys` with the transaction's sequence number: the documents
    /// become the most recently used. (The engine does not call it: views pin their documents
    /// through `pinnedKeys` instead.)
    package func recordUse(_ keys: some Collection<DocumentKey>, in txn: PersistenceTransaction) throws(DocError) {
        for key in keys { txn.stampSentinel(key) }
    }

    /// The sequence number at which `key` was last used, or `nil` when it has no sentinel.
    package func sequenceNumber(for key: DocumentKey, in txn: PersistenceTransaction) throws(DocError) -> ListenSequenceNumber? {
        guard let raw = try txn.get(KeySchema.sentinel(key)) else { return nil }
        return try Self.decodeSequenceNumber(raw)
    }

    // MARK: Collecting

    /// Collects garbage if the store is larger than `cacheSizeLimit` bytes.
    ///
    /// - Parameters:
    ///   - cacheSizeLimit: the limit in bytes, or ``Persistence/unlimited`` (no collection).
    ///   - activeTargetIDs: targets being listened to: never removed.
    ///   - pinnedKeys: documents the caller still uses (e.g. limbo documents): never removed.
    /// - Throws: `invalidArgument` for a limit below ``minimumCacheSizeBytes``.
    package func collect(
        cacheSizeLimit: Int64, activeTargetIDs: Set<TargetID>, pinnedKeys: Set<DocumentKey> = [],
        in txn: PersistenceTransaction
    ) throws(DocError) -> GarbageCollectionResult {
        try Self.validate(cacheSizeLimit: cacheSizeLimit)
        guard cacheSizeLimit != Persistence.unlimited else { return .didNotRun }
        // LevelDB measures only flushed tables: flush the memtable first (a compaction of an
        // empty key range flushes it and compacts nothing else), so recent writes count.
        let empty: [UInt8] = [0x00]
        try withLevelDB(txn.directory, "flush before measuring") { () throws(LevelDBError) in
            try txn.database.compact(from: empty, to: empty)
        }
        let size = try Persistence.approximateSizes(of: txn.database, directory: txn.directory, faults: txn.state.faults)
            .values.reduce(0, +)
        guard size >= cacheSizeLimit else { return .didNotRun }
        return try runGarbageCollection(activeTargetIDs: activeTargetIDs, pinnedKeys: pinnedKeys, in: txn)
    }

    /// Runs one collection regardless of the cache size (see the type's description).
    package func runGarbageCollection(
        activeTargetIDs: Set<TargetID>, pinnedKeys: Set<DocumentKey> = [], in txn: PersistenceTransaction
    ) throws(DocError) -> GarbageCollectionResult {
        let allTargets = try targets.allTargets(in: txn)
        let orphans = try orphanedDocuments(pinnedKeys: pinnedKeys, in: txn)

        let total = allTargets.count + orphans.count
        let percentile = max(0, min(100, percentileToCollect))
        let count = min(total * percentile / 100, max(0, maximumSequenceNumbersToCollect))
        guard count > 0 else { return GarbageCollectionResult(didRun: true) }
        var numbers = allTargets.map(\.sequenceNumber) + orphans.map(\.1)
        numbers.sort()
        let upperBound = numbers[count - 1]

        var targetsRemoved = 0
        for data in allTargets where data.sequenceNumber <= upperBound && !activeTargetIDs.contains(data.targetID) {
            if try targets.removeTarget(id: data.targetID, stampingDocuments: false, in: txn) { targetsRemoved += 1 }
        }

        // Removing targets may have orphaned more documents: enumerate again.
        var documentsRemoved = 0
        for (key, sequence) in try orphanedDocuments(pinnedKeys: pinnedKeys, in: txn) where sequence <= upperBound {
            if try remoteDocuments.remove(key, in: txn) { documentsRemoved += 1 }
            txn.delete(KeySchema.sentinel(key))
        }
        return GarbageCollectionResult(
            didRun: true, sequenceNumbersCollected: count, targetsRemoved: targetsRemoved, documentsRemoved: documentsRemoved)
    }

    /// The documents with a sentinel that are in no target, have no pending batch or overlay
    /// for any user, and are not in `pinnedKeys`, with their sequence numbers, in key order.
    ///
    /// One pass over the sentinels merged with one pass over the document → target rows
    /// (both are ordered by document path), plus the documents with pending writes or
    /// overlays (few: one per pending write), so it costs O(documents), not a seek each.
    func orphanedDocuments(
        pinnedKeys: Set<DocumentKey>, in txn: PersistenceTransaction
    ) throws(DocError) -> [(DocumentKey, ListenSequenceNumber)] {
        let pinned = try Self.documentsWithPendingWrites(in: txn).union(pinnedKeys)
        var targetRows = txn.scan(prefix: KeySchema.Table.documentTargets.prefix).makeIterator()
        var targetRow = targetRows.next()
        var out: [(DocumentKey, ListenSequenceNumber)] = []
        for entry in txn.scan(prefix: KeySchema.Table.lruSentinels.prefix) {
            // After the tag byte, a sentinel key is the document's path encoding, and a
            // document → target key starts with it (path encodings are prefix-free).
            let path = entry.key[1...]
            while let row = targetRow, compareKeys(row.key[1...], path[...]) < 0 {
                targetRow = targetRows.next()
            }
            if let row = targetRow, row.key[1...].starts(with: path) { continue }
            let key = try KeySchema.decodeSentinel(entry.key)
            if pinned.contains(key) { continue }
            out.append((key, try Self.decodeSequenceNumber(entry.value)))
        }
        if let failure = txn.failure { throw failure }
        return out
    }

    /// Every document with a pending batch or an overlay, for any user.
    static func documentsWithPendingWrites(in txn: PersistenceTransaction) throws(DocError) -> Set<DocumentKey> {
        var keys = Set<DocumentKey>()
        for entry in txn.scan(prefix: KeySchema.Table.documentMutations.prefix) {
            let (path, _) = try KeySchema.decodeDocumentMutation(entry.key)
            keys.insert(DocumentKey(unchecked: path))
        }
        for entry in txn.scan(prefix: KeySchema.Table.overlays.prefix) {
            keys.insert(try KeySchema.decodeOverlay(entry.key).1)
        }
        if let failure = txn.failure { throw failure }
        return keys
    }

    // MARK: Sentinel values

    /// The value of a sentinel row: the sequence number as a zigzag varint.
    static func encodeSequenceNumber(_ n: ListenSequenceNumber) -> [UInt8] {
        var w = ByteWriter(capacity: 10)
        w.zigzag(n)
        return w.bytes
    }

    /// Decodes a sentinel row value; `dataLoss` on corrupt input.
    static func decodeSequenceNumber(_ bytes: [UInt8]) throws(DocError) -> ListenSequenceNumber {
        var r = ByteReader(bytes, record: "LRU sentinel")
        let n = try r.zigzag()
        try r.finish()
        return n
    }
}

extension Persistence {
    /// Collects garbage in its own transaction if the store is larger than `cacheSizeLimit`
    /// bytes (see ``LRUGarbageCollector/collect(cacheSizeLimit:activeTargetIDs:pinnedKeys:in:)``).
    package func collectGarbage(
        cacheSizeLimit: Int64, activeTargetIDs: Set<TargetID>, pinnedKeys: Set<DocumentKey> = []
    ) throws(DocError) -> GarbageCollectionResult {
        try run("Collect garbage") { txn throws(DocError) in
            try lru.collect(cacheSizeLimit: cacheSizeLimit, activeTargetIDs: activeTargetIDs, pinnedKeys: pinnedKeys, in: txn)
        }
    }

    /// The approximate size of each key space of `database` (table name → bytes).
    static func approximateSizes(
        of database: Database, directory: String, faults: StorageFaults? = nil
    ) throws(DocError) -> [String: Int64] {
        let tables = KeySchema.Table.allCases
        let ranges = tables.map { KeyRange.prefix($0.prefix) }
        let sizes = try withLevelDB(directory, "measure") { () throws(LevelDBError) in
            try faults?.check(.read, "Measure size")
            return try database.approximateSizes(of: ranges)
        }
        var out: [String: Int64] = [:]
        for (table, size) in zip(tables, sizes) { out[table.name] = Int64(clamping: size) }
        return out
    }
}

package import DocModel

/// The local store: the only way the sync engine reads and writes the cache.
///
/// It keeps three things consistent inside single persistence transactions: the server's
/// view of documents (remote documents and target membership), the user's queue of pending
/// mutation batches, and the overlays (the local view: remote documents with every pending
/// batch applied). Every user action and every remote event is one transaction, so one
/// LevelDB write batch: after a crash the three never disagree.
///
/// Not thread-safe: owned by the client's serial executor.
package final class LocalStore {
    package let persistence: Persistence
    package private(set) var user: String {
        didSet { queue = persistence.mutationQueue(for: user) }
    }
    /// The current user's mutation queue.
    private(set) var queue: MutationQueue
    private let queryEngine: QueryEngine
    // Internal, not private: LocalStore+Bundles.swift allocates targets too.
    var activeTargets: [TargetID: TargetData] = [:]
    var activeTargetIDs: [Target: TargetID] = [:]
    /// Documents shown by each active view: pinned against garbage collection even when the
    /// server has not (yet) confirmed them as members of the target.
    private var localViewReferences: [TargetID: Set<DocumentKey>] = [:]
    var targetIDGenerator: TargetIDGenerator
    package private(set) var lastRemoteSnapshotVersion: SnapshotVersion
    private let clock: @Sendable () -> Timestamp

    /// A target's resume token is persisted at least this often even when nothing else changed.
    static let resumeTokenMaxAgeMicroseconds: Int64 = 5 * 60 * 1_000_000

    package init(persistence: Persistence, user: String, clock: @escaping @Sendable () -> Timestamp) throws(DocError) {
        self.persistence = persistence
        self.user = user
        self.queue = persistence.mutationQueue(for: user)
        self.clock = clock
        self.queryEngine = QueryEngine(persistence: persistence)
        let metadata = try persistence.run("Start local store") { txn throws(DocError) in
            try persistence.targets.metadata(in: txn)
        }
        self.targetIDGenerator = .forQueryTargets(after: metadata.highestTargetID)
        self.lastRemoteSnapshotVersion = metadata.lastRemoteSnapshotVersion
    }

    var overlayMaintenance: OverlayMaintenance { OverlayMaintenance(persistence: persistence, user: user) }

    // MARK: - Users

    /// Switches to another user's mutation queue and returns the new local view of every
    /// document either user had pending writes for.
    package func handleUserChange(_ newUser: String) throws(DocError) -> [DocumentKey: MaybeDocument?] {
        try persistence.run("Handle user change") { txn throws(DocError) in
            let oldKeys = try queue.allBatches(in: txn).reduce(into: Set<DocumentKey>()) { $0.formUnion($1.keys) }
            user = newUser
            let newKeys = try queue.allBatches(in: txn).reduce(into: Set<DocumentKey>()) { $0.formUnion($1.keys) }
            return try localViews(oldKeys.union(newKeys), in: txn)
        }
    }

    // MARK: - Writes

    /// Validates and durably queues a batch of mutations, updating the local view of every
    /// document it touches, all in one transaction.
    ///
    /// - Parameter failedWrite: a failed write this batch retries: its record is removed in the
    ///   same transaction (`notFound` when there is none), so the write is never both queued
    ///   and kept as failed, nor neither.
    /// - Parameter prevalidated: every mutation was checked already (a ``WriteBatch`` checks
    ///   each write as it is added): the others are not walked again.
    package func writeLocally(
        _ mutations: [Mutation], retrying failedWrite: BatchID? = nil, prevalidated: Bool = false
    ) throws(DocError) -> LocalWriteResult {
        try DocumentLimits.validateBatchSize(mutations.count)
        // The first mutation's data is checked and encoded in one walk; the batch record
        // stores that encoding.
        let firstEncoded = try mutations[0].validatedDataEncoding()
        if !prevalidated {
            for mutation in mutations.dropFirst() { try mutation.validate() }
        }
        let localWriteTime = clock()
        return try persistence.run("Write locally") { txn throws(DocError) in
            // The documents written, each once, in order of their first write. A batch whose
            // first write to a key replaces the document (a set without transforms) does not
            // depend on the key's previous local view: it is not read. (One write, the usual
            // case, needs no set of keys.)
            var keys: [DocumentKey] = []
            var toRead: [DocumentKey] = []
            if mutations.count == 1 {
                keys = [mutations[0].key]
                if !mutations[0].replacesDocument { toRead = keys }
            } else {
                var seen = Set<DocumentKey>()
                for mutation in mutations where seen.insert(mutation.key).inserted {
                    keys.append(mutation.key)
                    if !mutation.replacesDocument { toRead.append(mutation.key) }
                }
            }
            if let failedWrite { try failedWriteStore.remove(failedWrite, in: txn) }
            let before = toRead.isEmpty ? [:] : try localViews(toRead, in: txn)
            let batch = try queue.addBatch(
                localWriteTime: localWriteTime, baseMutations: [], mutations: mutations,
                firstEncodedData: firstEncoded, in: txn)
            // A lone set without transforms makes the local view from nothing, out of data the
            // batch holds: its overlay refers to the batch instead of storing the data again.
            let overlayRefersToBatch = mutations.count == 1 && toRead.isEmpty
            var changes: [(key: DocumentKey, value: MaybeDocument?)] = []
            changes.reserveCapacity(keys.count)
            for key in keys {
                let after = batch.applyToLocalView(before.isEmpty ? nil : before[key] ?? nil, for: key)
                if overlayRefersToBatch {
                    try persistence.overlays.saveReference(to: batch, for: key, user: user, in: txn)
                } else if let after {
                    try persistence.overlays.save(Overlay(key: key, largestBatchID: batch.batchID, document: after), user: user, in: txn)
                }
                changes.append((key, after))
            }
            return LocalWriteResult(batchID: batch.batchID, localWriteTime: localWriteTime, changes: changes)
        }
    }

    /// The server committed the oldest pending batches, oldest first (one `writeResult`, or one
    /// frame of results): applies their results to the remote documents, drops them from the
    /// queue and recomputes the local views, in one transaction. Returns the new local views
    /// of all their documents.
    package func acknowledgeBatches(_ results: [MutationBatchResult]) throws(DocError) -> [DocumentKey: MaybeDocument?] {
        try persistence.run("Acknowledge batch") { txn throws(DocError) in
            var keys = Set<DocumentKey>()
            for result in results {
                try acknowledge(result, in: txn)
                keys.formUnion(result.batch.keys)
            }
            return try localViews(keys, in: txn)
        }
    }

    private func acknowledge(_ result: MutationBatchResult, in txn: PersistenceTransaction) throws(DocError) {
            let batch = result.batch
            try queue.remove(batch, in: txn)
            if let token = result.streamToken { try queue.setLastStreamToken(token, in: txn) }
            let keys = batch.keys
            let remote = try persistence.remoteDocuments.entries(for: keys, in: txn)
            for key in keys {
                let ackVersion = result.docVersions[key] ?? result.commitVersion
                let existing = remote[key]?.document
                var base = existing
                if (existing?.version ?? .none) < ackVersion,
                   let updated = batch.applyToRemoteDocument(existing, for: key, result: result) {
                    persistence.remoteDocuments.add(updated, readTime: result.commitVersion, replacing: remote[key], in: txn)
                    base = updated
                }
                // The later batches of `key` went on from the local view this batch gave; they
                // now go on from the remote document with the server's result. The server
                // answers batches in queue order, so no older pending batch writes `key` (the
                // check that a revert needs, `rebase(_:removing:from:to:in:)`, is skipped).
                try overlayMaintenance.rebase(
                    key, from: batch.applyToLocalView(existing, for: key), to: base, batchesAfter: batch.batchID, in: txn)
            }
    }

    /// The server rejected a batch (or the user reverted it): drop it and recompute the local
    /// view of its documents. Returns the removed batch and the new local views.
    ///
    /// - Parameter rejection: the server's rejection (why, after how many sends): the
    ///   batch is kept as a failed write (``FailedWriteStore``) in the same transaction, with
    ///   the cached server version of each of its documents. `nil` (a revert): nothing is kept.
    package func rejectBatch(
        _ batchID: BatchID, rejection: (error: DocError, attempts: Int)? = nil
    ) throws(DocError) -> (batch: MutationBatch, changes: [DocumentKey: MaybeDocument?]) {
        try persistence.run("Reject batch") { txn throws(DocError) in
            guard let batch = try queue.batch(batchID, in: txn) else {
                throw DocError(.notFound, "no pending write batch \(batchID)")
            }
            try queue.remove(batch, in: txn)
            let keys = batch.keys
            let remote = try persistence.remoteDocuments.getAll(keys, in: txn)
            if let rejection {
                failedWriteStore.add(FailedWriteRecord(
                    batch: batch, rejectedAt: clock(), error: rejection.error, attempts: rejection.attempts,
                    serverDocuments: batch.orderedKeys.map { ($0, remote[$0]) }), in: txn)
            }
            for key in keys {
                // The later batches of `key` went on from the local view this batch gave; they
                // now go on from the remote document.
                try overlayMaintenance.rebase(
                    key, removing: batchID, from: batch.applyToLocalView(remote[key], for: key), to: remote[key], in: txn)
            }
            return (batch, try localViews(keys, in: txn))
        }
    }

    /// The current user's failed writes (never sent again; see ``FailedWriteStore``).
    private var failedWriteStore: FailedWriteStore { FailedWriteStore(user: user) }

    /// The current user's failed writes, oldest batch first, each with the server's version
    /// of its documents as this device knows it now (``refreshed(_:in:)``).
    package func failedWrites() throws(DocError) -> [FailedWriteRecord] {
        try persistence.run("Failed writes") { txn throws(DocError) in
            try failedWriteStore.all(in: txn).map { record throws(DocError) in try refreshed(record, in: txn) }
        }
    }

    /// `record` with the server's version of each document from the remote document cache as
    /// it is now (a listen or read since the rejection may have brought a newer version); the
    /// version kept at the rejection where the cache has none any more.
    private func refreshed(_ record: FailedWriteRecord, in txn: PersistenceTransaction) throws(DocError) -> FailedWriteRecord {
        let cached = try persistence.remoteDocuments.getAll(record.serverDocuments.map(\.key), in: txn)
        var record = record
        record.serverDocuments = record.serverDocuments.map { key, kept in (key, cached[key] ?? kept) }
        return record
    }

    /// One failed write (`notFound` when there is none), refreshed as in ``failedWrites()``
    /// unless `refreshed` is false (a retry needs only its mutations).
    package func failedWrite(_ id: BatchID, refreshed refresh: Bool = true) throws(DocError) -> FailedWriteRecord {
        let record = try persistence.run("Failed write") { txn throws(DocError) in
            try failedWriteStore.record(id, in: txn).map { record throws(DocError) in
                refresh ? try refreshed(record, in: txn) : record
            }
        }
        guard let record else { throw FailedWriteStore.notFound(id) }
        return record
    }

    /// Drops a failed write for good; `notFound` when there is none.
    package func discardFailedWrite(_ id: BatchID) throws(DocError) {
        try persistence.run("Discard failed write") { txn throws(DocError) in try failedWriteStore.remove(id, in: txn) }
    }

    // MARK: - Delivery of queued batches

    private var deliveryStore: BatchDeliveryStore { BatchDeliveryStore(user: user) }

    /// The delivery records of the current user's queued batches.
    /// Stores delivery records, in one write, for the batches still queued (a batch acknowledged,
    /// rejected or reverted meanwhile gets none).
    package func recordDeliveries(_ deliveries: [(BatchID, BatchDelivery)]) throws(DocError) {
        try persistence.run("Record batch deliveries") { txn throws(DocError) in
            for (id, delivery) in deliveries where try queue.contains(id, in: txn) {
                deliveryStore.put(delivery, for: id, in: txn)
            }
        }
    }

    /// When the server last acknowledged the last queued batch of the current user.
    package func setLastSyncedAt(_ time: Timestamp) throws(DocError) {
        try persistence.run("Write sync status") { txn throws(DocError) in deliveryStore.setLastSyncedAt(time, in: txn) }
    }

    // MARK: - Attachments

    /// Every attachment record of the store.
    /// What the client core keeps in memory from the moment the store opens, read in one
    /// transaction: the queued batches' delivery records, when the queue was last emptied by
    /// the server, how many batches are queued, and the attachment records.
    package func openState() throws(DocError) -> OpenState {
        try persistence.run("Read open state") { txn throws(DocError) in
            OpenState(
                deliveries: try deliveryStore.all(in: txn), lastSyncedAt: try deliveryStore.lastSyncedAt(in: txn),
                pendingBatchCount: try queue.count(in: txn), attachments: try AttachmentStore().all(in: txn),
                hasUnindexedOverlays: try persistence.overlayIndex.hasUnindexedBatches(in: queue, in: txn))
        }
    }

    /// See ``openState()``.
    package struct OpenState {
        package var deliveries: [BatchID: BatchDelivery]
        package var lastSyncedAt: Timestamp?
        package var pendingBatchCount: Int
        package var attachments: [AttachmentRecord]
        /// Whether a pending batch is above the overlay index's watermark (``OverlayIndex``).
        package var hasUnindexedOverlays: Bool
    }

    /// Stores an attachment record; `sync` makes it durable against a machine crash too (an
    /// added attachment is, before `add` returns).
    package func putAttachment(_ record: AttachmentRecord, sync: Bool = false) throws(DocError) {
        try persistence.run("Write attachment", sync: sync) { txn throws(DocError) in AttachmentStore().put(record, in: txn) }
    }

    package func removeAttachment(_ id: AttachmentID) throws(DocError) {
        try persistence.run("Remove attachment") { txn throws(DocError) in AttachmentStore().remove(id, in: txn) }
    }

    // MARK: - Queue

    /// The first `limit` batches with ids above `batchID`, in order, up to the first that
    /// `accept` refuses (one read).
    package func nextMutationBatches(
        after batchID: BatchID, limit: Int, while accept: (MutationBatch) -> Bool
    ) throws(DocError) -> [MutationBatch] {
        try persistence.run("Next mutation batches") { txn throws(DocError) in
            try queue.nextBatches(after: batchID, limit: limit, in: txn, while: accept)
        }
    }

    package func pendingBatches() throws(DocError) -> [MutationBatch] {
        try persistence.run("Pending batches") { txn throws(DocError) in try queue.allBatches(in: txn) }
    }

    /// The batches of the queued and the failed writes, in one read (failed writes as
    /// stored, without refreshing their server documents).
    package func unsyncedBatches() throws(DocError) -> [MutationBatch] {
        try persistence.run("Unsynced batches") { txn throws(DocError) in
            try queue.allBatches(in: txn) + failedWriteStore.all(in: txn).map(\.batch)
        }
    }

    package func pendingBatchCount() throws(DocError) -> Int {
        try persistence.run("Count pending batches") { txn throws(DocError) in try queue.count(in: txn) }
    }

    package func highestUnacknowledgedBatchID() throws(DocError) -> BatchID {
        try persistence.run("Highest unacknowledged batch") { txn throws(DocError) in
            try queue.highestUnacknowledgedBatchID(in: txn)
        }
    }

    package func lastStreamToken() throws(DocError) -> ResumeToken {
        try persistence.run("Read stream token") { txn throws(DocError) in try queue.lastStreamToken(in: txn) }
    }

    package func setLastStreamToken(_ token: ResumeToken) throws(DocError) {
        try persistence.run("Write stream token") { txn throws(DocError) in try queue.setLastStreamToken(token, in: txn) }
    }

    // MARK: - Remote events

    /// Stores the server's documents where they are newer than the cached ones (or equal
    /// while the cached one still has an acknowledged write the server has not sent back),
    /// and rebases every pending batch of a changed key on its new remote document. A
    /// `noDocument` of version `.none` (a rejected limbo resolution: access was lost) removes
    /// the cached document. Shared by remote events and bundles. Returns the changed keys.
    func applyDocumentUpdates(
        _ updates: [(key: DocumentKey, document: MaybeDocument, readTime: SnapshotVersion)], in txn: PersistenceTransaction
    ) throws(DocError) -> Set<DocumentKey> {
        // Kept equal to what is stored as the loop writes (a key may come twice).
        var existing = try persistence.remoteDocuments.entries(for: updates.map(\.key), in: txn)
        var changed = Set<DocumentKey>()
        for (key, document, readTime) in updates {
            let old = existing[key]?.document
            var new: MaybeDocument?
            if case .noDocument(let absent) = document, absent.version == .none {
                persistence.remoteDocuments.remove(key, replacing: existing[key], in: txn)
                existing[key] = nil
                new = nil
            } else if old == nil || document.version > old!.version
                        || (document.version == old!.version && old!.hasPendingWrites) {
                persistence.remoteDocuments.add(document, readTime: readTime, replacing: existing[key], in: txn)
                existing[key] = (document, readTime)
                new = document
            } else {
                continue
            }
            changed.insert(key)
            // Every pending batch of `key` now goes on from the new remote document.
            try overlayMaintenance.rebase(key, from: old, to: new, batchesAfter: nil, in: txn)
        }
        return changed
    }

    /// Applies a consistent snapshot from watch: target membership and resume tokens, new
    /// remote documents (only when newer than what is cached), and the global snapshot
    /// version. Returns the new local view of every changed document.
    package func applyRemoteEvent(_ event: RemoteEvent) throws(DocError) -> [DocumentKey: MaybeDocument?] {
        let changes = try persistence.run("Apply remote event") { txn throws(DocError) in
            let sequence = txn.sequenceNumber
            for (targetID, change) in event.targetChanges {
                guard let old = activeTargets[targetID] else { continue }
                try persistence.targets.removeMatchingKeys(change.removedDocuments, from: targetID, in: txn)
                try persistence.targets.addMatchingKeys(change.addedDocuments, to: targetID, in: txn)
                var updated = old.withSequenceNumber(sequence)
                if event.targetMismatches[targetID] != nil {
                    updated.resumeToken = []
                    updated.snapshotVersion = .none
                    updated.lastLimboFreeSnapshotVersion = .none
                } else if !change.resumeToken.isEmpty {
                    updated = updated.withResumeToken(change.resumeToken, snapshotVersion: event.snapshotVersion)
                }
                activeTargets[targetID] = updated
                if Self.shouldPersist(updated, old: old, change: change) {
                    try persistence.targets.update(updated, in: txn)
                }
            }

            let changed = try applyDocumentUpdates(
                event.documentUpdates.map { (key: $0.key, document: $0.value, readTime: event.snapshotVersion) }, in: txn)

            if event.snapshotVersion != .none {
                guard event.snapshotVersion >= lastRemoteSnapshotVersion else {
                    throw DocError(.internal, "watch went back in time: \(event.snapshotVersion) < \(lastRemoteSnapshotVersion)")
                }
                try persistence.targets.setLastRemoteSnapshotVersion(event.snapshotVersion, in: txn)
            }
            return try localViews(changed, in: txn)
        }
        if event.snapshotVersion != .none { lastRemoteSnapshotVersion = event.snapshotVersion }
        return changes
    }

    static func shouldPersist(_ new: TargetData, old: TargetData, change: TargetChange) -> Bool {
        if old.resumeToken.isEmpty { return true }
        if new.snapshotVersion.microseconds - old.snapshotVersion.microseconds >= resumeTokenMaxAgeMicroseconds { return true }
        if new.lastLimboFreeSnapshotVersion.microseconds - old.lastLimboFreeSnapshotVersion.microseconds
            >= resumeTokenMaxAgeMicroseconds { return true }
        return !change.addedDocuments.isEmpty || !change.modifiedDocuments.isEmpty || !change.removedDocuments.isEmpty
    }

    /// Records which views are in sync with the server: a target whose view is not from cache
    /// has no documents in limbo at its snapshot version, so its previous results may be reused.
    /// Also pins the documents each view shows, so garbage collection keeps them.
    package func notifyLocalViewChanges(_ changes: [LocalViewChanges]) {
        for change in changes {
            guard activeTargets[change.targetID] != nil else { continue }
            localViewReferences[change.targetID, default: []].formUnion(change.addedKeys)
            localViewReferences[change.targetID]?.subtract(change.removedKeys)
            if !change.fromCache, var data = activeTargets[change.targetID] {
                data.lastLimboFreeSnapshotVersion = data.snapshotVersion
                activeTargets[change.targetID] = data
            }
        }
    }

    // MARK: - Targets

    /// Allocates (or resumes, with its stored resume token) the target of a query.
    package func allocateTarget(_ target: Target) throws(DocError) -> TargetData {
        if let id = activeTargetIDs[target], let data = activeTargets[id] { return data }
        let data = try persistence.run("Allocate target") { txn throws(DocError) -> TargetData in
            if let cached = try persistence.targets.targetData(for: target, in: txn) { return cached }
            let fresh = TargetData(target: target, targetID: targetIDGenerator.nextID(), purpose: .listen,
                                   sequenceNumber: txn.sequenceNumber)
            try persistence.targets.add(fresh, in: txn)
            return fresh
        }
        activeTargets[data.targetID] = data
        activeTargetIDs[target] = data.targetID
        return data
    }

    /// Stops tracking a target as active. Its data (resume token, matching documents) stays in
    /// the cache so a later listen resumes from it; LRU garbage collection removes it in time.
    package func releaseTarget(_ targetID: TargetID) throws(DocError) {
        guard let data = activeTargets.removeValue(forKey: targetID) else { return }
        activeTargetIDs[data.target] = nil
        localViewReferences[targetID] = nil
        try persistence.run("Release target") { txn throws(DocError) in
            // Stamped with this transaction's sequence number: the same clock as the documents.
            try persistence.targets.update(data.withSequenceNumber(txn.sequenceNumber), in: txn)
        }
    }

    private var activeTargetIDSet: Set<TargetID> { Set(activeTargets.keys) }


    /// The keys the server last said match the target.
    package func remoteDocumentKeys(for targetID: TargetID) throws(DocError) -> Set<DocumentKey> {
        try persistence.run("Remote keys") { txn throws(DocError) in
            try persistence.targets.matchingKeys(for: targetID, in: txn)
        }
    }

    // MARK: - Reads

    /// Runs a query against the cache (remote documents + overlays). With
    /// `usePreviousResults`, a target's last server-confirmed results are reused when valid.
    package func executeQuery(_ query: Query, usePreviousResults: Bool) throws(DocError) -> QueryResult {
        let target = try query.toTarget()
        return try persistence.run("Execute query") { txn throws(DocError) in
            var remoteKeys = Set<DocumentKey>()
            var lastLimboFree = SnapshotVersion.none
            var data = activeTargetIDs[target].flatMap { activeTargets[$0] }
            if data == nil { data = try persistence.targets.targetData(for: target, in: txn) }
            if let data {
                remoteKeys = try persistence.targets.matchingKeys(for: data.targetID, in: txn)
                lastLimboFree = data.lastLimboFreeSnapshotVersion
            }
            let documents = try queryEngine.documents(
                matching: query, target: target, user: user,
                previousResults: usePreviousResults && lastLimboFree != .none ? (remoteKeys, lastLimboFree) : nil,
                in: txn)
            return QueryResult(documents: documents, remoteKeys: remoteKeys)
        }
    }

    /// The local view of one document.
    package func readDocument(_ key: DocumentKey) throws(DocError) -> MaybeDocument? {
        try persistence.run("Read document") { txn throws(DocError) in try localViews([key], in: txn)[key] ?? nil }
    }


    // MARK: - Garbage collection

    /// Removes least-recently-used inactive targets and orphaned documents until the cache is
    /// under `cacheSizeLimit` bytes. Pending writes and active targets are never collected.
    package func collectGarbage(cacheSizeLimit: Int64) throws(DocError) -> GarbageCollectionResult {
        let pinned = localViewReferences.values.reduce(into: Set<DocumentKey>()) { $0.formUnion($1) }
        return try persistence.collectGarbage(cacheSizeLimit: cacheSizeLimit, activeTargetIDs: activeTargetIDSet, pinnedKeys: pinned)
    }

    // MARK: - Overlays

    func localViews(_ keys: some Collection<DocumentKey>, in txn: PersistenceTransaction) throws(DocError) -> [DocumentKey: MaybeDocument?] {
        let overlays = try persistence.overlays.overlays(for: keys, user: user, in: txn)
        let missing = keys.filter { overlays[$0] == nil }
        let remote = try persistence.remoteDocuments.getAll(missing, in: txn)
        var result: [DocumentKey: MaybeDocument?] = [:]
        for key in keys { result[key] = overlays[key]?.document ?? remote[key] }
        return result
    }
}

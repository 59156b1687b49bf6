internal import DocModel
internal import Synchronization

/// A tenant store as a group of batches being committed together sees it: the stored data with
/// the commits staged so far on top. The ``CommitProcessor`` of a group runs on it unchanged
/// (its reads, its rules lookups and its `commit` all go through here), so each batch of the
/// group is applied, authorized and deduplicated against the state the batches before it
/// leave; ``commit(_:)`` only stages. The staged requests then go to the real store in one
/// ``TenantStore/commitGroup(_:)`` (one transaction, one synced write).
///
/// ``prefetch(batches:documents:)`` reads what processing reads first for every batch (the
/// tenant's state, its outcome, its documents) for the whole group at once, so that a group
/// of n batches reads the store once rather than 2n + 1 times (on PostgreSQL, round trips).
/// What it read is the stored state at that moment, like any read before the group's commit:
/// the store's checks in ``TenantStore/commitGroup(_:)`` refuse the group if another instance
/// changed it since.
///
/// Used by one group at a time, inside the tenant hub's serialization; the lock only makes it
/// `Sendable`.
final class GroupCommitView: TenantStore {
    let base: any TenantStore
    var tenant: TenantID { base.tenant }

    private struct Staged {
        var state: TenantState?
        var requests: [CommitRequest] = []
        var outcomes: [BatchKey: BatchOutcome] = [:]
        /// The documents the staged requests wrote (`nil`: deleted).
        var documents: [DocumentKey: Document?] = [:]
        /// What ``prefetch(batches:documents:)`` read, for every batch and document asked for
        /// (`nil`: none stored).
        var prefetchedOutcomes: [BatchKey: BatchOutcome?] = [:]
        /// The prefetched batches without an outcome that have a later one.
        var processedBefore = Set<BatchKey>()
        var prefetchedDocuments: [DocumentKey: Document?] = [:]
    }

    private let staged = Mutex(Staged())

    init(base: any TenantStore) {
        self.base = base
    }

    /// Reads the tenant's state, the outcomes of `batches` and the documents `keys` from the
    /// store in one call (``TenantStore/readAhead(batches:documents:)``), for the reads of the
    /// group's processing to find.
    func prefetch(batches: [BatchKey], documents keys: [DocumentKey]) async throws(DocError) {
        var unique = Set<DocumentKey>()
        let keys = keys.filter { unique.insert($0).inserted }
        let read = try await base.readAhead(batches: batches, documents: keys)
        staged.withLock { staged in
            if staged.state == nil { staged.state = read.state }
            for batch in batches { staged.prefetchedOutcomes.updateValue(read.outcomes[batch], forKey: batch) }
            staged.processedBefore.formUnion(read.processedBefore)
            for key in keys { staged.prefetchedDocuments.updateValue(read.documents[key], forKey: key) }
        }
    }

    /// The requests staged so far, in order.
    var requests: [CommitRequest] { staged.withLock { $0.requests } }

    func state() async throws(DocError) -> TenantState {
        if let state = staged.withLock({ $0.state }) { return state }
        let state = try await base.state()
        return staged.withLock { staged in
            if staged.state == nil { staged.state = state }
            return staged.state!
        }
    }

    func documents(_ keys: [DocumentKey]) async throws(DocError) -> DocumentsRead {
        let state = try await state()
        let (known, missing) = staged.withLock { staged -> ([DocumentKey: Document?], [DocumentKey]) in
            var known: [DocumentKey: Document?] = [:]
            var missing: [DocumentKey] = []
            for key in keys {
                if let document = staged.documents[key] ?? staged.prefetchedDocuments[key] {
                    known.updateValue(document, forKey: key)
                } else {
                    missing.append(key)
                }
            }
            return (known, missing)
        }
        var found = missing.isEmpty ? [:] : try await base.documents(missing).documents
        for (key, document) in known { found[key] = document }
        return DocumentsRead(version: state.lastVersion, documents: found)
    }

    func outcome(of batch: BatchKey) async throws(DocError) -> BatchOutcome? {
        // A staged outcome, else what the read-ahead found (`.some(nil)`: none stored).
        let known: BatchOutcome?? = staged.withLock { staged in
            if let outcome = staged.outcomes[batch] { return outcome }
            return staged.prefetchedOutcomes[batch]
        }
        if let known { return known }
        return try await base.outcome(of: batch)
    }

    func laterOutcomeExists(after batch: BatchKey) async throws(DocError) -> Bool {
        // Staged outcomes are of this group's batches, attempted in order: never later ones of
        // a client whose earlier batch is still to come. A prefetched batch was looked up.
        let known: Bool? = staged.withLock { staged in
            if staged.processedBefore.contains(batch) { return true }
            return staged.prefetchedOutcomes.keys.contains(batch) ? false : nil
        }
        if let known { return known }
        return try await base.laterOutcomeExists(after: batch)
    }

    /// Stages the request. The processor has just read its outcome (none) through this view,
    /// and nothing else commits in the tenant meanwhile (the hub serializes its commits); the
    /// store checks everything again when it stores the group (``TenantStore/commitGroup(_:)``).
    func commit(_ request: CommitRequest) async throws(DocError) -> CommitResult {
        let state = try await state()
        return staged.withLock { staged in
            let previous = state.lastVersion
            if case .committed(let version, _) = request.outcome.result {
                for write in request.writes { staged.documents.updateValue(write.document, forKey: write.key) }
                staged.state?.lastVersion = version
            }
            staged.requests.append(request)
            staged.outcomes[request.outcome.batch] = request.outcome
            return .stored(previousVersion: previous)
        }
    }

    // Not used by a commit: the stored data as it is.

    func query(_ target: Target, limit: Int?) async throws(DocError) -> QueryRead {
        try await base.query(target, limit: limit)
    }

    func changes(after version: SnapshotVersion, maxEntries: Int) async throws(DocError) -> ChangeLogRead {
        try await base.changes(after: version, maxEntries: maxEntries)
    }

    func scan(after: DocumentKey?, limit: Int) async throws(DocError) -> [Document] {
        try await base.scan(after: after, limit: limit)
    }

    func referencedAttachments(among ids: [AttachmentID]) async throws(DocError) -> Set<AttachmentID> {
        try await base.referencedAttachments(among: ids)
    }

    func deleteUnreferencedAttachments(
        among ids: [AttachmentID], _ delete: @escaping @Sendable (AttachmentID) async throws(DocError) -> Bool
    ) async throws(DocError) -> [AttachmentID] {
        throw DocError(.internal, "a commit group does not collect attachments")
    }

    func pruneOutcomes(recordedBefore cutoff: Int64) async throws(DocError) -> Int {
        throw DocError(.internal, "a commit group does not prune")
    }

    func pruneChangeLog(before cutoff: SnapshotVersion) async throws(DocError) -> Int {
        throw DocError(.internal, "a commit group does not prune")
    }
}

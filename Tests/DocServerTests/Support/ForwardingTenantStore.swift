import DocModel
@testable import DocServer

/// A test wrapper around a tenant store: everything goes to `base` unless the wrapper
/// implements it itself (the commits it watches or holds). A group commit is not forwarded:
/// the `TenantStore` default commits its requests through the wrapper's own `commit`.
protocol ForwardingTenantStore: TenantStore {
    var base: any TenantStore { get }
}

extension ForwardingTenantStore {
    var tenant: TenantID { base.tenant }
    func state() async throws(DocError) -> TenantState { try await base.state() }
    func documents(_ keys: [DocumentKey]) async throws(DocError) -> DocumentsRead { try await base.documents(keys) }
    func query(_ target: Target, limit: Int?) async throws(DocError) -> QueryRead { try await base.query(target, limit: limit) }
    func changes(after version: SnapshotVersion, maxEntries: Int) async throws(DocError) -> ChangeLogRead {
        try await base.changes(after: version, maxEntries: maxEntries)
    }
    func outcome(of batch: BatchKey) async throws(DocError) -> BatchOutcome? { try await base.outcome(of: batch) }
    func laterOutcomeExists(after batch: BatchKey) async throws(DocError) -> Bool { try await base.laterOutcomeExists(after: batch) }
    func readAhead(batches: [BatchKey], documents keys: [DocumentKey]) async throws(DocError) -> GroupReadAhead {
        try await base.readAhead(batches: batches, documents: keys)
    }
    func scan(after: DocumentKey?, limit: Int) async throws(DocError) -> [Document] { try await base.scan(after: after, limit: limit) }
    func referencedAttachments(among ids: [AttachmentID]) async throws(DocError) -> Set<AttachmentID> {
        try await base.referencedAttachments(among: ids)
    }
    func deleteUnreferencedAttachments(
        among ids: [AttachmentID], _ delete: @escaping @Sendable (AttachmentID) async throws(DocError) -> Bool
    ) async throws(DocError) -> [AttachmentID] {
        try await base.deleteUnreferencedAttachments(among: ids, delete)
    }
    func commit(_ request: CommitRequest) async throws(DocError) -> CommitResult { try await base.commit(request) }
    func pruneOutcomes(recordedBefore cutoff: Int64) async throws(DocError) -> Int { try await base.pruneOutcomes(recordedBefore: cutoff) }
    func pruneChangeLog(before cutoff: SnapshotVersion) async throws(DocError) -> Int { try await base.pruneChangeLog(before: cutoff) }
    func claim(_ chore: TenantChore, at now: Int64, every interval: Int64) async throws(DocError) -> Bool {
        try await base.claim(chore, at: now, every: interval)
    }

    func releaseClaim(_ chore: TenantChore, claimedAt time: Int64) async throws(DocError) {
        try await base.releaseClaim(chore, claimedAt: time)
    }
}

/// A test wrapper around the server's store: each tenant's store wrapped by ``wrap(_:)``,
/// everything else from `base`.
protocol ForwardingServerStore: ServerStore {
    var base: LevelDBServerStore { get }
    func wrap(_ tenant: any TenantStore) -> any TenantStore
}

extension ForwardingServerStore {
    func tenant(_ tenant: TenantID) async throws(DocError) -> any TenantStore { wrap(try await base.tenant(tenant)) }
    func tenantIDs() async throws(DocError) -> [TenantID] { try await base.tenantIDs() }
    func checkHealth() async throws(DocError) { try await base.checkHealth() }
    func close() async {}
}

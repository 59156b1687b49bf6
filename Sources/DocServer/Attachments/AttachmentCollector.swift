internal import DocModel

/// Deletes a tenant's attachments that no live document refers to once they are older than
/// the grace period (``AttachmentSettings/unreferencedGraceMicros``); run by
/// ``DocServerCore/runMaintenance()``.
///
/// A collection has two phases, so a large tenant's scan does not hold its commits back:
///
/// 1. ``survey(_:now:)``, beside the tenant's commits: the blob store's listing, kept to the
///    attachments stored (or, unfinished, begun) before the grace period; if any, every
///    stored document is scanned (``TenantStore/scan(after:limit:)``) and the references of
///    the live ones (not tombstones) collected.
/// 2. ``sweep(_:store:maxChanges:)``, inside the tenant's serialization (no commit of this
///    process runs): the references written by every commit since the survey began (the
///    change log; any server instance's) are added, and each candidate still unreferenced is
///    deleted under its upload lock, after checking again that it is old (an upload that was
///    unfinished at the listing may have completed since). When the change log cannot answer,
///    nothing is deleted this round.
///
/// A commit that refers to an attachment checks that it is stored
/// (``CommitProcessor/attachments``), so a document never refers to a deleted attachment;
/// what the grace period protects is a client that uploaded an attachment and has not sent
/// its write yet. The grace counts from when the attachment was first stored: a client
/// re-uploading an old unreferenced attachment finds it complete and does not restart it.
struct AttachmentCollector: Sendable {
    let settings: AttachmentSettings
    /// Documents read per page of the scan.
    static let pageSize = 500

    /// What the first phase found.
    struct Survey: Sendable {
        /// The attachments old enough to delete, if unreferenced.
        var candidates: [BlobListing]
        /// Every attachment a live document refers to.
        var referenced: Set<AttachmentID>
        /// The tenant's last version before the scan began.
        var from: SnapshotVersion
        /// Attachments stored at or after this time (microseconds) are kept.
        var cutoff: Int64
    }

    /// The first phase; `nil` when nothing is old enough to consider.
    func survey(_ store: any TenantStore, now: Int64) async throws(DocError) -> Survey? {
        let cutoff = now - settings.unreferencedGraceMicros
        let candidates = try await settings.store.list(tenant: store.tenant).filter { $0.createdAt.microseconds < cutoff }
        guard !candidates.isEmpty else { return nil }
        let from = try await store.state().lastVersion
        var referenced = Set<AttachmentID>()
        var after: DocumentKey?
        while true {
            let page = try await store.scan(after: after, limit: Self.pageSize)
            for document in page where !document.isTombstone {
                document.forEachAttachment { referenced.insert($0) }
            }
            guard page.count == Self.pageSize, let last = page.last else { break }
            after = last.key
        }
        return Survey(candidates: candidates, referenced: referenced, from: from, cutoff: cutoff)
    }

    /// The second phase; returns the ids deleted. The caller holds the tenant's
    /// serialization.
    func sweep(_ survey: Survey, store: any TenantStore, maxChanges: Int) async throws(DocError) -> [AttachmentID] {
        var referenced = survey.referenced
        switch try await store.changes(after: survey.from, maxEntries: maxChanges) {
        case .unavailable:
            return []
        case .complete(let entries, _):
            for entry in entries {
                guard let document = entry.document.document else { continue }
                document.forEachAttachment { referenced.insert($0) }
            }
        }
        let blobs = settings.store
        let tenant = store.tenant
        var deleted: [AttachmentID] = []
        for candidate in survey.candidates where !referenced.contains(candidate.id) {
            // An upload of it is running: it is wanted.
            guard settings.uploads.tryLock(candidate.id, tenant: tenant) else { continue }
            defer { settings.uploads.unlock(candidate.id, tenant: tenant) }
            // An upload unfinished at the listing may have completed since (a complete
            // attachment's metadata never changes).
            if !candidate.isComplete, let metadata = try await blobs.metadata(candidate.id, tenant: tenant),
               metadata.createdAt.microseconds >= survey.cutoff {
                continue
            }
            try await blobs.delete(candidate.id, tenant: tenant)
            deleted.append(candidate.id)
        }
        return deleted
    }
}

internal import DocModel

/// Deletes a tenant's attachments that no live document refers to once they are older than
/// the grace period (``AttachmentSettings/unreferencedGraceMicros``); run by
/// ``DocServerCore/runMaintenance()``.
///
/// The store keeps an index of the attachments live documents (not tombstones) refer to,
/// written in the commit that writes the document
/// (``TenantStore/referencedAttachments(among:)``): a collection looks up its candidates there,
/// one probe each, and never reads the documents. It has two phases, so that its lookups do
/// not hold a tenant's commits back:
///
/// 1. ``survey(_:now:)``, beside the tenant's commits: the blob store's listing, kept to the
///    attachments stored (or, unfinished, begun) before the grace period, less those the
///    index says are referenced.
/// 2. ``sweep(_:store:)``, inside the tenant's serialization (no commit of this process runs):
///    the remaining candidates are looked up again (a commit since the survey, of any server
///    instance, may refer to one), and each still unreferenced is deleted under its upload
///    lock, after checking again that it is old (an upload that was unfinished at the listing
///    may have completed since).
///
/// A commit that refers to an attachment checks that it is stored
/// (``CommitProcessor/attachments``), so a document never refers to a deleted attachment;
/// what the grace period protects is a client that uploaded an attachment and has not sent
/// its write yet. The grace counts from when the attachment was first stored: a client
/// re-uploading an old unreferenced attachment finds it complete and does not restart it.
struct AttachmentCollector: Sendable {
    let settings: AttachmentSettings

    /// What the first phase found.
    struct Survey: Sendable {
        /// The attachments old enough to delete that no live document referred to.
        var candidates: [BlobListing]
        /// Attachments stored at or after this time (microseconds) are kept.
        var cutoff: Int64
    }

    /// The first phase; `nil` when nothing is old enough and unreferenced.
    func survey(_ store: any TenantStore, now: Int64) async throws(DocError) -> Survey? {
        let cutoff = now - settings.unreferencedGraceMicros
        let old = try await settings.store.list(tenant: store.tenant).filter { $0.createdAt.microseconds < cutoff }
        guard !old.isEmpty else { return nil }
        let referenced = try await store.referencedAttachments(among: old.map(\.id))
        let candidates = old.filter { !referenced.contains($0.id) }
        guard !candidates.isEmpty else { return nil }
        return Survey(candidates: candidates, cutoff: cutoff)
    }

    /// The second phase; returns the ids deleted. The caller holds the tenant's
    /// serialization.
    func sweep(_ survey: Survey, store: any TenantStore) async throws(DocError) -> [AttachmentID] {
        let referenced = try await store.referencedAttachments(among: survey.candidates.map(\.id))
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

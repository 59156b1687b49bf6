internal import DocModel

/// Deletes a tenant's attachments that no live document refers to once they are older than
/// the grace period (``AttachmentSettings/unreferencedGraceMicros``); run by
/// ``DocServerCore/runMaintenance(sharingEvery:)``.
///
/// The store keeps an index of the attachments live documents (not tombstones) refer to,
/// written in the commit that writes the document
/// (``TenantStore/referencedAttachments(among:)``): a collection looks up its candidates there,
/// one probe each, and never reads the documents. It has two phases, so that most of its
/// lookups hold no commit back:
///
/// 1. ``survey(_:now:)``, beside the tenant's commits: the blob store's listing, kept to the
///    attachments stored (or, unfinished, begun) before the grace period, less those the
///    index says are referenced.
/// 2. ``sweep(_:store:)``, a few hundred candidates at a time, each time in the store's
///    critical section (``TenantStore/deleteUnreferencedAttachments(among:_:)``): the
///    candidates are looked up again (a commit since the survey, of any server instance, may
///    refer to one), and each still unreferenced is deleted under its upload lock, after
///    checking again that it is old (an upload that was unfinished at the listing may have
///    completed since).
///
/// A commit that newly refers to an attachment checks that it is stored
/// (``CommitProcessor/attachments``), and checks again inside the same critical section
/// (``CommitRequest/recheck``), so a document never refers to a deleted attachment, whichever
/// server instance collects; what the grace period protects is a client that uploaded an
/// attachment and has not sent its write yet. The grace counts from when the attachment was
/// first stored: a client re-uploading an old unreferenced attachment finds it complete and
/// does not restart it.
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

    /// How many candidates one critical section of the sweep looks up and deletes: the
    /// rechecking commits of the tenant wait that long.
    static let sweepChunk = 256

    /// The second phase; returns the ids deleted.
    func sweep(_ survey: Survey, store: any TenantStore) async throws(DocError) -> [AttachmentID] {
        let blobs = settings.store
        let tenant = store.tenant
        let cutoff = survey.cutoff
        var deleted: [AttachmentID] = []
        for start in stride(from: 0, to: survey.candidates.count, by: Self.sweepChunk) {
            let chunk = survey.candidates[start..<min(survey.candidates.count, start + Self.sweepChunk)]
            let unfinished = Set(chunk.filter { !$0.isComplete }.map(\.id))
            deleted += try await store.deleteUnreferencedAttachments(among: chunk.map(\.id)) { id throws(DocError) -> Bool in
                // An upload of it is running (on any server sharing the blob store): it is wanted.
                guard let lock = try await blobs.lockUpload(id, tenant: tenant) else { return false }
                return try await lock.holding { () async throws(DocError) -> Bool in
                    // An upload unfinished at the listing may have completed since (a complete
                    // attachment's metadata never changes).
                    if unfinished.contains(id), let metadata = try await blobs.metadata(id, tenant: tenant),
                       metadata.createdAt.microseconds >= cutoff {
                        return false
                    }
                    try await blobs.delete(id, tenant: tenant)
                    return true
                }
            }
        }
        return deleted
    }
}

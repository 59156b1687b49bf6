internal import DocModel

/// The attachments a batch makes live documents refer to, by the write that does it: the
/// references each mutation writes that the live document before it did not already hold (the
/// collector never deletes what a live document refers to, so those need no check), and every
/// reference of a tombstone the batch brings back to life (the collector does not count
/// tombstones' references, so theirs may be gone).
struct AttachmentReferences {
    private(set) var written: [(index: Int, key: DocumentKey, id: AttachmentID)] = []
    private var seen = Set<AttachmentID>()

    mutating func note(index: Int, mutation: Mutation, before: Document?, after: Document?) {
        if let before, before.isTombstone {
            if let after, !after.isTombstone { after.forEachAttachment { add(index, mutation.key, $0) } }
            return
        }
        let written = mutation.attachmentReferences
        guard !written.isEmpty else { return }
        var held = Set<AttachmentID>()
        before?.forEachAttachment { held.insert($0) }
        for id in written where !held.contains(id) { add(index, mutation.key, id) }
    }

    private mutating func add(_ index: Int, _ key: DocumentKey, _ id: AttachmentID) {
        if seen.insert(id).inserted { written.append((index, key, id)) }
    }
}

extension CommitProcessor {
    /// Refuses a batch that makes a live document refer to an attachment the tenant's blob
    /// store does not hold complete: `failedPrecondition` located at the first write naming it.
    ///
    /// Clients upload an attachment before they send a write that refers to it (their write
    /// queue holds such a write back), so this fails only for a client that skipped the
    /// upload, an id typed by hand, or an attachment collected as unreferenced before the
    /// write arrived (``AttachmentSettings/unreferencedGraceMicros``).
    func check(_ references: AttachmentReferences) async throws(DocError) {
        for (index, key, id) in references.written {
            let location = "write \(index): \(key)"
            guard let attachments else {
                throw DocError(.failedPrecondition,
                               "the document refers to attachment \(id), but this server stores no attachments "
                                   + "(it was started without an attachment store)", at: location)
            }
            guard try await attachments.metadata(id, tenant: store.tenant) != nil else {
                throw DocError(.failedPrecondition,
                               "the document refers to attachment \(id), which is not on the server: upload the "
                                   + "attachment before writing a document that refers to it", at: location)
            }
        }
    }

    /// The same check for the store to make again inside the tenant's critical section
    /// (``CommitRequest/recheck``), where no attachment collection of any server instance
    /// runs: an attachment deleted since ``check(_:)`` makes the commit `aborted`, and the
    /// batch processed again is refused by ``check(_:)``. `nil` when the batch adds no
    /// reference.
    func recheck(_ references: AttachmentReferences) -> (@Sendable () async throws(DocError) -> Void)? {
        guard let attachments, !references.written.isEmpty else { return nil }
        let ids = references.written.map(\.id)
        let tenant = store.tenant
        return { () async throws(DocError) in
            for id in ids where try await attachments.metadata(id, tenant: tenant) == nil {
                throw DocError(.aborted, "attachment \(id) was deleted after the batch was checked")
            }
        }
    }
}

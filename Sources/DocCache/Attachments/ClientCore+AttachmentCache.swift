package import DocModel

/// The attachment cache's size limit (``StoreSettings/attachmentCacheSizeBytes``): the files
/// of attachments the server holds are deleted least recently used first once all files
/// together are over the limit. An attachment that is not uploaded (still to send, or failed)
/// is never deleted: it exists nowhere else. Nor is one a queued or failed write refers to:
/// the server deletes an attachment no document refers to after its grace period, so when
/// such a write reaches it late (behind a write that waits, or retried by the user) this
/// device's file may be the only copy left.
extension ClientCore {
    /// How stale a recorded use may get before a read records it again: the order needs no
    /// more precision, and a read then costs no disk write.
    static let attachmentUseResolutionMicros: Int64 = 60 * 1_000_000

    /// Records that `id` was read now (at most once per ``attachmentUseResolutionMicros``).
    func noteAttachmentUse(_ id: AttachmentID) throws(DocError) {
        guard var record = attachmentRecords[id] else { return }
        let now = Timestamp.now
        guard now.microseconds - record.lastUsedAt.microseconds >= Self.attachmentUseResolutionMicros else { return }
        record.lastUsedAt = now
        try localStore.putAttachment(record)
        attachmentRecords[id] = record
    }

    /// Deletes the least recently used attachments the server holds until the files fit in
    /// the limit; `keeping` (the one just downloaded) is not deleted. Each record is removed
    /// before its file, so a crash leaves at most a file without a record, which the next open
    /// removes. Returns the ids deleted.
    @discardableResult
    package func trimAttachmentCache(keeping: AttachmentID?) throws(DocError) -> [AttachmentID] {
        let limit = settings.attachmentCacheSizeBytes
        guard limit != StoreSettings.unlimited else { return [] }
        var total = attachmentRecords.values.reduce(Int64(0)) { $0 + $1.size }
        guard total > limit else { return [] }
        let pinned = try attachmentsOfUnsyncedWrites()
        let candidates = attachmentRecords.values
            .filter { $0.progress == .uploaded && $0.id != keeping && !pinned.contains($0.id) }
            .sorted { ($0.lastUsedAt, $0.id) < ($1.lastUsedAt, $1.id) }
        var deleted: [AttachmentID] = []
        for record in candidates where total > limit {
            try localStore.removeAttachment(record.id)
            attachmentRecords[record.id] = nil
            attachmentFiles.remove(record.id)
            total -= record.size
            deleted.append(record.id)
        }
        if !deleted.isEmpty { attachmentChanges.yield(()) }
        return deleted
    }

    /// The attachments the queued and the failed writes refer to (read only when the cache
    /// is over its limit).
    private func attachmentsOfUnsyncedWrites() throws(DocError) -> Set<AttachmentID> {
        Set(try localStore.unsyncedBatches().flatMap(\.attachmentReferences))
    }
}

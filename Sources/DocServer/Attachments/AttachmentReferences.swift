package import DocModel

extension Document {
    /// The attachments this document keeps from collection: each one its data refers to, once;
    /// none for a tombstone (tombstones do not count, docs/attachments.md). What both stores'
    /// attachment reference rows hold (``TenantStore/referencedAttachments(among:)``).
    package var keptAttachments: Set<AttachmentID> {
        guard !isTombstone else { return [] }
        var ids = Set<AttachmentID>()
        forEachAttachment { ids.insert($0) }
        return ids
    }
}

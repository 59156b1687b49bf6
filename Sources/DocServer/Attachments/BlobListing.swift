public import DocModel

/// One entry of ``BlobStore/list(tenant:)``: enough for a collector to decide what to delete.
public struct BlobListing: Sendable, Hashable {
    /// The attachment.
    public var id: AttachmentID
    /// When it was completed (or, for a partial upload, begun).
    public var createdAt: Timestamp
    /// Whether it is complete; `false`: a partial upload.
    public var isComplete: Bool

    /// An entry for `id`: `createdAt` is when it was completed, or begun when `isComplete` is
    /// `false`.
    public init(id: AttachmentID, createdAt: Timestamp, isComplete: Bool) {
        self.id = id
        self.createdAt = createdAt
        self.isComplete = isComplete
    }
}

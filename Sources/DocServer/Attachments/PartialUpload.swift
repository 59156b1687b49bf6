public import DocModel

/// An upload in progress: its declaration and how many bytes, from the start, the store holds.
public struct PartialUpload: Sendable, Hashable {
    /// The attachment being uploaded.
    public var id: AttachmentID
    /// The declared total size and media type.
    public var declaration: UploadDeclaration
    /// The bytes held, a prefix of the content: the next upload continues at this offset.
    public var received: Int64
    /// When the upload began.
    public var createdAt: Timestamp

    /// Creates a description as given; `received` should be in 0…`declaration.size`.
    public init(id: AttachmentID, declaration: UploadDeclaration, received: Int64, createdAt: Timestamp) {
        self.id = id
        self.declaration = declaration
        self.received = received
        self.createdAt = createdAt
    }
}

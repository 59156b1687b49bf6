/// What an uploader declares before the bytes arrive: the total size (`Upload-Length`) and
/// the media type (`Content-Type`). The rules decide an upload from it, and a partial upload
/// keeps it until the last byte arrives.
public struct UploadDeclaration: Sendable, Hashable, Codable {
    /// The total size in bytes, at least 1.
    public var size: Int64
    /// The media type, e.g. `application/pdf`.
    public var contentType: String

    /// Creates a declaration as given; a ``BlobStore`` refuses a `size` below 1 or over its
    /// ``BlobStore/maxSize`` (`invalidArgument`).
    public init(size: Int64, contentType: String) {
        self.size = size
        self.contentType = contentType
    }
}

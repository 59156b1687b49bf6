import DocModel

/// What the server has of an attachment's upload.
package struct AttachmentUploadStatus: Sendable, Equatable {
    /// The bytes the server holds (all of them once `complete`).
    package var received: Int64
    /// Whether the server has the whole attachment, checked against its id.
    package var complete: Bool
}

/// A range of an attachment's bytes from the server.
package struct AttachmentDownloadChunk: Sendable {
    package var bytes: [UInt8]
    /// The attachment's whole size.
    package var total: Int64
    package var contentType: String
}

/// How attachments travel to and from the server (HTTP in production; see
/// ``HTTPAttachmentTransport`` and docs/attachments.md for the endpoints). Every call takes
/// the bearer token of the store's user. Errors are `DocError`s: `unavailable` when the server
/// cannot be reached, else the server's code.
package protocol AttachmentTransport: Sendable {
    /// What the server has of `id` (`nil`: nothing).
    func uploadStatus(of id: AttachmentID, token: String) async throws(DocError) -> AttachmentUploadStatus?

    /// Sends `chunk`, the bytes of `id` from `offset` on, declaring the whole `size` and
    /// `contentType`. Answers what the server holds afterwards.
    func upload(_ id: AttachmentID, contentType: String, size: Int64, offset: Int64, chunk: [UInt8],
                token: String) async throws(DocError) -> AttachmentUploadStatus

    /// Reads up to `maxBytes` of `id` from `offset`.
    func download(_ id: AttachmentID, from offset: Int64, maxBytes: Int, token: String) async throws(DocError) -> AttachmentDownloadChunk
}

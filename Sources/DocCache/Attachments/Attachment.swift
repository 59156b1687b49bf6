public import DocModel

/// A file a document refers to — a photo, a PDF — stored in the store's directory and
/// uploaded to the server before any write that refers to it.
///
/// Add one with ``DocumentStore/Attachments/add(file:contentType:)`` and put
/// `.attachment(attachment.id)` (``FieldValue/attachment(_:)``) in a document's data.
public struct Attachment: Sendable, Hashable, Identifiable {
    /// The SHA-256 of the content (see ``AttachmentID``).
    public let id: AttachmentID
    /// The size in bytes.
    public let size: Int64
    /// The MIME type given when it was added (`image/jpeg`, `application/pdf`, …).
    public let contentType: String
    /// When it was added on this device, or downloaded to it.
    public let createdAt: Timestamp
    /// Where it is on its way to the server.
    public let state: State

    /// Where an attachment is on its way to the server.
    public enum State: Sendable, Hashable, CustomStringConvertible {
        /// Stored on this device only; it is uploaded when the server can be reached.
        case localOnly
        /// Being uploaded: `sent` of `total` bytes are on the server.
        case uploading(sent: Int64, total: Int64)
        /// On the server (uploaded from here, or downloaded from there).
        case uploaded
        /// The server refused it for good (too large, forbidden, …): writes that refer to it
        /// wait until it is retried (``DocumentStore/Attachments/retry(_:)``) or removed.
        case failed(DocError)

        /// The state's name as docctl prints it: `local_only`, `uploading`, `uploaded`, `failed`.
        public var name: String {
            switch self {
            case .localOnly: return "local_only"
            case .uploading: return "uploading"
            case .uploaded: return "uploaded"
            case .failed: return "failed"
            }
        }

        public var description: String {
            switch self {
            case .uploading(let sent, let total): return "uploading \(sent)/\(total)"
            case .failed(let error): return "failed: \(error)"
            default: return name
            }
        }
    }

    /// The hex SHA-256 of the content (the id's text).
    public var sha256: String { id.hex }

    package init(id: AttachmentID, size: Int64, contentType: String, createdAt: Timestamp, state: State) {
        self.id = id
        self.size = size
        self.contentType = contentType
        self.createdAt = createdAt
        self.state = state
    }
}

internal import DocModel
internal import Hummingbird

/// The headers of `PUT /attachments/{id}`, checked before any byte of the body is read.
struct UploadHeaders {
    /// `Content-Type`: the attachment's media type.
    let contentType: String
    /// `Upload-Length`: the total size.
    let length: Int64
    /// `Upload-Offset`: where the body starts (default 0).
    let offset: Int64

    /// The longest `Content-Type` accepted.
    static let maxContentTypeBytes = 255

    /// Parses and checks the headers of `request`.
    ///
    /// - Throws: 400 (`invalidArgument`) for a missing or malformed header, a zero length, an
    ///   offset past the length or a body that would go past it; 413 (`invalidArgument`, as
    ///   Firestore refuses a document over its size limit)
    ///   for a length over `maxSize`.
    init(_ headers: HTTPFields, id: AttachmentID, maxSize: Int64) throws(AttachmentHTTPError) {
        guard let contentType = headers[.contentType], Self.isValidContentType(contentType) else {
            throw Self.invalid("Content-Type is required: the attachment's media type, e.g. image/jpeg "
                                   + "(printable ASCII, at most \(Self.maxContentTypeBytes) bytes)")
        }
        guard let lengthText = headers[.uploadLength] else {
            throw Self.invalid("Upload-Length is required: the attachment's total size in bytes")
        }
        guard let length = Self.number(lengthText) else {
            throw Self.invalid("Upload-Length must be a number of bytes, not '\(lengthText.prefix(40))'")
        }
        guard length > 0 else { throw Self.invalid("an attachment has at least 1 byte; Upload-Length is 0") }
        guard length <= maxSize else {
            throw AttachmentHTTPError(.contentTooLarge, .invalidArgument,
                                      "attachment \(id) of \(length) bytes is larger than the limit of \(maxSize) bytes")
        }
        var offset: Int64 = 0
        if let offsetText = headers[.uploadOffset] {
            guard let value = Self.number(offsetText) else {
                throw Self.invalid("Upload-Offset must be a number of bytes, not '\(offsetText.prefix(40))'")
            }
            offset = value
        }
        guard offset <= length else {
            throw Self.invalid("Upload-Offset \(offset) is past Upload-Length \(length)")
        }
        // A `Content-Length` (a chunked body has none) must fit in what is left.
        if let text = headers[.contentLength] {
            guard let value = Self.number(text) else { throw Self.invalid("Content-Length must be a number of bytes") }
            guard value <= length - offset else {
                throw Self.invalid("the body of \(value) bytes at Upload-Offset \(offset) goes past Upload-Length \(length)")
            }
        }
        self.contentType = contentType
        self.length = length
        self.offset = offset
    }

    private static func invalid(_ message: String) -> AttachmentHTTPError {
        AttachmentHTTPError(.badRequest, .invalidArgument, message)
    }

    /// A non-negative decimal that fits an `Int64` (digits only: no sign, no spaces).
    static func number(_ text: String) -> Int64? {
        guard !text.isEmpty, text.utf8.count <= 19, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int64(text)
    }

    /// Printable ASCII (it is echoed as a response header), 1…255 bytes.
    static func isValidContentType(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= maxContentTypeBytes && text.utf8.allSatisfy { (0x20...0x7E).contains($0) }
    }
}

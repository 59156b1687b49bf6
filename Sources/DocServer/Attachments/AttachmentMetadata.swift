public import DocModel

/// What the server knows of a stored (complete) attachment: written once, when its upload
/// is verified, and never changed.
public struct AttachmentMetadata: Sendable, Hashable, Codable {
    /// The id: the SHA-256 of the bytes, 64 lowercase hex characters.
    public var id: AttachmentID
    /// The size in bytes.
    public var size: Int64
    /// The media type the uploader declared (`Content-Type`), e.g. `image/jpeg`.
    public var contentType: String
    /// The SHA-256 of the bytes as the server computed it (equal to the id's hex).
    public var sha256: String
    /// When the upload completed.
    public var createdAt: Timestamp

    /// Creates metadata as given (not checked: `sha256` should equal `id.hex`).
    public init(id: AttachmentID, size: Int64, contentType: String, sha256: String, createdAt: Timestamp) {
        self.id = id
        self.size = size
        self.contentType = contentType
        self.sha256 = sha256
        self.createdAt = createdAt
    }

    private enum CodingKeys: String, CodingKey { case id, size, contentType, sha256, createdAtMicros }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let hex = try container.decode(String.self, forKey: .id)
        do throws(DocError) {
            id = try AttachmentID(hex)
        } catch {
            throw DecodingError.dataCorruptedError(forKey: .id, in: container, debugDescription: error.message)
        }
        size = try container.decode(Int64.self, forKey: .size)
        // Range answers count back from the size: a damaged file must not make them overflow.
        guard size >= 1 else {
            throw DecodingError.dataCorruptedError(forKey: .size, in: container, debugDescription: "size \(size) is not positive")
        }
        contentType = try container.decode(String.self, forKey: .contentType)
        sha256 = try container.decode(String.self, forKey: .sha256)
        createdAt = Timestamp(microseconds: try container.decode(Int64.self, forKey: .createdAtMicros))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id.hex, forKey: .id)
        try container.encode(size, forKey: .size)
        try container.encode(contentType, forKey: .contentType)
        try container.encode(sha256, forKey: .sha256)
        try container.encode(createdAt.microseconds, forKey: .createdAtMicros)
    }
}

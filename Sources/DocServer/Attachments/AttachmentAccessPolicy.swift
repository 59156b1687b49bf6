public import DocModel

/// What is asked of an attachment.
public enum AttachmentOperation: String, Sendable, Hashable, CustomStringConvertible {
    /// Storing bytes (`PUT /attachments/{id}`) or asking how far an upload got.
    case upload
    /// Reading the bytes (`GET /attachments/{id}`).
    case download

    public var description: String { rawValue }
}

/// An attachment as an access decision sees it: for an upload the incoming object (its
/// declared size and type), for a download the stored one.
public struct AttachmentObject: Sendable, Hashable {
    /// The attachment.
    public var id: AttachmentID
    /// Its size in bytes (declared, for an upload).
    public var size: Int64
    /// Its media type (declared, for an upload).
    public var contentType: String
    /// When it was stored; `nil` for an upload (not stored yet).
    public var createdAt: Timestamp?

    /// Describes an attachment; leave `createdAt` `nil` for an upload (not stored yet).
    public init(id: AttachmentID, size: Int64, contentType: String, createdAt: Timestamp? = nil) {
        self.id = id
        self.size = size
        self.contentType = contentType
        self.createdAt = createdAt
    }

    /// The stored attachment described by `metadata`.
    public init(_ metadata: AttachmentMetadata) {
        self.init(id: metadata.id, size: metadata.size, contentType: metadata.contentType, createdAt: metadata.createdAt)
    }

    /// The object path the rules match: `attachments/<id>`.
    public var path: String { "attachments/\(id.hex)" }
}

/// The answer of an ``AttachmentAccessPolicy``.
public enum AttachmentAccessDecision: Sendable, Hashable {
    /// The operation may go ahead.
    case allowed
    /// Refused, with why (`permissionDenied`). The detail is for logs: clients are told only
    /// "Missing or insufficient permissions." and the attachment.
    case denied(DocError)
}

/// Decides who may upload and download which attachment of their tenant (tenant isolation is
/// not its job: a caller only ever reaches its own tenant's attachments).
///
/// ``RulesAttachmentPolicy`` decides with the security rules' `service firebase.storage`
/// block; ``AllowAllAttachmentPolicy`` allows every authenticated caller.
public protocol AttachmentAccessPolicy: Sendable {
    /// Whether `auth` may perform `operation` on `object` in `tenant`.
    func decide(_ operation: AttachmentOperation, tenant: TenantID, auth: AuthContext,
                object: AttachmentObject) async -> AttachmentAccessDecision
}

/// Allows every authenticated caller every attachment of its tenant: tenant isolation only,
/// as a server without rules. For tests and tools.
public struct AllowAllAttachmentPolicy: AttachmentAccessPolicy {
    /// Creates the policy (it has no settings).
    public init() {}

    /// Always ``AttachmentAccessDecision/allowed``, whatever the operation, caller and object.
    public func decide(_ operation: AttachmentOperation, tenant: TenantID, auth: AuthContext,
                       object: AttachmentObject) async -> AttachmentAccessDecision {
        .allowed
    }
}

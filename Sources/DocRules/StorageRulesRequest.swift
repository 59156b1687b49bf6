public import DocModel

/// One stored (or incoming) attachment object as storage rules see it: `resource` and
/// `request.resource` in a `service firebase.storage` block.
///
/// In the rules it is a map with Firebase Storage's field names: `name`, `bucket`, `size`
/// (int), `contentType`, `timeCreated` and `updated` (timestamps), `metadata` (a map of
/// strings), plus doccache's own `sha256`. Firebase's `md5Hash`, `crc32c`, `etag`,
/// `generation`, `metageneration` and `content*` headers other than `contentType` are absent
/// (reading one is an evaluation error, as for any missing map key).
public struct StorageObject: Sendable, Hashable {
    /// The object path relative to `/b/{bucket}/o` (`attachments/<id>`): `resource.name`.
    public var name: String
    /// The bucket (`"default"` in doccache): `resource.bucket`.
    public var bucket: String
    /// The content length in bytes: `resource.size`.
    public var size: Int64
    /// The MIME type (`image/png`): `resource.contentType`.
    public var contentType: String
    /// The SHA-256 of the content, 64 lowercase hex digits: `resource.sha256`.
    public var sha256: String
    /// When the object was first stored: `resource.timeCreated`.
    public var timeCreated: Timestamp
    /// When the object was last changed: `resource.updated`.
    public var updated: Timestamp
    /// Custom metadata: `resource.metadata`.
    public var metadata: [String: String]

    /// An object. `updated` defaults to `timeCreated`.
    public init(
        name: String, bucket: String = "default", size: Int64, contentType: String, sha256: String,
        timeCreated: Timestamp, updated: Timestamp? = nil, metadata: [String: String] = [:]
    ) {
        self.name = name
        self.bucket = bucket
        self.size = size
        self.contentType = contentType
        self.sha256 = sha256
        self.timeCreated = timeCreated
        self.updated = updated ?? timeCreated
        self.metadata = metadata
    }
}

/// A request to authorize against the `service firebase.storage` block: what is asked
/// (method and object path), by whom, on what (the stored object and, for writes, the
/// incoming one). Decided by ``RuleSet/evaluate(storage:)``.
public struct StorageRulesRequest: Sendable {
    /// `get` (download or read metadata), `list`, `create` (upload of a new object), `update`
    /// or `delete`; `read` and `write` are rule shorthands, as for documents.
    public var method: RulesMethod
    /// The object path relative to `/b/{bucket}/o`, e.g. `attachments/<id>` (for a `list`,
    /// the folder listed). Matched against the rules as `/b/<bucket>/o/<path>`.
    public var path: String
    /// The bucket (`"default"` in doccache).
    public var bucket: String
    /// The caller, or `nil` when unauthenticated (`request.auth == null`).
    public var auth: RulesAuth?
    /// The stored object (`resource`); `nil` when there is none.
    public var resource: StorageObject?
    /// The incoming object for `create` and `update` (`request.resource`); `nil` otherwise.
    public var requestResource: StorageObject?
    /// `request.time`: the time the request is evaluated.
    public var time: Timestamp

    /// A request; `resource` and `requestResource` default to none.
    public init(
        method: RulesMethod, path: String, bucket: String = "default", auth: RulesAuth?,
        resource: StorageObject? = nil, requestResource: StorageObject? = nil, time: Timestamp
    ) {
        self.method = method
        self.path = path
        self.bucket = bucket
        self.auth = auth
        self.resource = resource
        self.requestResource = requestResource
        self.time = time
    }
}

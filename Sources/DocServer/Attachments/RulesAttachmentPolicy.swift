internal import DocModel
internal import DocRules

/// Decides attachment access with the security rules in force: the `service
/// firebase.storage` block, on the object path `attachments/<id>` in the bucket `default`
/// (docs/attachments.md, "Server").
///
/// | operation | method | `resource` | `request.resource` |
/// |---|---|---|---|
/// | upload | `create` | `null` | the incoming object: declared size and content type, `sha256` = the id |
/// | download | `get` | the stored object | `null` |
///
/// `request.auth` is the caller's uid and token, as for documents. Without rules in force
/// (a core with no ``ServerConfiguration/rules``) every request is allowed, as for
/// documents; rules without a storage block deny every attachment request.
public struct RulesAttachmentPolicy: AttachmentAccessPolicy {
    /// The bucket in rules paths (`/b/default/o/attachments/<id>`).
    public static let bucket = "default"

    private let core: DocServerCore

    /// A policy that follows `core`'s rules, also after they are reloaded.
    public init(core: DocServerCore) {
        self.core = core
    }

    /// Evaluates the core's rules in force now, with `request.time` from the core's clock:
    /// allowed when the core has no rules or they allow, else denied with a `permissionDenied`
    /// located at ``AttachmentObject/path``.
    public func decide(_ operation: AttachmentOperation, tenant: TenantID, auth: AuthContext,
                       object: AttachmentObject) async -> AttachmentAccessDecision {
        guard let rules = core.rules else { return .allowed }
        let now = Timestamp(microseconds: core.configuration.clock.nowMicros())
        let request = Self.request(operation, auth: auth, object: object, time: now)
        let decision = rules.evaluate(storage: request)
        return decision.isAllowed ? .allowed : .denied(DocError(.permissionDenied, decision.message, at: object.path))
    }

    /// The storage rules request of `operation` on `object`.
    static func request(_ operation: AttachmentOperation, auth: AuthContext, object: AttachmentObject,
                        time: Timestamp) -> StorageRulesRequest {
        let stored = StorageObject(name: object.path, bucket: bucket, size: object.size,
                                   contentType: object.contentType, sha256: object.id.hex,
                                   timeCreated: object.createdAt ?? time)
        let rulesAuth = auth.rulesAuth
        switch operation {
        case .upload:
            return StorageRulesRequest(method: .create, path: object.path, bucket: bucket, auth: rulesAuth,
                                       resource: nil, requestResource: stored, time: time)
        case .download:
            return StorageRulesRequest(method: .get, path: object.path, bucket: bucket, auth: rulesAuth,
                                       resource: stored, requestResource: nil, time: time)
        }
    }
}

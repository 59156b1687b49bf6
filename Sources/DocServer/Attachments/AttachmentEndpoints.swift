internal import DocModel
internal import Hummingbird
internal import Logging

/// The attachment endpoints of ``DocServerHTTP`` (docs/attachments.md, "Server"):
///
/// - `GET /attachments/{id}/upload`: how far an upload got (``uploadState(_:context:)``);
/// - `PUT /attachments/{id}`: upload the bytes, whole or in chunks (``upload(_:context:)``);
/// - `GET /attachments/{id}`: download, with `Range: bytes=N-` (``download(_:context:)``).
///
/// Every request needs `Authorization: Bearer <token>`; the token's tenant is the only one
/// whose attachments the request reaches. Refusals are JSON
/// `{"error":{"code":"<DocError code>","message":"…"}}`.
struct AttachmentEndpoints: Sendable {
    /// The path prefix.
    static let path = "/attachments"

    let settings: AttachmentSettings?
    let policy: any AttachmentAccessPolicy
    let verifier: TokenVerifier
    /// The per-attachment upload locks, shared with the collector.
    let locks: UploadLocks
    let logger: Logger

    init(settings: AttachmentSettings?, core: DocServerCore, verifier: TokenVerifier, logger: Logger) {
        self.settings = settings
        self.policy = settings?.policy ?? RulesAttachmentPolicy(core: core)
        self.verifier = verifier
        self.locks = settings?.uploads ?? UploadLocks()
        self.logger = logger
    }

    /// Adds the endpoints to `router`.
    func register<Context: Hummingbird.RequestContext>(on router: Router<Context>) {
        let endpoints = self
        router.get(RouterPath(stringLiteral: Self.path + "/:id/upload")) { request, context -> Response in
            await endpoints.respond { () async throws(AttachmentHTTPError) in
                try await endpoints.uploadState(request, context: context)
            }
        }
        router.put(RouterPath(stringLiteral: Self.path + "/:id")) { request, context -> Response in
            await endpoints.respond { () async throws(AttachmentHTTPError) in
                try await endpoints.upload(request, context: context)
            }
        }
        router.get(RouterPath(stringLiteral: Self.path + "/:id")) { request, context -> Response in
            await endpoints.respond { () async throws(AttachmentHTTPError) in
                try await endpoints.download(request, context: context)
            }
        }
    }

    /// The response of `handler`, or of the error it threw.
    private func respond(_ handler: () async throws(AttachmentHTTPError) -> Response) async -> Response {
        do {
            return try await handler()
        } catch {
            if error.isServerFailure {
                logger.error("attachment request failed", metadata: ["error": "\(error.error)"])
            } else {
                logger.debug("attachment request refused", metadata: ["status": "\(error.status.code)", "error": "\(error.error)"])
            }
            return error.response
        }
    }

    // MARK: Shared steps

    /// A verified caller of one tenant.
    struct Caller {
        let auth: AuthContext
        let tenant: TenantID
    }

    /// The store, or 501 when the server has none.
    func store() throws(AttachmentHTTPError) -> any BlobStore {
        guard let settings else {
            throw AttachmentHTTPError(.notImplemented, .unimplemented,
                                      "this server does not store attachments (start it with an attachment store)")
        }
        return settings.store
    }

    /// The id in the path, or 400.
    func attachmentID(_ context: some Hummingbird.RequestContext) throws(AttachmentHTTPError) -> AttachmentID {
        do throws(DocError) {
            return try AttachmentID(context.parameters.get("id") ?? "")
        } catch {
            throw AttachmentHTTPError(.badRequest, error)
        }
    }

    /// The caller of the bearer token in `Authorization`, or 401.
    func authenticate(_ request: Request) async throws(AttachmentHTTPError) -> Caller {
        do throws(DocError) {
            let auth = try await verifier.verify(request.headers[.authorization] ?? "")
            return Caller(auth: auth, tenant: try TenantID(auth.tenant))
        } catch {
            throw AttachmentHTTPError(.unauthorized, DocError(.unauthenticated, error.message))
        }
    }

    /// Asks the policy; a denial is 403 with a message that names only the attachment (the
    /// rules' detail goes to the debug log).
    func authorize(_ operation: AttachmentOperation, _ caller: Caller, _ object: AttachmentObject) async throws(AttachmentHTTPError) {
        guard case .denied(let denial) = await policy.decide(operation, tenant: caller.tenant, auth: caller.auth, object: object) else {
            return
        }
        logger.debug("attachment access denied", metadata: [
            "caller": "\(caller.auth)", "operation": "\(operation)", "attachment": "\(object.id)", "detail": "\(denial)",
        ])
        throw AttachmentHTTPError(.forbidden, .permissionDenied,
                                  "Missing or insufficient permissions. (\(operation) of attachment \(object.id))")
    }

    /// Runs a store call; its error becomes the matching status.
    func storeCall<T>(_ body: () async throws(DocError) -> T) async throws(AttachmentHTTPError) -> T {
        do {
            return try await body()
        } catch {
            throw AttachmentHTTPError(store: error)
        }
    }
}

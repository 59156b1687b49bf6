internal import DocModel
internal import Hummingbird
internal import Logging
internal import Synchronization

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

    /// The core's ``ServerConfiguration/attachments``; `nil`: every request answers 501.
    private let configured: AttachmentSettings?
    let policy: any AttachmentAccessPolicy
    /// Whether a denial tells the client the rules' detail (``ServerConfiguration/explainDenials``).
    let explainDenials: Bool
    let verifier: TokenVerifier
    let logger: Logger
    /// The core's access log: one line per request.
    let accessLogger: Logger

    init(core: DocServerCore, verifier: TokenVerifier, logger: Logger) {
        accessLogger = core.accessLogger
        configured = core.configuration.attachments
        policy = configured?.policy ?? RulesAttachmentPolicy(core: core)
        explainDenials = core.configuration.explainDenials
        self.verifier = verifier
        self.logger = logger
    }

    /// Adds the endpoints to `router`.
    func register<Context: Hummingbird.RequestContext>(on router: Router<Context>) {
        let endpoints = self
        router.get(RouterPath(stringLiteral: Self.path + "/:id/upload")) { request, context -> Response in
            await endpoints.respond("attachment_upload_state") { () async throws(AttachmentHTTPError) in
                try await endpoints.uploadState(request, context: context)
            }
        }
        router.put(RouterPath(stringLiteral: Self.path + "/:id")) { request, context -> Response in
            await endpoints.respond("attachment_upload") { () async throws(AttachmentHTTPError) in
                try await endpoints.upload(request, context: context)
            }
        }
        router.get(RouterPath(stringLiteral: Self.path + "/:id")) { request, context -> Response in
            await endpoints.respond("attachment_download") { () async throws(AttachmentHTTPError) in
                try await endpoints.download(request, context: context)
            }
        }
    }

    /// The response of `handler`, or of the error it threw, and its access line (`op`).
    private func respond(_ op: String, _ handler: () async throws(AttachmentHTTPError) -> Response) async -> Response {
        let started = ContinuousClock.now
        let caller = AccessCaller()
        let (response, code) = await AccessCaller.$current.withValue(caller) { await answer(handler) }
        AccessLog.log(accessLogger, op: op, code: code, started: started, {
            let (tenant, uid) = caller.known ?? ("-", "-")
            return ["tenant": .string(tenant), "uid": .string(uid), "client": "-",
                    "status": .stringConvertible(response.status.code)]
        }())
        return response
    }

    /// Who an attachment request turned out to be, for its access line: ``authenticate(_:)``
    /// fills the request's (a task local, so the handlers need not pass it back).
    final class AccessCaller: Sendable {
        @TaskLocal static var current: AccessCaller?
        private let caller = Mutex<(String, String)?>(nil)
        var known: (String, String)? { caller.withLock { $0 } }
        func set(tenant: String, uid: String) { caller.withLock { $0 = (tenant, uid) } }
    }

    /// The response of `handler` and its code (`nil`: it succeeded).
    private func answer(_ handler: () async throws(AttachmentHTTPError) -> Response) async -> (Response, DocError.Code?) {
        do {
            return (try await handler(), nil)
        } catch {
            if error.isServerFailure {
                logger.error("attachment request failed", metadata: ["error": "\(error.error)"])
            } else {
                logger.debug("attachment request refused", metadata: ["status": "\(error.status.code)", "error": "\(error.error)"])
            }
            return (error.response, error.error.code)
        }
    }

    // MARK: Shared steps

    /// A verified caller of one tenant.
    struct Caller {
        let auth: AuthContext
        let tenant: TenantID
    }

    /// The attachment settings (store, upload locks, download chunks), or 501 when the server
    /// has none.
    func settings() throws(AttachmentHTTPError) -> AttachmentSettings {
        guard let configured else {
            throw AttachmentHTTPError(.notImplemented, .unimplemented,
                                      "this server does not store attachments (start it with an attachment store)")
        }
        return configured
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
            let caller = Caller(auth: auth, tenant: try TenantID(auth.tenant))
            AccessCaller.current?.set(tenant: auth.tenant, uid: auth.uid)
            return caller
        } catch {
            throw AttachmentHTTPError(.unauthorized, DocError(.unauthenticated, error.message))
        }
    }

    /// Asks the policy; a denial is 403 with a message that names only the operation and the
    /// attachment, as for documents (the rules' detail goes to the log at `info`, and to the
    /// client too with ``explainDenials``).
    func authorize(_ operation: AttachmentOperation, _ caller: Caller, _ object: AttachmentObject) async throws(AttachmentHTTPError) {
        guard case .denied(let denial) = await policy.decide(operation, tenant: caller.tenant, auth: caller.auth, object: object) else {
            return
        }
        logger.info("permission denied", metadata: [
            "tenant": "\(caller.tenant)", "uid": "\(caller.auth.uid)", "at": "\(object.path)", "detail": "\(denial.message)",
        ])
        if explainDenials { throw AttachmentHTTPError(.forbidden, denial) }
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

public import DocModel
public import DocProtocol
public import DocRules
public import Logging
internal import Prometheus
internal import Synchronization

/// The transport-independent server: what an HTTP / WebSocket layer calls.
///
/// A streaming transport is a thin loop around it:
///
/// ```swift
/// let hello = try FrameDecoder().decodeClientMessage(firstFrame)       // must be `hello`
/// let auth = try await verifier.verify(hello.token)                    // tenant, uid, claims
/// let connection = try await core.handshake(hello, auth: auth)
/// async let sending: Void = { while let frame = await connection.outbound.nextFrame() { try await socket.send(frame.encoded) } }()
/// for try await frame in socket.inbound { await core.receive(frame: frame, on: connection) }
/// await core.close(connection)
/// ```
///
/// A transport calls ``receive(frame:on:)`` for one connection's frames one at a time, in the
/// order they arrived (awaiting each): write results then come back in batch order, and a
/// target is added before the next frame is read. Different connections may call
/// concurrently.
///
/// Everything the server says to a connection (answers, changes from other clients' commits,
/// periodic snapshots, fatal errors) is delivered through ``ServerConnection/outbound``, in
/// order. The methods that answer a request also return what they delivered, for logs,
/// tests, and request/response transports.
///
/// Tenancy: a connection's tenant is set at ``handshake(auth:clientID:protocolVersion:)``
/// from the verified token, and every request on it is served from that tenant's database
/// alone; nothing in the API names another tenant's data.
///
/// Security rules: with a rule set (``ServerConfiguration/rules``, ``reloadRules(from:)``,
/// ``replaceRules(with:)``), every write of a batch, every listen target (when added, and a
/// document target again whenever its document changes) and every read is authorized for the
/// connection's caller (`request.auth`: its uid and token claims); a denial is a
/// `permissionDenied` error naming the operation, the path and the rules tried. Without one
/// only tenant isolation applies. See docs/rules.md, "Enforcement in the server".
///
/// The transport also calls ``tick()`` on a timer (e.g. every few seconds: idle listeners get
/// a global snapshot, so their resume tokens advance) and ``runMaintenance(sharingEvery:)``
/// now and then (e.g. hourly: prunes batch outcomes and change log entries past their
/// retention).
public final class DocServerCore: Sendable {
    /// The settings.
    public let configuration: ServerConfiguration
    /// The store every tenant's data lives in.
    public let store: any ServerStore
    /// The request handlers, by request type (see docs/request-documents.md).
    public let requests = RequestRegistry()
    let logger: Logger
    /// The access log: one line per client operation (docs/operations.md, "Logs").
    let accessLogger: Logger
    /// This core's metrics (its own registry; see ``metricsText()``).
    let metrics: ServerMetrics
    let requestProcessor: RequestProcessor
    private let hubs = Mutex<[TenantID: TenantHub]>([:])
    private let connections = Mutex<[String: ServerConnection]>([:])
    private let nextConnection = Atomic<Int>(1)
    private let closing = Atomic<Bool>(false)
    private let decoder: FrameDecoder
    private let ruleHolder: RulesHolder

    /// A core over `store`. Server lines go to `logger`; the access log (one `info` line per
    /// client operation) to `accessLogger`, by default to `logger`'s handler (`docctl serve`
    /// passes a logger labelled ``accessLoggerLabel``).
    public init(store: any ServerStore, configuration: ServerConfiguration = ServerConfiguration(),
                logger: Logger = Logger(label: "doccache.server"), accessLogger: Logger? = nil) {
        self.store = store
        self.configuration = configuration
        self.logger = logger
        self.accessLogger = accessLogger ?? Logger(label: AccessLog.label, factory: { _ in logger.handler })
        self.metrics = ServerMetrics()
        self.decoder = FrameDecoder(limits: configuration.frameLimits)
        self.requestProcessor = RequestProcessor(registry: requests, maxWritesPerCommit: configuration.frameLimits.maxWritesPerBatch,
                                                 logger: logger, metrics: metrics)
        self.ruleHolder = RulesHolder(configuration.rules, explainDenials: configuration.explainDenials)
    }

    /// The tenant's hub, opened on first use. A hub newly opened sweeps the tenant for
    /// requests left pending (unless `sweepingIfNew` is `false`: the caller sweeps).
    func hub(for tenant: TenantID, sweepingIfNew: Bool = true) async throws(DocError) -> TenantHub {
        if let hub = hubs.withLock({ $0[tenant] }) { return hub }
        let created: TenantHub
        do {
            let tenantStore = try await store.tenant(tenant)
            created = TenantHub(tenant: tenant, store: tenantStore, state: try await tenantStore.state(),
                                configuration: configuration, rules: ruleHolder, logger: logger, metrics: metrics)
        } catch {
            metrics.storeFailed(metrics.storeErrorsOpen, error)
            throw error
        }
        let (hub, isNew) = hubs.withLock { hubs in
            if let existing = hubs[tenant] { return (existing, false) }
            hubs[tenant] = created
            return (created, true)
        }
        // A tenant opened for the first time in this process may have requests left pending by
        // a crash: process them.
        if isNew && sweepingIfNew {
            scheduleRequestSweep(tenant: tenant, hub: hub)
        }
        return hub
    }

    // MARK: Handshake and close

    /// Opens a connection for a client whose bearer token the caller has verified
    /// (``TokenVerifier/verify(_:)``): the tenant, the uid and the claims the rules see as
    /// `request.auth` come from `auth`. Delivers `welcome` on the connection's outbound frames.
    ///
    /// - Throws: `failedPrecondition` for a protocol version the server does not speak,
    ///   `invalidArgument` for a bad tenant name or client id, `unavailable` while shutting
    ///   down or when the tenant's database cannot be opened. The transport sends the error
    ///   as a fatal `error` frame and closes.
    public func handshake(
        auth: AuthContext, clientID: String, protocolVersion: ProtocolVersion = .current
    ) async throws(DocError) -> ServerConnection {
        try await open(tenant: auth.tenant, uid: auth.uid, token: auth.token, clientID: clientID,
                       protocolVersion: protocolVersion)
    }

    /// ``handshake(auth:clientID:protocolVersion:)`` with the client id and protocol version of
    /// a `hello` frame (whose token the caller verified).
    public func handshake(_ hello: ClientMessage.Hello, auth: AuthContext) async throws(DocError) -> ServerConnection {
        try await handshake(auth: auth, clientID: hello.clientID, protocolVersion: hello.protocolVersion)
    }

    /// ``handshake(auth:clientID:protocolVersion:)`` for the claims of a verified token.
    ///
    /// - Throws: also `unauthenticated` when the claims' times are out of range.
    public func handshake(_ hello: ClientMessage.Hello, claims: AuthClaims) async throws(DocError) -> ServerConnection {
        try await handshake(hello, auth: try AuthContext(claims))
    }

    /// Opens a connection for a verified `tenant` and `uid` without further claims: the rules
    /// see `request.auth.token` as `{tenant, uid, sub}` only. Prefer
    /// ``handshake(auth:clientID:protocolVersion:)``, which carries the token's custom claims.
    public func handshake(
        tenant: String, uid: String, clientID: String, protocolVersion: ProtocolVersion = .current
    ) async throws(DocError) -> ServerConnection {
        try await open(tenant: tenant, uid: uid, token: Self.minimalToken(tenant: tenant, uid: uid), clientID: clientID,
                       protocolVersion: protocolVersion)
    }

    /// ``handshake(tenant:uid:clientID:protocolVersion:)`` with the client id and protocol
    /// version of a `hello` frame (whose token the caller verified).
    public func handshake(_ hello: ClientMessage.Hello, tenant: String, uid: String) async throws(DocError) -> ServerConnection {
        try await handshake(tenant: tenant, uid: uid, clientID: hello.clientID, protocolVersion: hello.protocolVersion)
    }

    /// `request.auth.token` of a caller known only by tenant and uid.
    static func minimalToken(tenant: String, uid: String) -> [String: Value] {
        ["tenant": .string(tenant), "uid": .string(uid), "sub": .string(uid)]
    }

    private func open(
        tenant: String, uid: String, token: [String: Value], clientID: String, protocolVersion: ProtocolVersion
    ) async throws(DocError) -> ServerConnection {
        let started = ContinuousClock.now
        do {
            let connection = try await openConnection(tenant: tenant, uid: uid, token: token, clientID: clientID,
                                                      protocolVersion: protocolVersion)
            metrics.connectionsOpened.increment()
            AccessLog.log(connection.accessLogger, op: "handshake", code: nil, started: started)
            return connection
        } catch {
            AccessLog.log(accessLogger, op: "handshake", code: error.code, started: started, [
                "tenant": .string(tenant), "uid": .string(uid), "client": .string(clientID),
            ])
            throw error
        }
    }

    private func openConnection(
        tenant: String, uid: String, token: [String: Value], clientID: String, protocolVersion: ProtocolVersion
    ) async throws(DocError) -> ServerConnection {
        guard !closing.load(ordering: .relaxed) else { throw DocError(.unavailable, "the server is shutting down") }
        guard ProtocolVersion.supported.contains(protocolVersion) else {
            throw DocError(.failedPrecondition,
                "protocol version \(protocolVersion) is not supported; this server speaks \(ProtocolVersion.supported.lowerBound)…\(ProtocolVersion.supported.upperBound)",
                at: "hello.protocolVersion")
        }
        guard !clientID.isEmpty, clientID.utf8.count <= configuration.frameLimits.maxClientIDBytes else {
            throw DocError(.invalidArgument, "a client id has 1…\(configuration.frameLimits.maxClientIDBytes) bytes", at: "hello.clientId")
        }
        let tenantID = try TenantID(tenant)
        let hub = try await hub(for: tenantID)
        let number = nextConnection.wrappingAdd(1, ordering: .relaxed).oldValue
        let id = "c-\(number)"
        let connection = ServerConnection(
            id: id, tenant: tenantID, uid: uid, authToken: token, clientID: clientID,
            outboxCapacity: configuration.outboxCapacity,
            accessLogger: AccessLog.connectionLogger(accessLogger, tenant: tenantID.rawValue, uid: uid, client: clientID, connection: id))
        await hub.attach(connection)
        connections.withLock { $0[connection.id] = connection }
        connection.outbound.send([.welcome(.init(protocolVersion: protocolVersion, connectionID: connection.id))])
        logger.info("connection opened", metadata: [
            "tenant": "\(tenantID)", "connection": "\(connection.id)", "uid": "\(uid)", "client": "\(clientID)",
        ])
        return connection
    }

    /// Closes a connection: its targets are dropped and its outbound frames end.
    public func close(_ connection: ServerConnection) async {
        connection.outbound.finish()
        guard connections.withLock({ $0.removeValue(forKey: connection.id) }) != nil else { return }
        if let hub = try? await hub(for: connection.tenant) { await hub.detach(connection) }
        logger.info("connection closed", metadata: ["tenant": "\(connection.tenant)", "connection": "\(connection.id)"])
    }

    // MARK: Incoming frames

    /// Handles one frame from the client: decodes and validates it and acts on it. Every
    /// answer goes to the connection's outbound frames. A bad frame changes nothing and is
    /// answered with an `invalidArgument` error — as a `writeError` for a batch whose ids were
    /// readable, as a `removed` target change for a target whose id was readable, and as an
    /// `error` frame otherwise.
    public func receive(frame: [UInt8], on connection: ServerConnection) async {
        metrics.framesReceived.increment()
        let started = ContinuousClock.now
        let message: ClientMessage
        do {
            message = try decoder.decodeClientMessage(frame)
        } catch {
            logger.info("bad frame", metadata: [
                "tenant": "\(connection.tenant)", "connection": "\(connection.id)", "error": "\(error.error)",
            ])
            connection.outbound.send([Self.answer(to: error)])
            metrics.rejected(error.error.code)
            switch error.subject {
            case .batch(let clientID, let batchID)?:
                AccessLog.log(connection.accessLogger, op: "commit", code: error.error.code, started: started,
                              ["batch": .stringConvertible(BatchKey(clientID: clientID, batchID: batchID))])
            case .target(let targetID)?:
                AccessLog.log(connection.accessLogger, op: "listen", code: error.error.code, started: started,
                              ["target": .stringConvertible(targetID)])
            case nil:
                AccessLog.log(connection.accessLogger, op: "frame", code: error.error.code, started: started)
            }
            return
        }
        await receive(message, on: connection)
    }

    /// ``receive(frame:on:)`` for a text frame.
    public func receive(text: String, on connection: ServerConnection) async {
        await receive(frame: Array(text.utf8), on: connection)
    }

    /// The answer to a frame that failed validation.
    static func answer(to error: FrameError) -> ServerMessage {
        switch error.subject {
        case .batch(let clientID, let batchID)?:
            return .writeError(.init(clientID: clientID, batchID: batchID, error: error.error))
        case .target(let targetID)?:
            return .targetChange(.init(state: .removed, targetIDs: [targetID], cause: error.error))
        case nil:
            return .error(.init(error.error, fatal: false))
        }
    }

    /// Handles one decoded message from the client.
    public func receive(_ message: ClientMessage, on connection: ServerConnection) async {
        switch message {
        case .hello:
            connection.outbound.send([.error(.init(DocError(.failedPrecondition, "the connection has already completed its handshake",
                                                            at: "hello"), fatal: false))])
        case .addTarget(let request):
            await watch(request, on: connection)
        case .removeTarget(let request):
            await unwatch(request, on: connection)
        case .writeHandshake(let request):
            await writeHandshake(request, on: connection)
        case .write(let batch):
            await write(batch, on: connection)
        case .writeBatches(let frame):
            await write(frame, on: connection)
        case .aggregate(let request):
            await aggregate(request, on: connection)
        }
    }

    // MARK: Aggregate

    /// Answers an `aggregate` request with one `aggregateResult`: the values as of the read's
    /// version, or the error (`permissionDenied` when the rules do not allow a `list` of the
    /// target, `invalidArgument` for a document target). The connection stays open either way.
    @discardableResult
    public func aggregate(_ request: ClientMessage.Aggregate, on connection: ServerConnection) async -> ServerMessage {
        let started = ContinuousClock.now
        guard let hub = await liveHub(for: connection) else {
            return .aggregateResult(.init(requestID: request.requestID, error: DocError(.unavailable, "the connection is closed")))
        }
        let answer: ServerMessage.AggregateResult
        do {
            let (result, version) = try await hub.aggregate(request.target, request.aggregations, auth: connection.rulesAuth,
                                                            connection: connection.id)
            answer = .init(requestID: request.requestID, result: result, readTime: version)
        } catch {
            metrics.rejected(error.code)
            answer = .init(requestID: request.requestID, error: error)
        }
        connection.outbound.send([.aggregateResult(answer)])
        AccessLog.log(connection.accessLogger, op: "aggregate", code: answer.error?.code, started: started,
                      ["target": .string(request.target.path.description)])
        return .aggregateResult(answer)
    }

    // MARK: Watch

    /// Starts listening to a target: delivers `added`, the documents (all, or since the resume
    /// token), `current` with a resume token and a global snapshot — or a `removed` target
    /// change with a cause: `invalidArgument` for a query target without a limit or with a
    /// limit above ``ServerConfiguration/maxListenLimit``, `permissionDenied` when the rules do
    /// not allow it (a document target needs `get` of its document, a query target `list` for
    /// every document it could return). Returns what it delivered.
    ///
    /// While it listens, a document target is checked again whenever its document changes: if
    /// the rules deny its new state, the target is removed with a `permissionDenied` cause.
    @discardableResult
    public func watch(_ request: ClientMessage.AddTarget, on connection: ServerConnection) async -> [ServerMessage] {
        let started = ContinuousClock.now
        guard let hub = await liveHub(for: connection) else { return [] }
        let messages = await hub.addTarget(request, on: connection)
        AccessLog.log(connection.accessLogger, op: "listen", code: Self.refusal(in: messages), started: started,
                      ["target": .stringConvertible(request.targetID)])
        return messages
    }

    /// The code of a refused target or a failed connection in what a watch delivered.
    private static func refusal(in messages: [ServerMessage]) -> DocError.Code? {
        switch messages.first {
        case .targetChange(let change)? where change.state == .removed: return change.cause?.code
        case .error(let error)?: return error.error.code
        case nil: return .unavailable
        default: return nil
        }
    }

    /// Stops listening to a target; delivers the `removed` acknowledgement.
    @discardableResult
    public func unwatch(_ request: ClientMessage.RemoveTarget, on connection: ServerConnection) async -> [ServerMessage] {
        let started = ContinuousClock.now
        guard let hub = await liveHub(for: connection) else { return [] }
        let messages = await hub.removeTarget(request.targetID, on: connection)
        AccessLog.log(connection.accessLogger, op: "unlisten", code: nil, started: started,
                      ["target": .stringConvertible(request.targetID)])
        return messages
    }

    private func liveHub(for connection: ServerConnection) async -> TenantHub? {
        guard connections.withLock({ $0[connection.id] }) != nil else { return nil }
        return try? await hub(for: connection.tenant)
    }

    // MARK: Write

    /// Opens the write stream: delivers and returns `writeHandshake` with a stream token.
    @discardableResult
    public func writeHandshake(_ request: ClientMessage.WriteHandshake, on connection: ServerConnection) async -> ServerMessage {
        let started = ContinuousClock.now
        defer { AccessLog.log(connection.accessLogger, op: "write_handshake", code: nil, started: started) }
        let token = await (try? hub(for: connection.tenant))?.streamToken() ?? [WatchToken.format]
        let message = ServerMessage.writeHandshake(.init(streamToken: token))
        connection.outbound.send([message])
        return message
    }

    /// Commits a batch from the connection's client (exactly once) and delivers and returns
    /// the answer: `writeResult`, or `writeError` (a permanent rejection, remembered for the
    /// batch, or a transient failure to retry).
    @discardableResult
    public func write(_ batch: ClientMessage.Write, on connection: ServerConnection) async -> ServerMessage {
        let answer: ServerMessage
        if batch.clientID != connection.clientID {
            let started = ContinuousClock.now
            answer = .writeError(.init(clientID: batch.clientID, batchID: batch.batchID, error: DocError(.invalidArgument,
                "the batch's client id \"\(batch.clientID)\" is not the connection's (\"\(connection.clientID)\")", at: "write.clientId")))
            metrics.rejected(.invalidArgument)
            AccessLog.log(connection.accessLogger, op: "commit", code: .invalidArgument, started: started,
                          ["batch": .stringConvertible(BatchKey(clientID: batch.clientID, batchID: batch.batchID))])
        } else {
            answer = await commit(tenant: connection.tenant, auth: connection.rulesAuth, clientID: batch.clientID,
                                  batchID: batch.batchID, mutations: batch.mutations, connection: connection)
        }
        connection.outbound.send([answer])
        return answer
    }

    /// Commits the batches of a `writeBatches` frame from the connection's client, each exactly
    /// once and on its own, as a group (one store transaction), and delivers and returns the
    /// `writeResults` frame: one answer per batch, in order, each what a `write` frame of that
    /// batch alone would have been answered with.
    @discardableResult
    public func write(_ frame: ClientMessage.WriteBatches, on connection: ServerConnection) async -> ServerMessage {
        let started = ContinuousClock.now
        let requestKeys = frame.batches.map { Self.requestKeys(of: $0.mutations) }
        let answers: [ServerMessage.WriteResults.Answer]
        var token: [UInt8]?
        if frame.clientID != connection.clientID {
            let error = DocError(.invalidArgument,
                "the batches' client id \"\(frame.clientID)\" is not the connection's (\"\(connection.clientID)\")", at: "writeBatches.clientId")
            answers = frame.batches.map { .failed(batchID: $0.batchID, error: error) }
            for _ in answers { metrics.rejected(error.code) }
        } else {
            (answers, token) = await commitGroup(frame.batches, requestKeys: requestKeys, on: connection)
            for case .failed(let batchID, let error) in answers { connection.batchFailed(batchID, error) }
        }
        for (keys, answer) in zip(requestKeys, answers) {
            var code: DocError.Code?
            if case .failed(_, let error) = answer { code = error.code }
            AccessLog.log(connection.accessLogger, op: "commit", code: code, started: started, {
                var metadata: Logger.Metadata = ["batch": .stringConvertible(BatchKey(clientID: frame.clientID, batchID: answer.batchID))]
                if let requestID = Self.requestID(of: keys) { metadata["request_id"] = .string(requestID) }
                return metadata
            }())
        }
        let message = ServerMessage.writeResults(.init(clientID: frame.clientID, answers: answers, streamToken: token))
        connection.outbound.send([message])
        return message
    }

    /// The group commit of a frame's batches (`requestKeys`: the request documents each
    /// writes) through the tenant's hub, and the answers. A frame refused before the hub
    /// counts one rejection per batch, as the hub does.
    private func commitGroup(
        _ batches: [ClientMessage.WriteBatches.Batch], requestKeys: [[DocumentKey]], on connection: ServerConnection
    ) async -> ([ServerMessage.WriteResults.Answer], [UInt8]?) {
        func refuseAll(_ error: DocError) -> ([ServerMessage.WriteResults.Answer], [UInt8]?) {
            for _ in batches { metrics.rejected(error.code) }
            return (batches.map { .failed(batchID: $0.batchID, error: error) }, nil)
        }
        guard !closing.load(ordering: .relaxed) else { return refuseAll(DocError(.unavailable, "the server is shutting down")) }
        if let halted = connection.haltedWrites(for: batches.map(\.batchID)) { return refuseAll(halted) }
        let hub: TenantHub
        do {
            hub = try await self.hub(for: connection.tenant)
        } catch {
            return refuseAll(error)
        }
        let grouped = zip(batches, requestKeys).map { batch, keys in
            TenantHub.GroupedBatch(key: BatchKey(clientID: connection.clientID, batchID: batch.batchID), mutations: batch.mutations,
                                   requestID: Self.requestID(of: keys))
        }
        let results = await hub.commitGroup(grouped, auth: connection.rulesAuth, connection: connection.id)
        let token = await hub.streamToken()
        let answers = results.indices.map { i in
            answer(results[i], for: grouped[i].key, requestKeys: requestKeys[i], tenant: connection.tenant, hub: hub)
        }
        return (answers, token)
    }

    /// The request documents a batch writes (their processing is logged with their id).
    private static func requestKeys(of mutations: [Mutation]) -> [DocumentKey] {
        mutations.contains { RequestDocument.isRequest($0.key) } ? mutations.map(\.key).filter(RequestDocument.isRequest) : []
    }

    /// The id a batch's request documents are logged with, if it writes any.
    private static func requestID(of requestKeys: [DocumentKey]) -> String? {
        requestKeys.isEmpty ? nil : requestKeys.map(\.description).joined(separator: ",")
    }

    /// The answer to a batch the hub processed; a committed batch's request documents are
    /// scheduled for processing.
    private func answer(
        _ result: Result<BatchOutcome, DocError>, for key: BatchKey, requestKeys: [DocumentKey], tenant: TenantID, hub: TenantHub
    ) -> ServerMessage.WriteResults.Answer {
        switch result {
        case .success(let outcome):
            switch outcome.result {
            case .committed(let version, let results):
                if !requestKeys.isEmpty { scheduleRequests(requestKeys, tenant: tenant, hub: hub, origin: key) }
                return .committed(batchID: key.batchID, commitVersion: version, results: results)
            case .rejected(let error):
                return .failed(batchID: key.batchID, error: error)
            }
        case .failure(let error):
            return .failed(batchID: key.batchID, error: error)
        }
    }

    /// Commits a batch outside any connection (for request/response transports and tools) for
    /// a verified caller: the same exactly-once processing and rules as ``write(_:on:)``; the
    /// answer is only returned.
    public func commit(auth: AuthContext, clientID: String, batchID: Int, mutations: [Mutation]) async -> ServerMessage {
        do {
            return await commit(tenant: try TenantID(auth.tenant), auth: auth.rulesAuth,
                                clientID: clientID, batchID: batchID, mutations: mutations, connection: nil)
        } catch {
            metrics.rejected(error.code)
            return .writeError(.init(clientID: clientID, batchID: batchID, error: error))
        }
    }

    /// ``commit(auth:clientID:batchID:mutations:)`` for a caller known only by tenant and uid
    /// (the rules see `request.auth.token` as `{tenant, uid, sub}`).
    public func commit(tenant: String, uid: String, clientID: String, batchID: Int, mutations: [Mutation]) async -> ServerMessage {
        do {
            return await commit(tenant: try TenantID(tenant), auth: RulesAuth(uid: uid, token: Self.minimalToken(tenant: tenant, uid: uid)),
                                clientID: clientID, batchID: batchID, mutations: mutations, connection: nil)
        } catch {
            metrics.rejected(error.code)
            return .writeError(.init(clientID: clientID, batchID: batchID, error: error))
        }
    }

    /// Commits a client's batch and writes its access line (`connection`: the connection it
    /// came on, if any).
    private func commit(tenant: TenantID, auth: RulesAuth, clientID: String, batchID: Int, mutations: [Mutation],
                        connection: ServerConnection?) async -> ServerMessage {
        let started = ContinuousClock.now
        let requestKeys = Self.requestKeys(of: mutations)
        let requestID = Self.requestID(of: requestKeys)
        let answer = await commitAnswer(tenant: tenant, auth: auth, clientID: clientID, batchID: batchID, mutations: mutations,
                                        connection: connection, requestKeys: requestKeys, requestID: requestID)
        let code: DocError.Code?
        if case .writeError(let error) = answer { code = error.error.code } else { code = nil }
        AccessLog.log(connection?.accessLogger ?? accessLogger, op: "commit", code: code, started: started, {
            var metadata: Logger.Metadata = ["batch": .stringConvertible(BatchKey(clientID: clientID, batchID: batchID))]
            if connection == nil {
                metadata["tenant"] = .string(tenant.rawValue)
                metadata["uid"] = .string(auth.uid)
                metadata["client"] = .string(clientID)
            }
            if let requestID { metadata["request_id"] = .string(requestID) }
            return metadata
        }())
        return answer
    }

    private func commitAnswer(tenant: TenantID, auth: RulesAuth, clientID: String, batchID: Int, mutations: [Mutation],
                              connection: ServerConnection?, requestKeys: [DocumentKey], requestID: String?) async -> ServerMessage {
        guard !closing.load(ordering: .relaxed) else {
            metrics.rejected(.unavailable)
            return .writeError(.init(clientID: clientID, batchID: batchID, error: DocError(.unavailable, "the server is shutting down")))
        }
        if let halted = connection?.haltedWrites(for: [batchID]) {
            metrics.rejected(halted.code)
            return .writeError(.init(clientID: clientID, batchID: batchID, error: halted))
        }
        let answer = await hubAnswer(tenant: tenant, auth: auth, clientID: clientID, batchID: batchID, mutations: mutations,
                                     connectionID: connection?.id, requestKeys: requestKeys, requestID: requestID)
        if case .writeError(let failure) = answer { connection?.batchFailed(batchID, failure.error) }
        return answer
    }

    /// The tenant hub's commit of the batch, as a `writeResult` or `writeError`.
    private func hubAnswer(tenant: TenantID, auth: RulesAuth, clientID: String, batchID: Int, mutations: [Mutation],
                           connectionID: String?, requestKeys: [DocumentKey], requestID: String?) async -> ServerMessage {
        let key = BatchKey(clientID: clientID, batchID: batchID)
        let hub: TenantHub
        do {
            hub = try await self.hub(for: tenant)
        } catch {
            metrics.rejected(error.code)
            return .writeError(.init(clientID: clientID, batchID: batchID, error: error))
        }
        let result = await hub.commit(key, mutations: mutations, auth: auth, connection: connectionID, requestID: requestID)
        let token = await hub.streamToken()
        switch answer(result, for: key, requestKeys: requestKeys, tenant: tenant, hub: hub) {
        case .committed(_, let version, let results):
            return .writeResult(.init(clientID: clientID, batchID: batchID, commitVersion: version, results: results,
                                      streamToken: token))
        case .failed(_, let error):
            return .writeError(.init(clientID: clientID, batchID: batchID, error: error, streamToken: token))
        }
    }

    // MARK: Request documents

    /// The processor's view of a tenant: the hub's commits (authored by the server), and reads
    /// straight from the store, without waiting for the hub's turn: a read is one consistent
    /// snapshot, and the commit verifies every document the processor read.
    func requestAccess(_ hub: TenantHub) -> RequestStoreAccess {
        let store = hub.store
        return RequestStoreAccess(
            read: { keys throws(DocError) in try await store.documents(keys) },
            commit: { key, mutations, requestID in
                await hub.commitAsServer(key, mutations: mutations, author: RequestDocument.serverAuthor, requestID: requestID)
            },
            pending: { () throws(DocError) in
                let query = try DocModel.Query(collection: RequestDocument.collection)
                    .filter("status", .equal, .string("pending"))
                    .limit(to: 500)
                return try await hub.query(try query.toTarget(), auth: nil).documents.map(\.key)
            })
    }

    /// Processes the requests a batch (`origin`) wrote, after its commit.
    private func scheduleRequests(_ keys: [DocumentKey], tenant: TenantID, hub: TenantHub, origin: BatchKey) {
        let access = requestAccess(hub)
        let processor = requestProcessor
        Task { await processor.process(keys, tenant: tenant.rawValue, access: access, origin: origin) }
    }

    private func scheduleRequestSweep(tenant: TenantID, hub: TenantHub) {
        let access = requestAccess(hub)
        let processor = requestProcessor
        Task { await processor.sweep(tenant: tenant.rawValue, access: access) }
    }

    /// Processes the pending request documents of every tenant in the store (call at start:
    /// requests committed before a crash and not yet processed are picked up; and
    /// periodically: a request whose processing failed for a transient reason is retried).
    /// Returns how many were processed.
    ///
    /// - Parameter interval: when given, a tenant is swept only if this instance claims the
    ///   sweep (``TenantStore/claim(_:at:every:)``, ``TenantChore/requestSweep``): no instance
    ///   sharing the store claimed it within `interval`, so the instances on one database
    ///   sweep each tenant about once per `interval` between them, not once each. `nil` (at
    ///   start): every tenant is swept now.
    @discardableResult
    public func recoverPendingRequests(sharingEvery interval: Duration? = nil) async -> Int {
        let tenants: [TenantID]
        do {
            tenants = try await store.tenantIDs()
        } catch {
            logger.error("cannot list tenants to recover pending requests", metadata: ["error": "\(error)"])
            return 0
        }
        let now = configuration.clock.nowMicros()
        let claimEvery = interval?.wholeMicroseconds
        var processed = 0
        for tenant in tenants {
            var claimed: (any TenantStore)?
            if let claimEvery {
                // Claimed before the hub is opened: an instance does not open every tenant
                // of the store only to leave its sweep to another.
                do throws(DocError) {
                    let open = hubs.withLock { $0[tenant] }?.store
                    let tenantStore = if let open { open } else { try await store.tenant(tenant) }
                    guard try await tenantStore.claim(.requestSweep, at: now, every: claimEvery) else { continue }
                    claimed = tenantStore
                } catch {
                    logger.warning("cannot claim the request sweep", metadata: ["tenant": "\(tenant)", "error": "\(error)"])
                    metrics.storeFailed(metrics.storeErrorsRequest, error)
                    continue
                }
            }
            var swept: Int?
            do {
                let hub = try await hub(for: tenant, sweepingIfNew: false)
                swept = await requestProcessor.sweep(tenant: tenant.rawValue, access: requestAccess(hub))
            } catch {
                logger.warning("cannot open a tenant to sweep its pending requests", metadata: ["tenant": "\(tenant)", "error": "\(error)"])
            }
            guard let swept else {
                // Not swept: another instance may sweep it now, not a period later.
                try? await claimed?.releaseClaim(.requestSweep, claimedAt: now)
                continue
            }
            processed += swept
        }
        return processed
    }

    // MARK: Reads (request/response)

    /// The documents with these keys that exist in the connection's tenant (tombstones
    /// included).
    ///
    /// - Throws: `permissionDenied` (located at the document) when the rules do not allow a
    ///   `get` of one of them, present or not.
    public func documents(_ keys: [DocumentKey], on connection: ServerConnection) async throws(DocError) -> [Document] {
        let read = try await hub(for: connection.tenant).documents(keys, auth: connection.rulesAuth, connection: connection.id)
        return keys.compactMap { read.documents[$0] }
    }

    /// The results of a bounded target in the connection's tenant (refused like an unbounded
    /// listen).
    ///
    /// - Throws: `invalidArgument` for an unbounded query, `permissionDenied` when the rules do
    ///   not allow the query as a `list` (decided from its constraints: rules are not filters).
    public func query(_ target: Target, on connection: ServerConnection) async throws(DocError) -> QueryRead {
        try await hub(for: connection.tenant).query(target, auth: connection.rulesAuth, connection: connection.id)
    }

    // MARK: Rules

    /// The security rules in force, or `nil` when only tenant isolation applies.
    public var rules: RuleSet? { ruleHolder.current }

    /// Loads the rules file at `path` and, only if it loads, puts it in force atomically (every
    /// operation is decided by the rules in force when it started) and checks every listen
    /// target again under it (targets it denies are removed with `permissionDenied`).
    ///
    /// On failure the rules in force stay, and the error is logged and thrown.
    ///
    /// - Returns: the new rule set (its ``RuleSet/warnings`` are logged too).
    /// - Throws: ``RulesError`` with the file, line and column and what was expected (`io` when
    ///   the file cannot be read).
    @discardableResult
    public func reloadRules(from path: String) async throws(RulesError) -> RuleSet {
        let loaded: RuleSet
        do {
            loaded = try RuleSet.load(path: path)
        } catch {
            logger.error("rules not reloaded: the file does not load; the rules in force stay", metadata: [
                "file": "\(path)", "error": "\(error)",
            ])
            throw error
        }
        for warning in loaded.warnings {
            logger.warning("rules warning", metadata: ["warning": "\(warning)"])
        }
        await replaceRules(with: loaded)
        logger.info("rules reloaded", metadata: ["file": "\(path)", "version": "\(loaded.version.rawValue)"])
        return loaded
    }

    /// Puts `rules` in force (`nil`: no rules, tenant isolation only) and checks every listen
    /// target again under them; returns how many targets they removed.
    @discardableResult
    public func replaceRules(with rules: RuleSet?) async -> Int {
        ruleHolder.replace(with: rules)
        var removed = 0
        for hub in hubs.withLock({ Array($0.values) }) { removed += await hub.revalidateTargets() }
        if removed > 0 { logger.info("targets removed by the new rules", metadata: ["targets": "\(removed)"]) }
        return removed
    }

    // MARK: Commits of other instances

    /// Follows the store's commit notices (``ServerStore/commitNotices()``) until cancelled:
    /// a tenant this process serves listeners for catches up with commits made by other
    /// server instances on the same database. Returns at once for a store only this process
    /// writes. The HTTP front runs it beside its timers.
    public func followCommits() async {
        guard let notices = store.commitNotices() else { return }
        for await notice in notices {
            guard let hub = hubs.withLock({ $0[notice.tenant] }) else { continue }
            await hub.noticed(notice.version)
        }
    }

    // MARK: Periodic work

    /// Sends a global snapshot to every listening connection that has not seen the latest
    /// commit of its tenant. Call it on a timer. Returns how many were sent.
    @discardableResult
    public func tick() async -> Int {
        var sent = 0
        for hub in hubs.withLock({ Array($0.values) }) { sent += await hub.tick() }
        return sent
    }

    /// Prunes batch outcomes and change log entries past their retention and, with an
    /// attachment store, deletes the attachments no live document refers to past their grace
    /// period (``AttachmentCollector``), tenant by tenant (tenants with live state in this
    /// process).
    ///
    /// - Parameter interval: `nil` (the default): every tenant is maintained now. Otherwise the
    ///   run is shared with the other server instances on the same store (`docctl serve` passes
    ///   half its maintenance interval): a tenant is maintained only if no instance has claimed
    ///   its maintenance within `interval` (``TenantStore/claim(_:at:every:)``), so
    ///   each tenant is maintained once per period, by whichever instance comes first; the
    ///   others count it in ``MaintenanceReport/tenantsMaintainedElsewhere``. A tenant whose
    ///   maintenance fails gives its claim back (``TenantStore/releaseClaim(_:claimedAt:)``):
    ///   the next run, of any instance, maintains it.
    public func runMaintenance(sharingEvery interval: Duration? = nil) async -> MaintenanceReport {
        var report = MaintenanceReport()
        let now = configuration.clock.nowMicros()
        let collector = configuration.attachments.map(AttachmentCollector.init(settings:))
        let claimEvery = interval?.wholeMicroseconds
        for (tenant, hub) in hubs.withLock({ Array($0) }) {
            var claimed = false
            do {
                if let claimEvery {
                    guard try await hub.store.claim(.maintenance, at: now, every: claimEvery) else {
                        report.tenantsMaintainedElsewhere += 1
                        continue
                    }
                    claimed = true
                }
                let (outcomes, changes) = try await hub.maintain(now: now)
                report.outcomesPruned += outcomes
                report.changesPruned += changes
                metrics.outcomesPruned.increment(by: Int64(outcomes))
                metrics.changeLogPruned.increment(by: Int64(changes))
                if let collector {
                    report.attachmentsDeleted += try await hub.collectAttachments(with: collector, now: now).count
                }
            } catch {
                report.failures[tenant.rawValue] = error.description
                metrics.storeFailed(metrics.storeErrorsMaintenance, error)
                logger.error("maintenance failed", metadata: ["tenant": "\(tenant)", "error": "\(error)"])
                // The next run, of any instance, tries again instead of a period later.
                if claimed { try? await hub.store.releaseClaim(.maintenance, claimedAt: now) }
            }
        }
        return report
    }

    /// Every tenant hub of this process, and the open connections (for the metrics).
    func liveHubs() -> [(TenantID, TenantHub)] { hubs.withLock { Array($0) } }
    var connectionCount: Int { connections.withLock { $0.count } }

    /// Whether the server can serve, and what it is serving.
    public func health() async -> ServerHealth {
        var reason: String?
        if closing.load(ordering: .relaxed) {
            reason = "the server is shutting down"
        } else {
            do { try await store.checkHealth() } catch { reason = error.description }
        }
        let all = hubs.withLock { Array($0.values) }
        var targets = 0
        for hub in all { targets += await hub.targetCount }
        return ServerHealth(
            status: reason == nil ? "ok" : "unavailable", reason: reason, tenants: all.count,
            connections: connections.withLock { $0.count }, targets: targets, protocolVersion: .current)
    }

    /// Shuts down gracefully: refuses new connections and writes, waits for the commits and
    /// watch work already queued, then ends every connection with a fatal `unavailable` error
    /// frame (clients reconnect elsewhere or later and resume). The store stays open; its
    /// owner closes it.
    public func shutdown() async {
        closing.store(true, ordering: .relaxed)
        for hub in hubs.withLock({ Array($0.values) }) { await hub.drain() }
        let open = connections.withLock { c in
            let all = Array(c.values)
            c.removeAll()
            return all
        }
        for connection in open {
            connection.outbound.finish(with: .error(.init(DocError(.unavailable, "the server is shutting down"), fatal: true)))
            if let hub = try? await hub(for: connection.tenant) { await hub.detach(connection) }
        }
        logger.info("server core shut down", metadata: ["connections": "\(open.count)"])
    }
}

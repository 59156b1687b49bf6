internal import DocModel
internal import Logging
internal import Prometheus

/// What the processor needs of a tenant's database: consistent reads and exactly-once
/// commits (the hub's, with the server as the author: rules do not apply to handlers).
struct RequestStoreAccess: Sendable {
    let read: @Sendable ([DocumentKey]) async throws(DocError) -> DocumentsRead
    /// Commits as the server; the last argument is the request id its log lines carry.
    let commit: @Sendable (BatchKey, [Mutation], String) async -> Result<BatchOutcome, DocError>
    let pending: @Sendable () async throws(DocError) -> [DocumentKey]
}

/// Processes request documents: for a `pending` request, checks its base versions, runs its
/// handler and commits the handler's writes together with the request's new `status`,
/// `result` or `error`, and `processedAt` — one atomic commit.
///
/// Exactly once, by construction rather than by memory:
/// - the final commit carries the precondition "the request document is still the pending
///   version that was read", so two processors (or a re-run after a crash) can never both
///   finalize it — the second sees it is no longer pending and stops;
/// - every document the handler read is verified in the same commit (its version, or its
///   absence), so a handler never acts on a state that changed before its writes landed (the
///   request is then processed again on the new state);
/// - work is found from the store: after a commit that creates requests, and by a sweep of
///   `requests` with `status == "pending"` when a tenant is opened (after a crash) and on
///   the server's tick.
///
/// Within a process, one request of a tenant is processed at a time (in arrival order): the
/// requests of a tenant usually touch the same few documents (accounts, invoices), and run
/// side by side they would mostly invalidate each other's reads. Across server instances
/// sharing a database they still race; a request whose reads changed is run again after a
/// short random pause, so racing processors fall out of step.
actor RequestProcessor {
    let registry: RequestRegistry
    let logger: Logger
    let metrics: ServerMetrics
    private var inFlight: Set<String> = []
    /// Per tenant: whether a request is being processed, and who waits for the turn.
    private var turns: [String: [CheckedContinuation<Void, Never>]] = [:]
    /// How often a request is re-run after its reads changed under it, before it is rejected
    /// with `aborted`.
    static let maxAttempts = 16

    init(registry: RequestRegistry, logger: Logger, metrics: ServerMetrics) {
        self.registry = registry
        self.logger = logger
        self.metrics = metrics
    }

    /// One request's processing: its log lines (`tenant`, `request_id`: the request document's
    /// path, and `request_batch`: the batch that wrote it, when known), when it started and,
    /// once read, its type as a metric label. Used on the processor only.
    final class Trace {
        let logger: Logger
        let requestID: String
        let started: ContinuousClock.Instant
        var type: String?

        init(logger: Logger, requestID: String, started: ContinuousClock.Instant) {
            self.logger = logger
            self.requestID = requestID
            self.started = started
        }
    }

    /// Processes the pending requests among `keys` (others are skipped); `origin` is the batch
    /// that wrote them (nil: found by a sweep). Returns how many were finalized by this call.
    @discardableResult
    func process(_ keys: [DocumentKey], tenant: String, access: RequestStoreAccess, origin: BatchKey? = nil) async -> Int {
        var finalized = 0
        for key in keys where RequestDocument.isRequest(key) {
            let flight = tenant + "/" + key.description
            guard inFlight.insert(flight).inserted else { continue }
            defer { inFlight.remove(flight) }
            await takeTurn(tenant)
            defer { endTurn(tenant) }
            if await processOne(key, tenant: tenant, access: access, origin: origin) { finalized += 1 }
        }
        return finalized
    }

    /// Waits until no other request of `tenant` is being processed here.
    private func takeTurn(_ tenant: String) async {
        if turns[tenant] == nil {
            turns[tenant] = []
        } else {
            await withCheckedContinuation { turns[tenant]!.append($0) }
        }
    }

    /// Passes the tenant's turn to the next waiter, if any.
    private func endTurn(_ tenant: String) {
        guard var waiting = turns[tenant], !waiting.isEmpty else {
            turns[tenant] = nil
            return
        }
        let next = waiting.removeFirst()
        turns[tenant] = waiting
        next.resume()
    }

    /// Finds the tenant's pending requests in the store and processes them.
    @discardableResult
    func sweep(tenant: String, access: RequestStoreAccess) async -> Int {
        do {
            return await process(try await access.pending(), tenant: tenant, access: access)
        } catch {
            logger.warning("request sweep failed", metadata: ["tenant": "\(tenant)", "error": "\(error)"])
            metrics.storeFailed(metrics.storeErrorsRequest, error)
            return 0
        }
    }

    /// One request, start to end. Returns whether this call finalized it.
    private func processOne(_ key: DocumentKey, tenant: String, access: RequestStoreAccess, origin: BatchKey?) async -> Bool {
        var logger = logger
        logger[metadataKey: "tenant"] = .string(tenant)
        logger[metadataKey: "request_id"] = .string(key.description)
        if let origin { logger[metadataKey: "request_batch"] = "\(origin)" }
        let trace = Trace(logger: logger, requestID: key.description, started: .now)
        logger.debug("processing request")
        for attempt in 1...Self.maxAttempts {
            let step: Step
            do {
                step = try await run(key, tenant: tenant, access: access, attempt: attempt, trace: trace)
            } catch {
                // A transient failure (storage unavailable): leave it pending for the next sweep.
                logger.warning("request processing failed; it stays pending", metadata: ["error": "\(error)"])
                metrics.requests(type: trace.type ?? "unknown").failed.increment()
                metrics.storeFailed(metrics.storeErrorsRequest, error)
                return false
            }
            switch step {
            case .notPending:
                logger.debug("request is not pending: nothing to do")
                return false
            case .finalized(let status):
                logger.info("request processed", metadata: ["status": .string(status)])
                return true
            case .retry:
                logger.debug("the request's reads changed before its commit: processing it again", metadata: [
                    "attempt": "\(attempt)",
                ])
                // Another processor (another instance) changed what this one read: pause a
                // little, longer each time, so the two fall out of step.
                try? await Task.sleep(for: .milliseconds(Int.random(in: 1...(4 * attempt))))
                continue
            }
        }
        // Contention: the documents kept changing under the handler.
        do {
            guard let request = try await pendingRequest(key, access: access, trace: trace) else { return false }
            let error = DocError(.aborted, "the request's documents kept changing while it was processed; create a new request to retry")
            let finalized = try await finalize(request, .reject(error), reads: [:], access: access, attempt: Self.maxAttempts + 1,
                                               trace: trace) == .finalized("rejected")
            if finalized { logger.info("request processed", metadata: ["status": "rejected", "error": "\(error.code)"]) }
            return finalized
        } catch {
            logger.warning("request processing failed; it stays pending", metadata: ["error": "\(error)"])
            metrics.requests(type: trace.type ?? "unknown").failed.increment()
            metrics.storeFailed(metrics.storeErrorsRequest, error)
            return false
        }
    }

    enum Step: Equatable {
        case notPending
        case finalized(String)
        case retry
    }

    private func pendingRequest(_ key: DocumentKey, access: RequestStoreAccess, trace: Trace) async throws(DocError) -> RequestDocument? {
        guard let document = try await access.read([key]).documents[key], !document.isTombstone else { return nil }
        guard case .string("pending")? = document.data.fields["status"] else { return nil }
        do {
            return try RequestDocument(document)
        } catch {
            // Malformed: record the problem on the request itself.
            var stub = RequestDocument.stub(document)
            stub.status = "pending"
            trace.logger.info("malformed request: rejecting it", metadata: ["error": "\(error)"])
            _ = try await finalize(stub, .reject(error), reads: [:], access: access, attempt: 0, trace: trace)
            return nil
        }
    }

    private func run(_ key: DocumentKey, tenant: String, access: RequestStoreAccess, attempt: Int, trace: Trace) async throws(DocError) -> Step {
        guard let request = try await pendingRequest(key, access: access, trace: trace) else { return .notPending }
        let handler = registry.handler(for: request.type)
        trace.type = handler == nil ? "unknown" : request.type
        guard let handler else {
            let known = registry.types
            let error = DocError(.invalidArgument, "unknown request type \"\(request.type)\"; this server handles \(known.isEmpty ? "no request types" : known.joined(separator: ", "))",
                                 at: "\(key).type")
            return try await finalize(request, .reject(error), reads: [:], access: access, attempt: attempt, trace: trace)
        }
        let reader = RequestReader { key throws(DocError) in try await access.read([key]).documents[key] }
        // Base versions: what the user saw must still be current.
        var stale: [String] = []
        for (baseKey, version) in request.base.sorted(by: { $0.key < $1.key }) {
            let current = try await reader.read(baseKey)
            if (current?.version ?? .none) != version { stale.append(baseKey.description) }
        }
        if !stale.isEmpty {
            let error = DocError(.failedPrecondition, "stale: \(stale.joined(separator: ", ")) changed since the request was made",
                                 at: "\(key).base")
            trace.logger.debug("stale base", metadata: ["stale": "\(stale.joined(separator: ","))"])
            return try await finalize(request, .reject(error), reads: reader.recorded, access: access, attempt: attempt, trace: trace)
        }
        let decision: RequestDecision
        do {
            decision = try await handler.decide(RequestContext(request: request, tenant: tenant, reader: reader, logger: trace.logger))
        } catch {
            if !CommitProcessor.isPermanent(error.code) { throw error }
            decision = .reject(error)
        }
        if case .apply(let writes, _) = decision {
            for write in writes {
                let writeKey: DocumentKey
                do { writeKey = try DocumentKey(write.path) } catch {
                    return try await finalize(request, .reject(DocError(.internal, "the handler wrote to an invalid path: \(error.message)")),
                                              reads: [:], access: access, attempt: attempt, trace: trace)
                }
                guard handler.allows(writeKey), !RequestDocument.isRequest(writeKey) else {
                    let error = DocError(.permissionDenied, "the \(request.type) handler may not write \(writeKey) (its scope: \(handler.scope.sorted().joined(separator: ", ")))")
                    return try await finalize(request, .reject(error), reads: [:], access: access, attempt: attempt, trace: trace)
                }
            }
        }
        return try await finalize(request, decision, reads: reader.recorded, access: access, attempt: attempt, trace: trace)
    }

    /// Commits the decision: verifications of every read, the handler's writes (when
    /// applying) and the request's new state, atomically.
    private func finalize(_ request: RequestDocument, _ decision: RequestDecision, reads: [DocumentKey: SnapshotVersion?],
                          access: RequestStoreAccess, attempt: Int, trace: Trace) async throws(DocError) -> Step {
        let requestKey = try DocumentKey(RequestDocument.collection + "/" + request.id)
        var mutations: [Mutation] = []
        for (key, version) in reads.sorted(by: { $0.key < $1.key }) where key != requestKey {
            mutations.append(.verify(key, version.map { .updateTime($0) } ?? .exists(false)))
        }
        var fields: [String: Value]
        let status: String
        switch decision {
        case .apply(let writes, let result):
            for write in writes { mutations.append(try Self.mutation(for: write)) }
            status = "applied"
            fields = ["status": .string(status), "result": result, "error": .null]
        case .reject(let error):
            mutations = mutations.filter { if case .verify = $0.kind { true } else { false } }
            status = "rejected"
            var errorFields: [String: Value] = ["code": .string(error.code.name), "message": .string(error.message)]
            if let location = error.location { errorFields["location"] = .string(location) }
            fields = ["status": .string(status), "result": .null, "error": .map(errorFields)]
        }
        var data = ObjectValue()
        for (name, value) in fields { data.fields[name] = value }
        var paths: [FieldPath] = []
        for name in fields.keys { paths.append(try FieldPath(segments: [name])) }
        mutations.append(Mutation(
            key: requestKey, kind: .patch(data, FieldMask(paths)),
            fieldTransforms: [.serverTimestamp(try FieldPath(segments: ["processedAt"]))],
            precondition: .updateTime(request.version)))
        let batch = BatchKey(clientID: "request:" + request.id, batchID: attempt * 2 + (status == "applied" ? 0 : 1))
        switch await access.commit(batch, mutations, trace.requestID) {
        case .success(let outcome):
            switch outcome.result {
            case .committed:
                // The type as `run` labelled it; a malformed request finalized before that is labelled here.
                let typeMetrics = metrics.requests(type: trace.type ?? (registry.handler(for: request.type) == nil ? "unknown" : request.type))
                (status == "applied" ? typeMetrics.applied : typeMetrics.rejected).increment()
                typeMetrics.duration.record(trace.started.duration(to: .now))
                trace.logger.debug("request outcome written", metadata: ["status": .string(status), "batch": "\(batch)"])
                return .finalized(status)
            case .rejected(let error) where error.code == .failedPrecondition:
                return .retry   // something read (or the request itself) changed: look again
            case .rejected(let error):
                guard status == "applied" else { throw error }
                // The handler's writes are invalid (too large, bad values): reject the request.
                return try await finalize(request, .reject(DocError(error.code, "the \(request.type) handler's writes were refused: \(error.message)")),
                                          reads: reads, access: access, attempt: attempt, trace: trace)
            }
        case .failure(let error):
            throw error
        }
    }

    static func mutation(for write: RequestWrite) throws(DocError) -> Mutation {
        switch write {
        case .set(let path, let fields):
            return .set(try DocumentKey(path), ObjectValue(fields))
        case .update(let path, let fields):
            var byPath: [FieldPath: Value] = [:]
            for (field, value) in fields { byPath[try FieldPath(field)] = value }
            return .update(try DocumentKey(path), fields: byPath)
        case .delete(let path):
            return .tombstone(try DocumentKey(path))
        }
    }
}

extension RequestDocument {
    /// A request document that could not be read, with enough to record its rejection.
    static func stub(_ document: Document) -> RequestDocument {
        RequestDocument(id: document.key.documentID, type: "", params: [:], base: [:], createdBy: nil, status: "",
                        version: document.version)
    }

    init(id: String, type: String, params: [String: Value], base: [DocumentKey: SnapshotVersion], createdBy: String?,
         status: String, version: SnapshotVersion) {
        self.id = id
        self.type = type
        self.params = params
        self.base = base
        self.createdBy = createdBy
        self.status = status
        self.version = version
    }
}

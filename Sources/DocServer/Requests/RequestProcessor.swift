internal import DocModel
internal import Logging
internal import Prometheus

/// What the processor needs of a tenant's database: consistent reads and exactly-once
/// commits (the hub's, with the server as the author: rules do not apply to handlers).
struct RequestStoreAccess: Sendable {
    let read: @Sendable ([DocumentKey]) async throws(DocError) -> DocumentsRead
    /// Commits as the server; the last argument is the request id its log lines carry.
    let commit: @Sendable (BatchKey, [Mutation], String) async -> Result<TenantHub.CommitAnswer, DocError>
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
/// Within a process, a tenant's requests are processed in turns, in arrival order: the
/// requests of a tenant usually touch the same few documents (accounts, invoices), and run
/// side by side they would mostly invalidate each other's reads. The requests that wait while
/// a turn runs are taken together at the next turn (up to ``maxGroupSize``) and committed as
/// a group, in one store commit (see `RequestGroup.swift`); a lone request is processed on
/// its own. Across server instances sharing a database they still race; a request whose reads
/// changed is run again after a short random pause, so racing processors fall out of step.
actor RequestProcessor {
    let registry: RequestRegistry
    let logger: Logger
    let metrics: ServerMetrics
    /// Per tenant: the requests waiting for a turn, in arrival order.
    private var queues: [String: [Ticket]] = [:]
    /// The requests queued or being processed, by tenant and key: a caller asking for one of
    /// them again waits for the same outcome instead of adding it twice.
    private var tickets: [String: Ticket] = [:]
    /// Per tenant: whether a turn is running, and who waits for the next one.
    private var turns: [String: [CheckedContinuation<Void, Never>]] = [:]
    /// How often a request is re-run after its reads changed under it, before it is rejected
    /// with `aborted`.
    static let maxAttempts = 16
    /// The most requests a turn takes together as one group (one commit).
    static let maxGroupSize = 64
    /// The most mutations one commit may hold (the hub's limit; a group's verifications count).
    let maxWritesPerCommit: Int

    init(registry: RequestRegistry, maxWritesPerCommit: Int = DocumentLimits.maxWritesPerBatch, logger: Logger, metrics: ServerMetrics) {
        self.registry = registry
        self.maxWritesPerCommit = maxWritesPerCommit
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

    /// A request waiting for its tenant's turn and, once a turn processed it, whether that
    /// finalized it. Used on the processor only.
    final class Ticket {
        let key: DocumentKey
        /// `tenant/key`: the ticket's entry in `tickets`.
        let flight: String
        /// The batch that wrote the request (nil: found by a sweep).
        let origin: BatchKey?
        let access: RequestStoreAccess
        /// Nil until processed; then whether the processing finalized the request.
        var finalized: Bool?

        init(key: DocumentKey, flight: String, origin: BatchKey?, access: RequestStoreAccess) {
            self.key = key
            self.flight = flight
            self.origin = origin
            self.access = access
        }
    }

    /// Processes the pending requests among `keys` (others are skipped); `origin` is the batch
    /// that wrote them (nil: found by a sweep). Returns how many of them were finalized while
    /// this call waited: by its own turns, or in a group another caller's turn processed. A key
    /// already queued by another caller is not queued again: this call waits for its outcome.
    @discardableResult
    func process(_ keys: [DocumentKey], tenant: String, access: RequestStoreAccess, origin: BatchKey? = nil) async -> Int {
        var mine: [Ticket] = []
        for key in keys where RequestDocument.isRequest(key) {
            let flight = tenant + "/" + key.description
            if let queued = tickets[flight] {
                if !mine.contains(where: { $0 === queued }) { mine.append(queued) }
                continue
            }
            let ticket = Ticket(key: key, flight: flight, origin: origin, access: access)
            tickets[flight] = ticket
            queues[tenant, default: []].append(ticket)
            mine.append(ticket)
        }
        // Each turn processes the oldest waiting requests of the tenant: this caller's come
        // up, in its own turn or in another caller's.
        while mine.contains(where: { $0.finalized == nil }) {
            await takeTurn(tenant)
            if mine.contains(where: { $0.finalized == nil }) { await processNext(tenant) }
            endTurn(tenant)
        }
        return mine.count { $0.finalized == true }
    }

    /// One turn: takes the oldest waiting requests of `tenant` (up to ``maxGroupSize``) and
    /// processes them — alone when there is one, else as a group; those a group leaves for
    /// later go back to the front of the queue.
    private func processNext(_ tenant: String) async {
        guard var queue = queues[tenant], !queue.isEmpty else { return }
        let taken = Array(queue.prefix(Self.maxGroupSize))
        queue.removeFirst(taken.count)
        queues[tenant] = queue.isEmpty ? nil : queue
        var deferred: [Ticket] = []
        if taken.count == 1 {
            let ticket = taken[0]
            ticket.finalized = await processOne(ticket.key, tenant: tenant, access: ticket.access, origin: ticket.origin)
        } else {
            deferred = await processGroup(taken, tenant: tenant)
        }
        if !deferred.isEmpty { queues[tenant] = deferred + (queues[tenant] ?? []) }
        for ticket in taken where ticket.finalized != nil { tickets[ticket.flight] = nil }
    }

    /// Waits until no turn of `tenant` is running here.
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

    /// Finds the tenant's pending requests in the store and processes them. Returns how many
    /// this call finalized, or `nil` when the pending requests could not be listed.
    @discardableResult
    func sweep(tenant: String, access: RequestStoreAccess) async -> Int? {
        do {
            return await process(try await access.pending(), tenant: tenant, access: access)
        } catch {
            logger.warning("request sweep failed", metadata: ["tenant": "\(tenant)", "error": "\(error)"])
            metrics.storeFailed(metrics.storeErrorsRequest, error)
            return nil
        }
    }

    /// The trace of one request's processing, with its logger.
    func trace(_ key: DocumentKey, tenant: String, origin: BatchKey?, started: ContinuousClock.Instant = .now) -> Trace {
        var logger = logger
        logger[metadataKey: "tenant"] = .string(tenant)
        logger[metadataKey: "request_id"] = .string(key.description)
        if let origin { logger[metadataKey: "request_batch"] = "\(origin)" }
        return Trace(logger: logger, requestID: key.description, started: started)
    }

    /// One request, start to end (`started`: when its processing began, if before this call —
    /// a group that fell back). Returns whether this call finalized it.
    func processOne(_ key: DocumentKey, tenant: String, access: RequestStoreAccess, origin: BatchKey?,
                    started: ContinuousClock.Instant = .now) async -> Bool {
        let trace = trace(key, tenant: tenant, origin: origin, started: started)
        let logger = trace.logger
        logger.debug("processing request")
        for attempt in 1...Self.maxAttempts {
            let step: Step
            do {
                step = try await run(key, tenant: tenant, access: access, attempt: attempt, trace: trace)
            } catch {
                // A transient failure (storage unavailable): leave it pending for the next sweep.
                stayedPending(error, trace: trace)
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
            let finalized = try await finalize(request, .reject(error, restsOnReads: false), reads: [:], access: access,
                                               attempt: Self.maxAttempts + 1, trace: trace) == .finalized("rejected")
            if finalized { logger.info("request processed", metadata: ["status": "rejected", "error": "\(error.code)"]) }
            return finalized
        } catch {
            stayedPending(error, trace: trace)
            return false
        }
    }

    /// Logs and counts a transient failure that leaves the request pending for the next sweep.
    private func stayedPending(_ error: DocError, trace: Trace) {
        trace.logger.warning("request processing failed; it stays pending", metadata: ["error": "\(error)"])
        metrics.requests(type: trace.type ?? "unknown").failed.increment()
        metrics.storeFailed(metrics.storeErrorsRequest, error)
    }

    enum Step: Equatable {
        case notPending
        case finalized(String)
        case retry
    }

    /// What processing decided for a request, before its commit.
    enum Verdict {
        /// Apply the handler's writes (converted and checked) and record `result`.
        case apply([Mutation], result: Value)
        /// Reject it with this error. `restsOnReads`: the decision rests on the documents read
        /// (a stale base, the handler's own rejection), so the commit still verifies them.
        case reject(DocError, restsOnReads: Bool)

        /// The request's new `status`.
        var status: String {
            if case .apply = self { "applied" } else { "rejected" }
        }

        /// Whether the decision rests on the documents read, so that its commit verifies them
        /// (always for `apply`).
        var restsOnReads: Bool {
            if case .reject(_, let restsOnReads) = self { restsOnReads } else { true }
        }
    }

    /// `document` when it is a request still to process: stored, not deleted, `status` "pending".
    static func pendingDocument(_ document: Document?) -> Document? {
        guard let document, !document.isTombstone, case .string("pending")? = document.data.fields["status"] else { return nil }
        return document
    }

    private func pendingRequest(_ key: DocumentKey, access: RequestStoreAccess, trace: Trace) async throws(DocError) -> RequestDocument? {
        guard let document = Self.pendingDocument(try await access.read([key]).documents[key]) else { return nil }
        do {
            return try RequestDocument(document)
        } catch {
            // Malformed: record the problem on the request itself.
            var stub = RequestDocument.stub(document)
            stub.status = "pending"
            trace.logger.info("malformed request: rejecting it", metadata: ["error": "\(error)"])
            _ = try await finalize(stub, .reject(error, restsOnReads: false), reads: [:], access: access, attempt: 0, trace: trace)
            return nil
        }
    }

    private func run(_ key: DocumentKey, tenant: String, access: RequestStoreAccess, attempt: Int, trace: Trace) async throws(DocError) -> Step {
        guard let request = try await pendingRequest(key, access: access, trace: trace) else { return .notPending }
        let reader = RequestReader { key throws(DocError) in try await access.read([key]).documents[key] }
        let verdict = try await evaluate(request, key: key, tenant: tenant, reader: reader, trace: trace)
        return try await finalize(request, verdict, reads: reader.recorded, access: access, attempt: attempt, trace: trace)
    }

    /// Decides a pending request: finds its type's handler, checks its base versions against
    /// what `reader` sees (a document in `changed` — written by an earlier request of its group
    /// — counts as changed whatever its version), runs the handler and checks and converts its
    /// writes. Throws only transient failures; every other problem is a rejection.
    func evaluate(_ request: RequestDocument, key: DocumentKey, tenant: String, reader: RequestReader,
                  changed: Set<DocumentKey> = [], trace: Trace) async throws(DocError) -> Verdict {
        let handler = registry.handler(for: request.type)
        trace.type = handler == nil ? "unknown" : request.type
        guard let handler else {
            let known = registry.types
            let error = DocError(.invalidArgument, "unknown request type \"\(request.type)\"; this server handles \(known.isEmpty ? "no request types" : known.joined(separator: ", "))",
                                 at: "\(key).type")
            return .reject(error, restsOnReads: false)
        }
        // Base versions: what the user saw must still be current.
        var stale: [String] = []
        for (baseKey, version) in request.base.sorted(by: { $0.key < $1.key }) {
            let current = try await reader.read(baseKey)
            if changed.contains(baseKey) || (current?.version ?? .none) != version { stale.append(baseKey.description) }
        }
        if !stale.isEmpty {
            let error = DocError(.failedPrecondition, "stale: \(stale.joined(separator: ", ")) changed since the request was made",
                                 at: "\(key).base")
            trace.logger.debug("stale base", metadata: ["stale": "\(stale.joined(separator: ","))"])
            return .reject(error, restsOnReads: true)
        }
        let decision: RequestDecision
        do {
            decision = try await handler.decide(RequestContext(request: request, tenant: tenant, reader: reader, logger: trace.logger))
        } catch {
            if !CommitProcessor.isPermanent(error.code) { throw error }
            decision = .reject(error)
        }
        switch decision {
        case .reject(let error):
            return .reject(error, restsOnReads: true)
        case .apply(let writes, let result):
            var mutations: [Mutation] = []
            for write in writes {
                let writeKey: DocumentKey
                do { writeKey = try DocumentKey(write.path) } catch {
                    return .reject(DocError(.internal, "the handler wrote to an invalid path: \(error.message)"), restsOnReads: false)
                }
                guard handler.allows(writeKey), !RequestDocument.isRequest(writeKey) else {
                    let error = DocError(.permissionDenied, "the \(request.type) handler may not write \(writeKey) (its scope: \(handler.scope.sorted().joined(separator: ", ")))")
                    return .reject(error, restsOnReads: false)
                }
                do { mutations.append(try Self.mutation(for: write)) } catch {
                    return .reject(DocError(.internal, "the handler's write to \(writeKey) is invalid: \(error.message)"), restsOnReads: false)
                }
            }
            return .apply(mutations, result: result)
        }
    }

    /// Commits the verdict: verifications of every read (when it rests on them), the handler's
    /// writes (when applying) and the request's new state, atomically.
    private func finalize(_ request: RequestDocument, _ verdict: Verdict, reads: [DocumentKey: SnapshotVersion?],
                          access: RequestStoreAccess, attempt: Int, trace: Trace) async throws(DocError) -> Step {
        let requestKey = try request.documentKey
        var mutations: [Mutation] = []
        if verdict.restsOnReads {
            for (key, version) in reads.sorted(by: { $0.key < $1.key }) where key != requestKey {
                mutations.append(Self.verification(key, version))
            }
        }
        if case .apply(let writes, _) = verdict { mutations += writes }
        mutations.append(try Self.statusPatch(request, verdict))
        let status = verdict.status
        let batch = BatchKey(clientID: "request:" + request.id, batchID: attempt * 2 + (status == "applied" ? 0 : 1))
        switch await access.commit(batch, mutations, trace.requestID) {
        case .success(let answer):
            switch answer.outcome.result {
            case .committed where !answer.recorded:
                // The same outcome was already stored: another processor (another instance)
                // finalized the request with the same decision first. Counted there.
                trace.logger.debug("request finalized by another processor", metadata: ["batch": "\(batch)"])
                return .notPending
            case .committed:
                recordFinalized(request, status: status, batch: batch, trace: trace)
                return .finalized(status)
            case .rejected(let error) where error.code == .failedPrecondition:
                return .retry   // something read (or the request itself) changed: look again
            case .rejected(let error):
                guard status == "applied" else { throw error }
                // The handler's writes are invalid (too large, bad values): reject the request.
                return try await finalize(request, .reject(DocError(error.code, "the \(request.type) handler's writes were refused: \(error.message)"), restsOnReads: true),
                                          reads: reads, access: access, attempt: attempt, trace: trace)
            }
        case .failure(let error):
            throw error
        }
    }

    /// Counts a request whose outcome was committed in the metrics (by `trace.type`, as
    /// `evaluate` labelled it; a malformed request finalized before that is labelled here) and
    /// logs the commit.
    func recordFinalized(_ request: RequestDocument, status: String, batch: BatchKey, trace: Trace) {
        let typeMetrics = metrics.requests(type: trace.type ?? (registry.handler(for: request.type) == nil ? "unknown" : request.type))
        (status == "applied" ? typeMetrics.applied : typeMetrics.rejected).increment()
        typeMetrics.duration.record(trace.started.duration(to: .now))
        trace.logger.debug("request outcome written", metadata: ["status": .string(status), "batch": "\(batch)"])
    }

    /// The check that a document read is unchanged at commit: still at `version`, or still
    /// absent (nil).
    static func verification(_ key: DocumentKey, _ version: SnapshotVersion?) -> Mutation {
        .verify(key, version.map { .updateTime($0) } ?? .exists(false))
    }

    /// The request's final state: a patch of `status`, `result` / `error` and `processedAt`
    /// (the commit time), on condition that the request is still the version that was read.
    static func statusPatch(_ request: RequestDocument, _ verdict: Verdict) throws(DocError) -> Mutation {
        var fields: [String: Value]
        switch verdict {
        case .apply(_, let result):
            fields = ["status": .string(verdict.status), "result": result, "error": .null]
        case .reject(let error, _):
            var errorFields: [String: Value] = ["code": .string(error.code.name), "message": .string(error.message)]
            if let location = error.location { errorFields["location"] = .string(location) }
            fields = ["status": .string(verdict.status), "result": .null, "error": .map(errorFields)]
        }
        var data = ObjectValue()
        for (name, value) in fields { data.fields[name] = value }
        var paths: [FieldPath] = []
        for name in fields.keys { paths.append(try FieldPath(segments: [name])) }
        return Mutation(
            key: try request.documentKey, kind: .patch(data, FieldMask(paths)),
            fieldTransforms: [.serverTimestamp(try FieldPath(segments: ["processedAt"]))],
            precondition: .updateTime(request.version))
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
    /// The request's document key (`requests/{id}`).
    var documentKey: DocumentKey {
        get throws(DocError) { try DocumentKey(Self.collection + "/" + id) }
    }

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

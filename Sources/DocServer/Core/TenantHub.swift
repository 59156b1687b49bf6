internal import DocModel
internal import DocProtocol
internal import DocRules
internal import Logging
internal import Prometheus

/// Everything live about one tenant: its commits and its listeners (the watch hub).
///
/// One actor per tenant, so tenants work in parallel. Within a tenant, commits, target
/// additions and removals, periodic snapshots and maintenance run one at a time, in arrival
/// order (a FIFO lock held across the store's `await`s, which the actor alone would not
/// guarantee): a commit and its fan-out to every listener finish before the next request
/// starts, so each connection receives changes in commit order, and a target added at
/// version V receives exactly the commits after V. The one exception to arrival order: a
/// commit that arrives while a group's leader waits for the hub joins that leader's group
/// (``submit(_:)``), ahead of operations that queued after the leader.
///
/// Several server instances may share one store (PostgreSQL): then commits also arrive from
/// other processes. The hub keeps ``delivered``, the version through which every one of its
/// targets has been given every change; all its targets are consistent at that version. A
/// commit of its own whose predecessor is ``delivered`` is fanned out directly; anything
/// else — a commit notice from the store, a tick, a commit of its own after someone else's,
/// a target read at a newer version — first reads the change log after ``delivered`` and
/// fans it out version by version (``catchUp(through:)``). The change log is the source of
/// truth: a lost notice only delays delivery until the next tick.
///
/// With rules (``RulesHolder``), the hub authorizes what it serves: each write of a batch (in
/// the ``CommitProcessor``), each target when it is added (document targets `get`, query
/// targets `list`), each document target again whenever its document changes (a document
/// whose new state the rules deny removes the target with `permissionDenied`), every target
/// again when the rules are replaced, and request/response reads. Rule lookups read the store
/// inside the hub's serialization, so they see the same state as the operation they decide.
actor TenantHub {
    let tenant: TenantID
    let store: any TenantStore
    let configuration: ServerConfiguration
    let processor: CommitProcessor
    let rules: RulesHolder
    let logger: Logger
    let metrics: ServerMetrics

    /// A connection's listening state.
    struct ConnectionWatch {
        let connection: ServerConnection
        var targets: [Int32: WatchedTarget] = [:]
        /// The last global snapshot the connection was sent.
        var snapshotVersion: SnapshotVersion = .none
    }

    private(set) var connections: [String: ConnectionWatch] = [:]
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    /// The tenant database's incarnation (resume tokens carry it).
    let incarnation: UInt64
    /// Every target of this hub has been given every change up to this version.
    private(set) var delivered: SnapshotVersion

    init(tenant: TenantID, store: any TenantStore, state: TenantState, configuration: ServerConfiguration, rules: RulesHolder,
         logger: Logger, metrics: ServerMetrics) {
        self.tenant = tenant
        self.metrics = metrics
        self.store = store
        self.incarnation = state.incarnation
        self.delivered = state.lastVersion
        self.configuration = configuration
        self.rules = rules
        var logger = logger
        logger[metadataKey: "tenant"] = "\(tenant)"
        self.logger = logger
        self.processor = CommitProcessor(
            store: store, clock: configuration.clock, maxWritesPerBatch: configuration.frameLimits.maxWritesPerBatch,
            attachments: configuration.attachments?.store, logger: logger)
    }

    // MARK: Serialization

    private func acquire() async {
        if busy {
            await withCheckedContinuation { waiters.append($0) }
        } else {
            busy = true
        }
    }

    private func release() {
        if waiters.isEmpty {
            busy = false
        } else {
            waiters.removeFirst().resume()   // the lock passes straight to the next waiter
        }
    }

    /// How many callers wait for the hub (for tests).
    var hubWaiterCount: Int { waiters.count }

    /// Waits until everything queued before this call has finished (for draining on shutdown).
    func drain() async {
        await acquire()
        release()
    }

    // MARK: Connections

    func attach(_ connection: ServerConnection) async {
        await acquire()
        defer { release() }
        connections[connection.id] = ConnectionWatch(connection: connection)
    }

    func detach(_ connection: ServerConnection) async {
        await acquire()
        defer { release() }
        connections[connection.id] = nil
    }

    var targetCount: Int { connections.values.reduce(0) { $0 + $1.targets.count } }

    /// Cuts a connection off after a storage failure: a fatal `error` frame; the client
    /// reconnects and resumes.
    private func fail(_ connection: ServerConnection, _ error: DocError) -> [ServerMessage] {
        logger.error("connection failed", metadata: ["connection": "\(connection.id)", "error": "\(error)"])
        metrics.storeFailed(metrics.storeErrorsRead, error)
        let message = ServerMessage.error(.init(DocError(.unavailable, "the server could not read: \(error.message)"), fatal: true))
        connection.outbound.finish(with: message)
        connections[connection.id] = nil
        return [message]
    }

    // MARK: Writes

    /// The time of a request that is not a commit (`request.time` of reads and targets).
    private func now() -> Timestamp { Timestamp(microseconds: configuration.clock.nowMicros()) }

    /// Commits a batch (exactly once), authorized for `auth` under the current rules, and fans
    /// its changes out to the listeners. Its log lines (denials too) carry the batch, the
    /// `connection` it came on and the `requestID` of the request documents it writes.
    func commit(_ key: BatchKey, mutations: [Mutation], auth: RulesAuth, connection: String? = nil,
                requestID: String? = nil) async -> Result<BatchOutcome, DocError> {
        await submit(CommitUnit(batches: [GroupedBatch(key: key, mutations: mutations, requestID: requestID)],
                                author: .client(auth, connection: connection)))[0].map(\.outcome)
    }

    /// Commits a batch the server itself makes (request processing): exactly once, not
    /// subject to the rules, fanned out like any other. The answer says whether this call
    /// stored the outcome, or found it stored (by another instance, or an earlier try).
    func commitAsServer(_ key: BatchKey, mutations: [Mutation], author: String, requestID: String? = nil) async -> Result<CommitAnswer, DocError> {
        await submit(CommitUnit(batches: [GroupedBatch(key: key, mutations: mutations, requestID: requestID)],
                                author: .server(uid: author)))[0]
    }

    /// A batch's answer: its outcome, and whether this commit stored it
    /// (``CommitProcessor/Processed/recorded``; `false` when it was answered from the outcome
    /// stored before, or nothing was stored).
    struct CommitAnswer: Sendable {
        var outcome: BatchOutcome
        var recorded: Bool
    }

    /// Commits the batches of one client frame, each on its own and in order, exactly as
    /// ``commit(_:mutations:auth:connection:requestID:)`` would: one answer per batch. After a
    /// batch that fails (a transient failure: the client sends it again), the frame's later
    /// batches are not attempted, so that none of them commits before it.
    func commitGroup(_ batches: [GroupedBatch], auth: RulesAuth, connection: String?) async -> [Result<BatchOutcome, DocError>] {
        await submit(CommitUnit(batches: batches, author: .client(auth, connection: connection))).map { $0.map(\.outcome) }
    }

    /// The hub's logger with a batch's `batch`, `connection` and `request_id`.
    private func batchLogger(_ key: BatchKey, connection: String?, requestID: String?) -> Logger {
        var logger = logger
        logger[metadataKey: "batch"] = "\(key)"
        if let connection { logger[metadataKey: "connection"] = .string(connection) }
        if let requestID { logger[metadataKey: "request_id"] = .string(requestID) }
        return logger
    }

    /// One batch of a group commit.
    struct GroupedBatch: Sendable {
        var key: BatchKey
        var mutations: [Mutation]
        /// The request documents it writes, for its log lines.
        var requestID: String?
    }

    /// Who writes a ``CommitUnit``.
    enum Author: Sendable {
        /// A client, authorized under the rules for `auth`, on `connection` (if any).
        case client(RulesAuth, connection: String?)
        /// The server itself (request processing), as `uid`: the rules do not apply.
        case server(uid: String)

        var uid: String {
            switch self {
            case .client(let auth, _): auth.uid
            case .server(let uid): uid
            }
        }

        var connection: String? {
            if case .client(_, let connection) = self { connection } else { nil }
        }

        var isClient: Bool {
            if case .client = self { true } else { false }
        }
    }

    /// What one caller commits: a single batch or the batches of one frame, in order.
    struct CommitUnit: Sendable {
        var batches: [GroupedBatch]
        var author: Author
    }

    /// A unit waiting for the next group, and where its answers go.
    private struct QueuedUnit {
        var unit: CommitUnit
        var continuation: CheckedContinuation<[Result<CommitAnswer, DocError>], Never>
    }

    /// The most units (frames, or the server's own commits) one group's transaction takes;
    /// with the most batches (``maxGroupBatches``) it bounds the transaction.
    static let maxGroupUnits = 32
    /// The most batches one group's transaction takes (a single unit may hold more: a frame
    /// of up to `FrameLimits.maxBatchesPerFrame` batches is always committed whole).
    private var maxGroupBatches: Int { configuration.frameLimits.maxBatchesPerFrame }

    /// Units that arrived while a group's leader waits for the hub (``submit(_:)``).
    private var queuedUnits: [QueuedUnit] = []
    /// Whether a caller holds the lead of the next group and waits for the hub.
    private var leaderWaiting = false
    /// How many units wait for the next group, its leader included.
    var waitingUnitCount: Int { queuedUnits.count + (leaderWaiting ? 1 : 0) }

    /// Commits a unit, together with every unit that arrives while it waits for the tenant's
    /// serialization (group commit across connections): the first caller to arrive leads the
    /// group; when the hub is free it takes all the waiting units and, still holding the hub,
    /// commits them in arrival order as groups of at most ``maxGroupUnits`` units and
    /// ``maxGroupBatches`` batches (each one store transaction: ``commitUnits(_:)``), handing
    /// each follower its answers as its group finishes; the leader gets its own after the last
    /// group, when it lets the hub go (so a drain queued behind it finds every group stored).
    /// A unit arriving later leads the next group. With no contention a group is one unit,
    /// committed as before.
    private func submit(_ unit: CommitUnit) async -> [Result<CommitAnswer, DocError>] {
        if leaderWaiting {
            return await withCheckedContinuation { queuedUnits.append(QueuedUnit(unit: unit, continuation: $0)) }
        }
        leaderWaiting = true
        await acquire()
        leaderWaiting = false
        let followers = queuedUnits
        queuedUnits = []
        let units = [unit] + followers.map(\.unit)
        var answers: [[Result<CommitAnswer, DocError>]] = []
        while answers.count < units.count {
            let group = units[answers.count..<groupEnd(units, from: answers.count)]
            answers += await commitUnits(Array(group))
            for i in group.indices where i > 0 { followers[i - 1].continuation.resume(returning: answers[i]) }
        }
        release()
        return answers[0]
    }

    /// The end of the group that starts at `start`: the units after it, in order, while the
    /// group stays within ``maxGroupUnits`` and ``maxGroupBatches`` (at least one unit).
    private func groupEnd(_ units: [CommitUnit], from start: Int) -> Int {
        var end = start + 1
        var batches = units[start].batches.count
        while end < units.count, end - start < Self.maxGroupUnits, batches + units[end].batches.count <= maxGroupBatches {
            batches += units[end].batches.count
            end += 1
        }
        return end
    }

    /// Commits units, inside the serialization: a single batch alone (``commitAlone(_:of:)``),
    /// several as one group (``commitTogether(_:)``). One list of answers per unit.
    private func commitUnits(_ units: [CommitUnit]) async -> [[Result<CommitAnswer, DocError>]] {
        if units.count == 1, units[0].batches.count == 1 {
            return [[await commitAlone(units[0].batches[0], of: units[0].author)]]
        }
        return await commitTogether(units)
    }

    /// The rules context of a batch, or nil for the server's own batches.
    private func access(for author: Author, logger: Logger) -> AccessContext? {
        if case .client(let auth, _) = author { rules.context(for: auth, logger: logger) } else { nil }
    }

    /// Commits one batch on its own (its own store commit).
    private func commitAlone(_ batch: GroupedBatch, of author: Author) async -> Result<CommitAnswer, DocError> {
        let logger = batchLogger(batch.key, connection: author.connection, requestID: batch.requestID)
        let started = ContinuousClock.now
        do {
            let processed = try await processor.process(
                batch: batch.key, mutations: batch.mutations, uid: author.uid, access: access(for: author, logger: logger), logger: logger,
                fromClient: author.isClient)
            if processed.recorded { metrics.storeCommits.increment() }
            await finish(processed, fromClient: author.isClient, took: started.duration(to: .now))
            return .success(CommitAnswer(outcome: processed.outcome, recorded: processed.recorded))
        } catch {
            failed(error, author: author, logger: logger)
            return .failure(error)
        }
    }

    /// Records a batch that failed.
    private func failed(_ error: DocError, author: Author, logger: Logger) {
        logger.warning("batch failed", metadata: ["error": "\(error)"])
        if author.isClient { metrics.rejected(error.code) }
        // An answer about the batch's id is the client's, not the store's.
        if !error.isBatchIDConflict { metrics.storeFailed(metrics.storeErrorsCommit, error) }
    }

    /// Commits the units' batches as one group: each batch on its own, in order, exactly as
    /// ``commitAlone(_:of:)`` would (its stored outcome, its author's rules, preconditions,
    /// commit version, change log entries; a rejection or a failure stays with its batch), each
    /// seeing the batches before it, but all in one store transaction with one synced write
    /// (``GroupCommitView``, ``TenantStore/commitGroup(_:)``). After a batch that fails, the
    /// later batches of its unit are not attempted; other units go on. If the transaction
    /// fails, the batches are committed one by one on fresh reads (those it did store are then
    /// answered from their outcomes). Fans the commits out in order.
    private func commitTogether(_ units: [CommitUnit]) async -> [[Result<CommitAnswer, DocError>]] {
        let started = ContinuousClock.now
        let view = GroupCommitView(base: store)
        // The group's batches in order, each with its unit and logger.
        var batches: [GroupBatch] = []
        for (u, unit) in units.enumerated() {
            for batch in unit.batches {
                batches.append(GroupBatch(batch: batch, unit: u, logger: batchLogger(batch.key, connection: unit.author.connection, requestID: batch.requestID)))
            }
        }
        do {
            try await view.prefetch(batches: batches.map(\.batch.key), documents: batches.flatMap { $0.batch.mutations.map(\.key) })
        } catch {
            // Nothing is lost: each batch then reads for itself, and reports what that meets.
            logger.warning("reading ahead for a commit group failed", metadata: ["error": "\(error)"])
        }
        var processed = await processInOrder(Array(batches.indices), of: batches, units: units, with: processor.on(view))
        if !view.requests.isEmpty {
            do {
                let previous = try await store.commitGroup(view.requests)
                metrics.storeCommits.increment()
                // Another instance may have committed since the group read the tenant's state:
                // then the first commit is delivered from the change log.
                if let first = processed.firstIndex(where: { $0.processed?.applied == true }),
                   case .processed(var head) = processed[first], head.previousVersion != previous {
                    head.previousVersion = previous
                    processed[first] = .processed(head)
                }
            } catch {
                logger.info("group commit failed: committing its batches one by one", metadata: [
                    "batches": "\(batches.count)", "error": "\(error)",
                ])
                // Every batch the group processed, again on fresh reads (one it did store is
                // answered from its outcome), in order: a failure stops the rest of its unit.
                let again = processed.indices.filter { processed[$0].processed != nil }
                for (i, result) in zip(again, await processInOrder(again, of: batches, units: units, with: processor)) {
                    processed[i] = result
                    if result.processed?.recorded == true { metrics.storeCommits.increment() }
                }
            }
        }
        // Each batch's commit duration: the group's processing up to its store commit.
        let took = started.duration(to: .now)
        var answers = units.map { _ in [Result<CommitAnswer, DocError>]() }
        for (i, result) in processed.enumerated() {
            let (u, logger) = (batches[i].unit, batches[i].logger)
            switch result {
            case .processed(let processed):
                await finish(processed, fromClient: units[u].author.isClient, took: took)
                answers[u].append(.success(CommitAnswer(outcome: processed.outcome, recorded: processed.recorded)))
            case .failed(let error):
                failed(error, author: units[u].author, logger: logger)
                answers[u].append(.failure(error))
            case .notAttempted(let earlier):
                // Not a store failure: the batch was never tried.
                let error = DocError(.unavailable, "not attempted: an earlier batch of the frame failed (\(earlier.code)); send it again")
                logger.debug("batch not attempted", metadata: ["error": "\(error)"])
                if units[u].author.isClient { metrics.rejected(error.code) }
                answers[u].append(.failure(error))
            }
        }
        return answers
    }

    /// A batch of a group, with its unit (an index into the group's units) and logger.
    private struct GroupBatch {
        var batch: GroupedBatch
        var unit: Int
        var logger: Logger
    }

    /// What became of a batch of a group.
    private enum GroupResult {
        case processed(CommitProcessor.Processed)
        case failed(DocError)
        /// An earlier batch of its unit failed (this one's error): it must not be committed
        /// before that one is sent again.
        case notAttempted(DocError)

        var processed: CommitProcessor.Processed? {
            if case .processed(let processed) = self { processed } else { nil }
        }
    }

    /// Processes the group's batches at `indices`, in order, with `processor`; after a batch
    /// fails, the later ones of its unit are not attempted. One result per index.
    private func processInOrder(
        _ indices: [Int], of batches: [GroupBatch], units: [CommitUnit], with processor: CommitProcessor
    ) async -> [GroupResult] {
        var results: [GroupResult] = []
        results.reserveCapacity(indices.count)
        var unitFailures: [Int: DocError] = [:]
        for i in indices {
            let (batch, u, logger) = (batches[i].batch, batches[i].unit, batches[i].logger)
            if let failure = unitFailures[u] {
                results.append(.notAttempted(failure))
                continue
            }
            let author = units[u].author
            do {
                results.append(.processed(try await processor.process(
                    batch: batch.key, mutations: batch.mutations, uid: author.uid, access: access(for: author, logger: logger),
                    logger: logger, fromClient: author.isClient)))
            } catch {
                results.append(.failed(error))
                unitFailures[u] = error
            }
        }
        return results
    }

    /// Records a processed batch in the metrics (`took`: its processing up to its store commit)
    /// and fans its commit out (inside the serialization).
    private func finish(_ processed: CommitProcessor.Processed, fromClient: Bool, took: Duration) async {
        if processed.recorded {
            metrics.outcomesRecorded.increment()
            if processed.applied {
                metrics.commitDuration.record(took)
                (fromClient ? metrics.clientCommits : metrics.requestCommits).increment()
                metrics.changeLogAppended.increment(by: Int64(processed.changes.count))
            } else if fromClient, case .rejected(let error) = processed.outcome.result {
                metrics.rejected(error.code)
            }
        }
        if processed.applied, let version = processed.outcome.commitVersion {
            if processed.previousVersion == delivered {
                await fanOut(processed.changes, version: version)
                delivered = version
            } else {
                // Another instance committed before this one: deliver the log in order.
                await catchUp(through: version)
            }
        }
    }

    /// The write stream token: where this hub's listeners stand (informational).
    func streamToken() -> [UInt8] {
        WatchToken(incarnation: incarnation, version: delivered).bytes
    }

    // MARK: Commits of other instances

    /// The store reports a commit at `version` (possibly made by another server instance):
    /// delivers the change log up to the tenant's last version if this hub is behind.
    func noticed(_ version: SnapshotVersion) async {
        guard version > delivered else { return }
        await acquire()
        defer { release() }
        await catchUp(through: version)
    }

    /// Brings every target to `version` (`nil`: the tenant's last version): reads the change
    /// log after ``delivered`` and fans it out one commit version at a time, as if the commits
    /// had been made here. When the log cannot answer (pruned, or more than
    /// ``ServerConfiguration/maxResumeChanges`` entries behind), every target is reset and
    /// read again. Runs inside the hub's serialization.
    private func catchUp(through version: SnapshotVersion?) async {
        // Nobody listens: nothing to deliver, and nothing to read (a target added later is
        // read at its own version, and catches up from there).
        guard targetCount > 0 else {
            if let version { delivered = max(delivered, version) }
            return
        }
        let target: SnapshotVersion
        if let version {
            target = version
        } else {
            do {
                target = try await store.state().lastVersion
            } catch {
                logger.warning("cannot read the tenant state to catch up", metadata: ["error": "\(error)"])
                metrics.storeFailed(metrics.storeErrorsRead, error)
                return
            }
        }
        guard target > delivered else { return }
        let read: ChangeLogRead
        do {
            read = try await store.changes(after: delivered, maxEntries: configuration.maxResumeChanges)
        } catch {
            logger.warning("cannot read the change log to catch up", metadata: ["error": "\(error)"])
            metrics.storeFailed(metrics.storeErrorsRead, error)
            return
        }
        switch read {
        case .complete(let entries, _):
            var start = entries.startIndex
            while start < entries.endIndex, entries[start].version <= target {
                let version = entries[start].version
                var end = start
                while end < entries.endIndex, entries[end].version == version { end += 1 }
                await fanOut(entries[start..<end].map(\.document), version: version)
                delivered = version
                start = end
            }
            delivered = target
        case .unavailable(let reason):
            logger.info("change log cannot catch up: resetting every target", metadata: ["reason": "\(reason)"])
            await resetAll()
        }
    }

    /// Reads every target again and sends it whole after a `reset` (when the change log cannot
    /// say what changed).
    private func resetAll() async {
        var newest = delivered
        for id in connections.keys.sorted() {
            guard var watch = connections[id], !watch.targets.isEmpty else { continue }
            var messages: [ServerMessage] = []
            var version = watch.snapshotVersion
            for targetID in watch.targets.keys.sorted() {
                var target = watch.targets[targetID]!
                let read: QueryRead
                do {
                    read = try await store.query(target.target, limit: target.limit)
                } catch {
                    _ = fail(watch.connection, error)
                    messages = []
                    break
                }
                let token = WatchToken(incarnation: incarnation, version: read.version).bytes
                messages.append(.targetChange(.init(state: .reset, targetIDs: [targetID])))
                messages += TargetResults.all(read.documents, targetID: targetID)
                messages.append(.targetChange(.init(state: .current, targetIDs: [targetID], resumeToken: token)))
                target.setWindow(read.documents)
                watch.targets[targetID] = target
                version = max(version, read.version)
            }
            guard connections[id] != nil else { continue }
            let token = WatchToken(incarnation: incarnation, version: version).bytes
            messages.append(.targetChange(.init(state: .noChange, targetIDs: [], resumeToken: token, snapshotVersion: version)))
            watch.snapshotVersion = version
            connections[id] = watch
            watch.connection.outbound.send(messages)
            newest = max(newest, version)
        }
        delivered = newest
    }

    // MARK: Fan-out

    /// Sends a commit's changes to every connection whose targets they affect, followed by a
    /// global snapshot at the commit version.
    ///
    /// What connections have in common is worked out once (``FanOutPlan``): each distinct
    /// target's new window (and its re-read from the store, when a full window lost
    /// documents), and the frames of each distinct set of changed targets, encoded once for
    /// every connection that receives them. Per connection remain the rules decisions on its
    /// document targets, the lookups of its targets in the plan (a target without an equal
    /// already worked out walks the changes itself), and queuing the frames.
    private func fanOut(_ changes: [MaybeDocument], version: SnapshotVersion) async {
        guard !changes.isEmpty else { return }
        let started = ContinuousClock.now
        defer { metrics.fanOutDuration.record(started.duration(to: .now)) }
        var changeMap: [DocumentKey: MaybeDocument] = [:]
        for change in changes { changeMap[change.key] = change }
        let token = WatchToken(incarnation: incarnation, version: version).bytes
        var plan = FanOutPlan(changes: changeMap, version: version, snapshot: .targetChange(.init(
            state: .noChange, targetIDs: [], resumeToken: token, snapshotVersion: version)))
        let ruleSet = rules.current
        // Document targets are checked again for their document's new state; callers with the
        // same claims get the same answer for the same document, so each is decided once.
        var decided: [ReadDecisionKey: DocError?] = [:]
        for id in connections.keys.sorted() {
            guard let step = await fanOutStep(of: id, plan: &plan, ruleSet: ruleSet, decided: &decided),
                  let index = connections.index(forKey: id) else { continue }
            // Applied in place: the connection's targets are not copied.
            for targetID in step.removed { connections.values[index].targets[targetID] = nil }
            step.changeSet.forEach { touched in
                let update = plan.updates[touched.update]
                connections.values[index].targets[touched.targetID]?.setWindow(update.window, keys: update.keys)
            }
            var frames = step.changeSet.isEmpty ? [] : plan.frames(for: step.changeSet)
            if !step.removals.isEmpty {
                // The moved documents, the removed targets, then the snapshot.
                frames = frames.dropLast() + step.removals.map(OutboundFrame.init) + [plan.snapshot()]
            }
            guard !frames.isEmpty else { continue }
            // A connection the frames overflowed is cut off: gone now, as the tick does.
            guard connections.values[index].connection.outbound.send(frames: frames) else {
                connections.remove(at: index)
                continue
            }
            connections.values[index].snapshotVersion = version
        }
    }

    /// What a commit does to one connection, decided before anything of it changes.
    private struct ConnectionStep {
        /// Document targets the rules no longer allow, and their `removed` frames.
        var removed: [Int32] = []
        var removals: [ServerMessage] = []
        /// The targets whose window changed.
        var changeSet = FanOutPlan.ChangeSet()
    }

    /// One connection's part of a fan-out: the rules decisions on its document targets and its
    /// targets' updates from the plan (reading a window again when the plan needs it). `nil`
    /// when there is nothing to do, or the connection is gone (finished, or failed here).
    private func fanOutStep(of id: String, plan: inout FanOutPlan, ruleSet: RuleSet?,
                            decided: inout [ReadDecisionKey: DocError?]) async -> ConnectionStep? {
        guard let watch = connections[id], !watch.targets.isEmpty else { return nil }
        if watch.connection.outbound.isFinished {
            connections[id] = nil
            return nil
        }
        var step = ConnectionStep()
        for targetID in watch.targets.keys.sorted() {
            let target = watch.targets[targetID]!
            if let ruleSet, let key = target.documentKey, let change = plan.changes[key] {
                // A document target stays only while the rules allow reading its new state.
                let auth = watch.connection.rulesAuth
                do {
                    let denial: DocError?
                    if let known = decided[ReadDecisionKey(key: key, auth: auth)] {
                        denial = known
                    } else {
                        let access = AccessControl(context: rules.context(ruleSet, for: auth, logger: connectionLogger(id)),
                                                   store: store)
                        denial = try await access.denial(get: key, document: change.document, time: plan.version.timestamp,
                                                         location: "target \(target.target.path)")
                        decided.updateValue(denial, forKey: ReadDecisionKey(key: key, auth: auth))
                    }
                    if let denial {
                        step.removed.append(targetID)
                        step.removals.append(.targetChange(.init(state: .removed, targetIDs: [targetID], cause: denial)))
                        logger.debug("target removed: the rules deny its document's new state", metadata: [
                            "connection": "\(id)", "target": "\(targetID)", "error": "\(denial.message)",
                        ])
                        continue
                    }
                } catch {
                    _ = fail(watch.connection, error)
                    return nil
                }
            }
            switch plan.step(for: target) {
            case .unchanged:
                continue
            case .updated(let update):
                step.changeSet.append(.init(targetID: targetID, update: update))
            case .needsRefill:
                do {
                    let window = try await store.query(target.target, limit: target.limit).documents
                    step.changeSet.append(.init(targetID: targetID, update: plan.refilled(target, window: window)))
                } catch {
                    _ = fail(watch.connection, error)
                    return nil
                }
            }
        }
        return step
    }

    /// A `get` decision within one fan-out: the document and the caller.
    struct ReadDecisionKey: Hashable {
        let key: DocumentKey
        let auth: RulesAuth
    }

    // MARK: Targets

    /// Adds (or replaces) a target of `connection` and delivers its results; returns what it
    /// delivered.
    func addTarget(_ request: ClientMessage.AddTarget, on connection: ServerConnection) async -> [ServerMessage] {
        await acquire()
        defer { release() }
        guard var watch = connections[connection.id] else { return [] }
        let targetID = request.targetID
        let target = request.target
        var logger = logger
        logger[metadataKey: "connection"] = "\(connection.id)"
        logger[metadataKey: "target"] = "\(targetID)"

        var refusal = refusal(of: target)
        let cap = configuration.maxTargetsPerConnection
        if refusal == nil, watch.targets[targetID] == nil, watch.targets.count >= cap {
            refusal = DocError(.resourceExhausted, "a connection may listen to at most \(cap) targets at once; remove one first",
                               at: target.errorLocation)
        }
        if refusal == nil, let access = rules.context(for: connection.rulesAuth, logger: logger) {
            do {
                refusal = try await AccessControl(context: access, store: store).denial(listen: target, time: now())
            } catch {
                return fail(connection, error)
            }
        }
        if let refusal {
            watch.targets[targetID] = nil
            connections[connection.id] = watch
            logger.debug("target refused", metadata: ["error": "\(refusal.message)"])
            let message = ServerMessage.targetChange(.init(state: .removed, targetIDs: [targetID], cause: refusal))
            connection.outbound.send([message])
            return [message]
        }

        var messages: [ServerMessage] = [.targetChange(.init(state: .added, targetIDs: [targetID]))]
        let window: [Document]
        let version: SnapshotVersion
        do {
            let state = try await store.state()
            var resumed: (messages: [ServerMessage], window: [Document], version: SnapshotVersion)?
            var reset = false
            if let bytes = request.resumeToken, !bytes.isEmpty {
                resumed = try await resume(target, id: targetID, token: bytes, state: state, logger: logger)
                if resumed == nil, let expected = request.expectedCount {
                    resumed = try await resumeFromDocuments(
                        target, id: targetID, token: bytes, expectedCount: expected, state: state, logger: logger)
                }
                reset = resumed == nil
            }
            if let resumed {
                messages += resumed.messages
                if let expected = request.expectedCount {
                    logger.trace("existence filter", metadata: ["expected": "\(expected)", "count": "\(resumed.window.count)"])
                    messages.append(.existenceFilter(existenceFilter(targetID: targetID, target: target, window: resumed.window)))
                }
                window = resumed.window
                version = resumed.version
            } else {
                let read = try await store.query(target, limit: target.limit)
                if reset { messages.append(.targetChange(.init(state: .reset, targetIDs: [targetID]))) }
                messages += TargetResults.all(read.documents, targetID: targetID)
                window = read.documents
                version = read.version
            }
        } catch {
            return fail(connection, error)
        }
        // The new target is consistent at `version`; bring the others there first (another
        // instance may have committed since they were last served).
        if version > delivered {
            await catchUp(through: version)
            guard let caughtUp = connections[connection.id] else { return [] }
            watch = caughtUp
        }
        let token = WatchToken(incarnation: incarnation, version: version).bytes
        messages.append(.targetChange(.init(state: .current, targetIDs: [targetID], resumeToken: token)))
        messages.append(.targetChange(.init(state: .noChange, targetIDs: [], resumeToken: token, snapshotVersion: version)))
        watch.targets[targetID] = WatchedTarget(id: targetID, target: target, window: window)
        watch.snapshotVersion = max(watch.snapshotVersion, version)
        connections[connection.id] = watch
        connection.outbound.send(messages)
        logger.debug("target added", metadata: ["documents": "\(window.count)", "version": "\(version)"])
        return messages
    }

    /// Why a target is refused, if it is: query targets must be bounded.
    private func refusal(of target: Target) -> DocError? {
        if target.isDocumentQuery { return nil }
        let cap = configuration.maxListenLimit
        guard let limit = target.limit else {
            return DocError(.invalidArgument,
                "Listen targets must have a limit: a query listener needs limit(to:) or limit(toLast:) of at most \(cap) (unbounded listens are refused)",
                at: target.errorLocation)
        }
        guard limit <= cap else {
            return DocError(.invalidArgument, "Listen targets may have a limit of at most \(cap), this one has \(limit)",
                            at: target.errorLocation)
        }
        return nil
    }

    /// The resume of a target from a token, or `nil` when the token cannot be resumed (another
    /// database, too old, too many changes): the caller then resets.
    private func resume(
        _ target: Target, id targetID: Int32, token bytes: [UInt8], state: TenantState, logger: Logger
    ) async throws(DocError) -> (messages: [ServerMessage], window: [Document], version: SnapshotVersion)? {
        // A token of another database, or of the one a restore replaced past the backup's
        // version (commits the restore lost), is never resumed (TenantState.resumes).
        guard let token = WatchToken(bytes: bytes), state.resumes(incarnation: token.incarnation, version: token.version) else {
            logger.debug("resume token from another database, or from after the backup it was restored from: reset")
            return nil
        }
        // Every document changed after the token up to the version the results are read at
        // must be known. The log and the query are two reads; when the query saw a commit the
        // log did not reach yet (another instance committed in between), read the rest of the
        // log and query again. Changes past the query's version do no harm: a changed document
        // is sent in its state as read, or removed when it is not in the results.
        var changed: [DocumentKey: MaybeDocument] = [:]
        var logThrough = token.version
        var budget = configuration.maxResumeChanges
        for _ in 0..<Self.maxResumeRounds {
            guard case .complete(let entries, let through) = try await store.changes(after: logThrough, maxEntries: budget) else {
                logger.debug("resume token older than the change log", metadata: ["token": "\(token.version)"])
                return nil
            }
            budget -= entries.count
            logThrough = max(logThrough, through)
            for entry in entries where WatchedTarget.pathMatches(entry.key, target: target) {
                changed[entry.key] = entry.document
            }
            if let limit = target.limit, changed.count >= limit {
                logger.debug("resume: more changes than the limit")
                return nil
            }
            let read = try await store.query(target, limit: target.limit.map { $0 + changed.count })
            guard read.version <= logThrough else { continue }
            let (messages, window) = TargetResults.resume(
                targetID: targetID, limit: target.limit, changed: changed, extended: read.documents, version: read.version)
            logger.debug("resumed", metadata: ["token": "\(token.version)", "changed": "\(changed.count)", "sent": "\(messages.count)"])
            return (messages, window, read.version)
        }
        logger.debug("resume: the tenant kept changing under the read")
        return nil
    }

    /// The resume of a target the change log cannot bring up to date (the token is older than
    /// the log reaches, or too much changed), for a client that sent its count and so receives
    /// an existence filter with a bloom filter: from the documents themselves. The results
    /// changed after the token's version are sent; those unchanged were results then too, and
    /// the client has them when its window was not full then (`expectedCount` below the
    /// limit), so nothing else is needed. What the client has and the results no longer hold
    /// (deleted, changed away, pushed out) is not sent: the existence filter's count tells the
    /// client something is missing, and its bloom filter which documents. `nil` (a reset)
    /// when the token is not this database's, the window may have been full, or bloom filters
    /// are off.
    private func resumeFromDocuments(
        _ target: Target, id targetID: Int32, token bytes: [UInt8], expectedCount: Int, state: TenantState, logger: Logger
    ) async throws(DocError) -> (messages: [ServerMessage], window: [Document], version: SnapshotVersion)? {
        guard let token = WatchToken(bytes: bytes), state.resumes(incarnation: token.incarnation, version: token.version) else {
            return nil
        }
        guard configuration.bloomFilterFalsePositiveRate != nil else {
            logger.debug("no bloom filters to resume from the documents with: reset")
            return nil
        }
        if let limit = target.limit, expectedCount >= limit {
            logger.debug("the client's window may have been full: reset")
            return nil
        }
        let read = try await store.query(target, limit: target.limit)
        let changed = read.documents.filter { $0.version > token.version }
        logger.debug("resumed from the documents", metadata: [
            "token": "\(token.version)", "results": "\(read.documents.count)", "sent": "\(changed.count)",
        ])
        return (TargetResults.all(changed, targetID: targetID), read.documents, read.version)
    }

    /// The existence filter of a resumed target: the number of its results and, unless bloom
    /// filters are off or it is a document target (whose count says it all), a bloom filter of
    /// their names.
    private func existenceFilter(targetID: Int32, target: Target, window: [Document]) -> ServerMessage.ExistenceFilter {
        var filter = ServerMessage.ExistenceFilter(targetID: targetID, count: window.count)
        if let rate = configuration.bloomFilterFalsePositiveRate, !target.isDocumentQuery {
            filter.bloomFilter = BloomFilterBuilder.filter(of: window.map(\.key), falsePositiveRate: rate)
        }
        return filter
    }

    /// How often a resume reads the change log again because commits kept arriving between
    /// its log read and its query, before it resets instead.
    static let maxResumeRounds = 4

    /// Removes a target and acknowledges it (also for a target the server does not know).
    func removeTarget(_ targetID: Int32, on connection: ServerConnection) async -> [ServerMessage] {
        await acquire()
        defer { release() }
        guard connections[connection.id] != nil else { return [] }
        connections[connection.id]!.targets[targetID] = nil
        let message = ServerMessage.targetChange(.init(state: .removed, targetIDs: [targetID]))
        connection.outbound.send([message])
        return [message]
    }

    // MARK: Periodic work

    /// Sends a global snapshot at the tenant's last version to every listening connection not
    /// yet told about it, so idle listeners' resume tokens advance. Returns how many were sent.
    @discardableResult
    func tick() async -> Int {
        await acquire()
        defer { release() }
        // Commits of other instances whose notice was lost are delivered here at the latest.
        await catchUp(through: nil)
        let version = delivered
        let token = WatchToken(incarnation: incarnation, version: version).bytes
        // The same snapshot for every connection: encoded once, when a connection needs it.
        var snapshot: [OutboundFrame] = []
        var sent = 0
        for id in connections.keys.sorted() {
            guard var watch = connections[id], !watch.targets.isEmpty, watch.snapshotVersion < version else { continue }
            if snapshot.isEmpty {
                snapshot = [OutboundFrame.shared(.targetChange(.init(
                    state: .noChange, targetIDs: [], resumeToken: token, snapshotVersion: version)))]
            }
            if !watch.connection.outbound.send(frames: snapshot) {
                connections[id] = nil
                continue
            }
            watch.snapshotVersion = version
            connections[id] = watch
            sent += 1
        }
        return sent
    }

    /// Prunes batch outcomes and change log entries past their retention.
    func maintain(now: Int64) async throws(DocError) -> (outcomes: Int, changes: Int) {
        await acquire()
        defer { release() }
        let outcomes = try await store.pruneOutcomes(recordedBefore: now - configuration.outcomeRetentionMicros)
        let changes = try await store.pruneChangeLog(before: SnapshotVersion(microseconds: now - configuration.changeLogRetentionMicros))
        if outcomes > 0 || changes > 0 {
            logger.info("pruned", metadata: ["outcomes": "\(outcomes)", "changes": "\(changes)"])
        }
        return (outcomes, changes)
    }

    /// Deletes the tenant's attachments that no live document refers to and that are older
    /// than the grace period (``AttachmentCollector``): beside the hub's work, since the store
    /// holds back the commits that could refer to one while it deletes
    /// (``TenantStore/deleteUnreferencedAttachments(among:_:)``). Returns the ids deleted.
    func collectAttachments(with collector: AttachmentCollector, now: Int64) async throws(DocError) -> [AttachmentID] {
        guard let survey = try await collector.survey(store, now: now) else { return [] }
        let deleted = try await collector.sweep(survey, store: store)
        if !deleted.isEmpty {
            logger.info("deleted unreferenced attachments", metadata: ["attachments": "\(deleted.count)"])
        }
        return deleted
    }

    /// Reads documents (for request/response transports), each authorized as a `get` for
    /// `auth`: one denied document refuses the whole read with `permissionDenied`.
    func documents(_ keys: [DocumentKey], auth: RulesAuth, connection: String? = nil) async throws(DocError) -> DocumentsRead {
        await acquire()
        defer { release() }
        let read = try await store.documents(keys)
        if let access = rules.context(for: auth, logger: connectionLogger(connection)) {
            let control = AccessControl(context: access, store: store)
            let time = now()
            for key in keys {
                if let denial = try await control.denial(get: key, document: read.documents[key], time: time,
                                                         location: key.description) {
                    throw denial
                }
            }
        }
        return read
    }

    /// Runs a query (for request/response transports): bounded like listeners, and authorized
    /// as a `list` for `auth` (from its constraints: rules are not filters). A nil `auth` is
    /// the server itself: no rules apply.
    func query(_ target: Target, auth: RulesAuth?, connection: String? = nil) async throws(DocError) -> QueryRead {
        if let refusal = refusal(of: target) { throw refusal }
        await acquire()
        defer { release() }
        if let auth, let access = rules.context(for: auth, logger: connectionLogger(connection)) {
            let control = AccessControl(context: access, store: store)
            if let denial = try await control.denial(listen: target, time: now()) { throw denial }
        }
        return try await store.query(target, limit: target.limit)
    }

    /// Aggregates a target's results (an `aggregate` request): authorized as a `list` for
    /// `auth` like a listen, but not bounded — only the values leave the server. The store
    /// folds the matching documents into an ``AggregateAccumulator`` as it reads them
    /// (``TenantStore/aggregate(_:_:)``, ``QueryFold``): a page of them in memory at a time.
    func aggregate(_ target: Target, _ fields: [AggregateField], auth: RulesAuth, connection: String? = nil)
        async throws(DocError) -> (result: [String: Value], version: SnapshotVersion)
    {
        guard !target.isDocumentQuery else {
            throw DocError(.invalidArgument, "aggregations run over a query, not a single document", at: target.errorLocation)
        }
        do {
            // The rules decide in the hub's turn (their lookups read the store as commits
            // leave it); the scan reads a snapshot and does not hold the tenant's commits up.
            await acquire()
            defer { release() }
            if let access = rules.context(for: auth, logger: connectionLogger(connection)) {
                let control = AccessControl(context: access, store: store)
                if let denial = try await control.denial(listen: target, time: now()) { throw denial }
            }
        }
        let read = try await store.aggregate(target, fields)
        return (read.result, read.version)
    }

    /// The hub's logger with `connection` (denials name the connection they refused).
    private func connectionLogger(_ connection: String?) -> Logger {
        guard let connection else { return logger }
        var logger = logger
        logger[metadataKey: "connection"] = .string(connection)
        return logger
    }

    /// Checks every target again under the current rules (after they were replaced): a target
    /// the rules now deny is removed with a `permissionDenied` cause. Returns how many were
    /// removed.
    @discardableResult
    func revalidateTargets() async -> Int {
        await acquire()
        defer { release() }
        guard let ruleSet = rules.current else { return 0 }
        let time = now()
        var removed = 0
        for id in connections.keys.sorted() {
            guard var watch = connections[id], !watch.targets.isEmpty else { continue }
            let control = AccessControl(context: rules.context(ruleSet, for: watch.connection.rulesAuth, logger: connectionLogger(id)),
                                        store: store)
            var messages: [ServerMessage] = []
            for targetID in watch.targets.keys.sorted() {
                let target = watch.targets[targetID]!.target
                let denial: DocError?
                do {
                    denial = try await control.denial(listen: target, time: time)
                } catch {
                    _ = fail(watch.connection, error)
                    messages = []
                    break
                }
                if let denial {
                    watch.targets[targetID] = nil
                    messages.append(.targetChange(.init(state: .removed, targetIDs: [targetID], cause: denial)))
                    removed += 1
                }
            }
            guard connections[id] != nil else { continue }
            connections[id] = watch
            if !messages.isEmpty { watch.connection.outbound.send(messages) }
        }
        return removed
    }
}

package import DocModel
import DocProtocol

/// The client's connection to the backend (Firestore's `RemoteStore`): it keeps the watch
/// stream listening to the targets the sync engine wants, and the write stream sending the
/// local mutation queue in order, and reports what the server says to a ``RemoteSyncer``.
///
/// - Watch: every listened target is (re-)sent with its resume token whenever the stream
///   opens. Watch messages are collected by a ``WatchChangeAggregator`` and delivered as one
///   ``RemoteEvent`` at each global snapshot. A target the server removes with an error is
///   rejected at once.
/// - Write: up to ``maxPendingWrites`` batches are in flight, taken in order from the local
///   store. Results arrive in order and acknowledge the oldest batch. Transient errors retry
///   the same batches after a backoff; a permanent error rejects the oldest batch and moves on.
/// - Both streams restart after errors with exponential backoff, and the online state is
///   derived from the watch stream by an ``OnlineStateTracker``.
///
/// Not thread-safe: use it from the client's serial executor only (in tests, from the test).
package final class RemoteStore {
    /// The most batches sent to the server and not yet answered.
    package static let maxPendingWrites = 10

    /// Receives remote events, write outcomes and online state changes. Held weakly: the
    /// sync engine owns the remote store.
    package weak var syncer: (any RemoteSyncer)?
    /// Called with the oldest batch in flight and the server's answer about its id
    /// (``DocModel/DocError/isBatchIDConflict``): `true` when another store writes under this
    /// client id and the store took a new one; the batch is then not rejected, and the stream
    /// restarts and sends the same batches again, in order. `false` (a re-send of a batch the
    /// server processed before), or `nil`: the batch is rejected like on any permanent error.
    package var onBatchIDConflict: ((BatchID, DocError) -> Bool)?

    /// The targets being listened to, by id, with their newest resume token.
    package private(set) var listenTargets: [TargetID: TargetData] = [:]
    /// The batches sent (or to be sent once the stream is ready) and not yet answered, oldest
    /// first.
    package private(set) var writePipeline: [MutationBatch] = []

    private let localStore: any RemoteStoreDataSource
    private let watchStream: any WatchStream
    private let writeStream: any WriteStream
    private let watchConnection: StreamConnection
    private let writeConnection: StreamConnection
    private let onlineStateTracker: OnlineStateTracker
    private let logger: RemoteLogger
    private let callbacks: Callbacks
    /// Collects watch messages while the watch stream is started.
    private var watchAggregator: WatchChangeAggregator?
    /// Targets re-listened without a resume token by ``relistenFromScratch()``: once the
    /// server acknowledges the new listen, the target is reset (its documents are forgotten
    /// until the server sends them again).
    private var targetsToReset: Set<TargetID> = []
    private var isNetworkEnabled = false
    /// The current write stream completed its handshake (writes may be sent).
    private var writeHandshakeComplete = false
    /// The database part of the document names in the server's bloom filters.
    private let databaseName: String
    /// How the existence filters whose count did not match were handled, since the remote
    /// store was created.
    package private(set) var existenceFilterCounts = ExistenceFilterCounts()

    /// Creates a remote store with the network disabled; ``start()`` enables it.
    ///
    /// - Parameters:
    ///   - backoffRandom: the jitter source of both streams' ``ExponentialBackoff``s
    ///     (uniform in `0..<1`); tests pass a constant.
    ///   - databaseName: the database part of the document names in existence filters'
    ///     bloom filters (the protocol's; the spec tests name Firestore's test project).
    package init(
        localStore: any RemoteStoreDataSource, datastore: any Datastore, scheduler: any Scheduler,
        logger: RemoteLogger = .discarding, backoffRandom: @escaping () -> Double = { Double.random(in: 0..<1) },
        databaseName: String = ServerMessage.ExistenceFilter.databaseName
    ) {
        let callbacks = Callbacks()
        self.callbacks = callbacks
        self.localStore = localStore
        self.logger = logger
        self.databaseName = databaseName
        watchStream = datastore.makeWatchStream(delegate: callbacks)
        writeStream = datastore.makeWriteStream(delegate: callbacks)
        watchConnection = StreamConnection(
            stream: watchStream,
            backoff: ExponentialBackoff(
                scheduler: scheduler, timerID: .listenStreamConnectionBackoff, randomUnit: backoffRandom))
        writeConnection = StreamConnection(
            stream: writeStream,
            backoff: ExponentialBackoff(
                scheduler: scheduler, timerID: .writeStreamConnectionBackoff, randomUnit: backoffRandom))
        onlineStateTracker = OnlineStateTracker(scheduler: scheduler, logger: logger) { [callbacks] state in
            callbacks.owner?.syncer?.handleOnlineStateChange(state)
        }
        callbacks.owner = self
    }

    // MARK: - State

    /// The number of batches in the write pipeline.
    package var outstandingWrites: Int { writePipeline.count }

    /// The online state as last reported to the syncer.
    package var onlineState: OnlineState { onlineStateTracker.state }

    /// Why the client last went offline on its own, if it did (for the store's "last sync
    /// error").
    package var lastOfflineReason: String? { onlineStateTracker.lastOfflineReason }

    /// Whether the network is enabled (the streams may be used).
    package var canUseNetwork: Bool { isNetworkEnabled }

    // MARK: - Lifecycle

    /// Starts the remote store: enables the network.
    package func start() {
        enableNetwork()
    }

    /// Stops both streams for good (the client is closing). The online state goes to
    /// `unknown` rather than `offline`, so listeners are not told to fall back to the cache.
    package func shutdown() {
        logger.debug("remote store shutting down")
        isNetworkEnabled = false
        disableNetworkInternal()
        onlineStateTracker.updateState(.unknown)
    }

    /// Allows the network again: restores the write stream token, starts the watch stream if
    /// there are targets and the write stream if there are pending writes.
    package func enableNetwork() {
        isNetworkEnabled = true
        guard canUseNetwork else { return }
        writeStream.lastStreamToken = localStore.lastStreamToken
        if shouldStartWatchStream {
            startWatchStream()
        } else {
            onlineStateTracker.updateState(.unknown)
        }
        fillWritePipeline()
    }

    /// Stops both streams and reports the client `offline` until ``enableNetwork()``. Batches
    /// in flight are dropped from the pipeline (they stay in the local queue and are sent
    /// again later).
    package func disableNetwork() {
        isNetworkEnabled = false
        disableNetworkInternal()
        onlineStateTracker.updateState(.offline)
    }

    /// The user changed: restarts both streams (new credentials) and refills the write
    /// pipeline from the new user's mutation queue.
    package func handleCredentialChange() {
        guard canUseNetwork else { return }
        logger.debug("restarting the streams for new credentials")
        restartNetwork()
    }

    private func restartNetwork() {
        isNetworkEnabled = false
        disableNetworkInternal()
        onlineStateTracker.updateState(.unknown)
        // The restart is not caused by a struggling server: reconnect at once.
        writeConnection.inhibitBackoff()
        watchConnection.inhibitBackoff()
        enableNetwork()
    }

    private func disableNetworkInternal() {
        watchConnection.stop()
        writeConnection.stop()
        writeHandshakeComplete = false
        if !writePipeline.isEmpty {
            logger.debug("stopping the write stream with \(writePipeline.count) pending writes")
            writePipeline.removeAll()
        }
        watchAggregator = nil
    }

    // MARK: - Watch

    /// Starts listening to a target (nothing happens if it is already listened to). The
    /// target is sent when the watch stream opens, or at once if it is open.
    package func listen(_ targetData: TargetData) {
        let targetID = targetData.targetID
        guard listenTargets[targetID] == nil else { return }
        listenTargets[targetID] = targetData
        if shouldStartWatchStream {
            // The target is sent by `watchStreamDidOpen`.
            startWatchStream()
        } else if watchConnection.isOpen {
            sendWatchRequest(targetData)
        }
    }

    /// Stops listening to a target (nothing happens for a target not listened to). Without
    /// targets left, the watch stream is marked idle.
    package func stopListening(_ targetID: TargetID) {
        targetsToReset.remove(targetID)
        guard listenTargets.removeValue(forKey: targetID) != nil else {
            logger.debug("stopListening: target \(targetID) is not listened to")
            return
        }
        if watchConnection.isOpen {
            sendUnwatchRequest(targetID)
        }
        guard listenTargets.isEmpty else { return }
        if watchConnection.isOpen {
            watchConnection.markIdle()
        } else if canUseNetwork {
            // Without a listen to send, a closed stream cannot prove it healthy: the state
            // cannot be known.
            onlineStateTracker.updateState(.unknown)
        }
    }

    /// Forgets what the client knows of every listened target and listens again from scratch:
    /// no resume token, and once the server acknowledges the listen the target is reset, as if
    /// the server had sent `reset`. Documents the server no longer sends leave the target at
    /// the next snapshot (views then resolve them as limbo documents).
    package func relistenFromScratch() {
        for (targetID, targetData) in listenTargets {
            listenTargets[targetID] = TargetData(
                target: targetData.target, targetID: targetID, purpose: targetData.purpose,
                sequenceNumber: targetData.sequenceNumber)
            targetsToReset.insert(targetID)
        }
        // A closed stream sends the fresh targets when it opens.
        guard watchConnection.isOpen else { return }
        for targetID in listenTargets.keys.sorted() {
            sendUnwatchRequest(targetID)
            if let targetData = listenTargets[targetID] { sendWatchRequest(targetData) }
        }
    }

    private var shouldStartWatchStream: Bool {
        canUseNetwork && !watchConnection.isStarted && !listenTargets.isEmpty
    }

    private func startWatchStream() {
        let aggregator = WatchChangeAggregator(metadataProvider: self, databaseName: databaseName)
        aggregator.onExistenceFilterMismatch = { [unowned self] mismatch in existenceFilterDidMismatch(mismatch) }
        watchAggregator = aggregator
        watchConnection.start()
        onlineStateTracker.handleWatchStreamStart()
    }

    private func sendWatchRequest(_ targetData: TargetData) {
        // Messages for the target are ignored until the server acknowledges this request.
        watchAggregator?.recordPendingTargetRequest(targetData.targetID)
        var request = targetData
        if !targetData.resumeToken.isEmpty {
            // Lets the server tell, on resume, whether the client missed removals.
            request.expectedCount = remoteKeys(for: targetData.targetID).count
        }
        watchStream.watch(request)
    }

    private func sendUnwatchRequest(_ targetID: TargetID) {
        // Messages for the target are ignored until the server confirms the removal.
        watchAggregator?.recordPendingTargetRequest(targetID)
        watchStream.unwatch(targetID)
    }

    fileprivate func watchStreamDidOpen() {
        for targetID in listenTargets.keys.sorted() {
            if let targetData = listenTargets[targetID] {
                sendWatchRequest(targetData)
            }
        }
    }

    fileprivate func watchStreamDidChange(_ change: WatchChange, snapshotVersion: SnapshotVersion) {
        // A message from the server proves the connection.
        onlineStateTracker.updateState(.online)
        watchConnection.streamDidReceiveResponse()
        guard let aggregator = watchAggregator else { return }

        if case .target(let targetChange) = change, targetChange.state == .removed, let cause = targetChange.cause {
            // A target error is not part of any snapshot: report it at once.
            processTargetError(targetIDs: targetChange.targetIDs, cause: cause)
            return
        }
        aggregator.handle(change)
        if !targetsToReset.isEmpty, case .target(let targetChange) = change, targetChange.state == .added {
            for targetID in targetChange.targetIDs where targetsToReset.contains(targetID) {
                // Reset only once the server answers the newest request for the target.
                guard aggregator.targetState(for: targetID)?.isPending == false else { continue }
                targetsToReset.remove(targetID)
                aggregator.handle(.target(.init(state: .reset, targetIDs: [targetID])))
            }
        }

        // Only a `noChange` for all targets carries a global snapshot version.
        guard snapshotVersion != .none, case .target(let targetChange) = change, targetChange.state == .noChange,
            targetChange.targetIDs.isEmpty, snapshotVersion >= localStore.lastRemoteSnapshotVersion
        else { return }
        raiseWatchSnapshot(at: snapshotVersion)
    }

    private func raiseWatchSnapshot(at snapshotVersion: SnapshotVersion) {
        guard let aggregator = watchAggregator else { return }
        let event = aggregator.createRemoteEvent(at: snapshotVersion)

        // Keep the in-memory resume tokens current (the local store persists them when it
        // applies the event), so a reconnect resumes from here.
        for (targetID, change) in event.targetChanges where !change.resumeToken.isEmpty {
            if let targetData = listenTargets[targetID] {
                listenTargets[targetID] = targetData.withResumeToken(change.resumeToken, snapshotVersion: snapshotVersion)
            }
        }

        // Targets whose existence filter did not match are re-listened from scratch: unwatch
        // and watch again without a resume token, so the server sends the full result.
        for (targetID, purpose) in event.targetMismatches.sorted(by: { $0.key < $1.key }) {
            guard let targetData = listenTargets[targetID] else { continue }
            let fresh = TargetData(
                target: targetData.target, targetID: targetID, purpose: targetData.purpose,
                sequenceNumber: targetData.sequenceNumber)
            listenTargets[targetID] = fresh
            sendUnwatchRequest(targetID)
            // Only this request carries the mismatch purpose; the stored target keeps its own,
            // so later re-listens (e.g. after a reconnect) are ordinary ones.
            var request = fresh
            request.purpose = purpose
            sendWatchRequest(request)
        }

        syncer?.applyRemoteEvent(event)
    }

    private func existenceFilterDidMismatch(_ mismatch: ExistenceFilterMismatch) {
        existenceFilterCounts.mismatches += 1
        let counts = "the client has \(mismatch.localCount) documents, the server \(mismatch.serverCount)"
        switch mismatch.outcome {
        case .resolvedByBloomFilter(let removed):
            existenceFilterCounts.resolvedByBloomFilter += 1
            existenceFilterCounts.documentsRemovedByBloomFilter += removed
            logger.debug("existence filter of target \(mismatch.targetID): \(counts); the bloom filter ruled out \(removed)")
        case .bloomFilterFalsePositive(let removed):
            existenceFilterCounts.bloomFilterFalsePositives += 1
            logger.debug(
                "existence filter of target \(mismatch.targetID): \(counts); the bloom filter ruled out \(removed), "
                    + "too few (a false positive): listening again from scratch")
        case .noUsableBloomFilter(let reason):
            existenceFilterCounts.withoutUsableBloomFilter += 1
            logger.debug("existence filter of target \(mismatch.targetID): \(counts); \(reason): listening again from scratch")
        }
    }

    private func processTargetError(targetIDs: [TargetID], cause: DocError) {
        for targetID in targetIDs where listenTargets[targetID] != nil {
            listenTargets[targetID] = nil
            targetsToReset.remove(targetID)
            watchAggregator?.removeTarget(targetID)
            syncer?.rejectListen(targetID: targetID, error: cause)
        }
    }

    fileprivate func watchStreamDidClose(error: DocError?) {
        watchAggregator = nil
        guard canUseNetwork else {
            // Closed after the network was disabled: nothing to restart, and the online
            // state was set by whoever disabled it.
            watchConnection.streamDidClose(error: error)
            return
        }
        // A clean close while targets are listened to (the server hung up) is a failure too:
        // retry with backoff rather than in a tight loop.
        let stillNeeded = !listenTargets.isEmpty
        let failure = error ?? (stillNeeded ? DocError(.unavailable, "the watch stream closed unexpectedly") : nil)
        watchConnection.streamDidClose(error: failure)

        if shouldStartWatchStream, let failure {
            onlineStateTracker.handleWatchStreamFailure(failure)
            startWatchStream()
        } else {
            // No targets: no attempt to connect, so the state cannot be known.
            onlineStateTracker.updateState(.unknown)
        }
    }

    // MARK: - Write

    /// Tops up the write pipeline with the next batches of the local queue, up to
    /// ``maxPendingWrites``, and starts the write stream if needed. Call it after a local
    /// write. With nothing to send, the write stream is marked idle.
    package func fillWritePipeline() {
        fillWritePipeline(after: batchIDUnknown)
    }

    /// ``fillWritePipeline()``, where an empty pipeline goes on after `acknowledgedBatchID`
    /// rather than from the start of the queue: for batches acknowledged by the server that
    /// are still in the local queue.
    private func fillWritePipeline(after acknowledgedBatchID: BatchID) {
        if canAddToWritePipeline {
            let lastBatchID = writePipeline.last?.batchID ?? acknowledgedBatchID
            for batch in localStore.nextMutationBatches(after: lastBatchID, limit: Self.maxPendingWrites - writePipeline.count) {
                addToWritePipeline(batch)
            }
            if writePipeline.isEmpty {
                writeConnection.markIdle()
            }
        }
        if shouldStartWriteStream {
            startWriteStream()
        }
    }

    /// Stops the write stream and empties the pipeline (the batches stay in the local queue):
    /// for discarding pending writes, so that none of them is in flight afterwards. The stream
    /// starts again with the next batch to send.
    package func discardWritePipeline() {
        writeConnection.stop()
        writeHandshakeComplete = false
        writePipeline.removeAll()
    }

    private var canAddToWritePipeline: Bool {
        canUseNetwork && writePipeline.count < Self.maxPendingWrites
    }

    /// Queues a batch and sends it at once when the stream is ready (otherwise the handshake
    /// sends it).
    private func addToWritePipeline(_ batch: MutationBatch) {
        writePipeline.append(batch)
        if writeConnection.isOpen && writeHandshakeComplete {
            writeStream.write(batch)
        }
    }

    private var shouldStartWriteStream: Bool {
        canUseNetwork && !writeConnection.isStarted && !writePipeline.isEmpty
    }

    private func startWriteStream() {
        writeHandshakeComplete = false
        writeConnection.start()
    }

    fileprivate func writeStreamDidOpen() {
        writeStream.writeHandshake()
    }

    fileprivate func writeStreamDidCompleteHandshake() {
        writeHandshakeComplete = true
        localStore.setLastStreamToken(writeStream.lastStreamToken)
        // Send everything in the pipeline, including batches a failed stream may already
        // have delivered: the server identifies a batch by (client id, batch id) and answers
        // a repeated one with its stored outcome instead of applying it again.
        for batch in writePipeline {
            writeStream.write(batch)
        }
    }

    /// The oldest batches of the pipeline were committed (one `writeResult`, or one frame of
    /// results): the pipeline is topped up and the new batches sent, then the committed ones
    /// are acknowledged together (one local transaction).
    fileprivate func writeStreamDidReceiveResults(_ answers: [WriteStreamResult]) {
        // A committed write proves the stream healthy (a completed handshake does not: the
        // writes themselves may be what fails).
        writeConnection.streamDidReceiveResponse()
        var acknowledged: [MutationBatchResult] = []
        acknowledged.reserveCapacity(answers.count)
        var failure: DocError?
        for (i, answer) in answers.enumerated() {
            guard acknowledged.count < writePipeline.count else {
                logger.warning("the server acknowledged a write, but none is outstanding")
                break
            }
            do {
                // The stream token is stored once, with the last of them.
                acknowledged.append(try MutationBatchResult(
                    batch: writePipeline[acknowledged.count], commitVersion: answer.commitVersion, mutationResults: answer.results,
                    streamToken: i == answers.count - 1 ? writeStream.lastStreamToken : nil))
            } catch {
                failure = error
                break
            }
        }
        writePipeline.removeFirst(acknowledged.count)
        if failure == nil, let last = acknowledged.last {
            // The next batches leave before these are acknowledged locally, so that the server
            // commits them while this client stores the acknowledgements (the queue still holds
            // the acknowledged batches: the pipeline goes on after the last of them).
            fillWritePipeline(after: last.batch.batchID)
            writeStream.sendWritten()
        }
        if !acknowledged.isEmpty { syncer?.applySuccessfulWrites(acknowledged) }
        if let failure {
            // The batch was committed but the answer is unusable: reconnect and send it again
            // to get the stored outcome (see `writeStreamDidCompleteHandshake`).
            logger.warning("invalid write result: \(failure)")
            writeStream.stop()
            writeStreamDidClose(error: DocError(.internal, "invalid write result: \(failure.message)"))
            return
        }
        if acknowledged.isEmpty { fillWritePipeline() }
    }

    /// The server rejected the oldest batch of the pipeline and goes on with the next ones on
    /// the same stream: the batch is kept as a failed write, and the pipeline refilled.
    fileprivate func writeStreamDidReject(batchID: BatchID, error: DocError) {
        // An answer, like a committed one, proves the stream healthy.
        writeConnection.streamDidReceiveResponse()
        guard writePipeline.first?.batchID == batchID else {
            let oldest = writePipeline.first.map { "\($0.batchID)" } ?? "none"
            logger.warning("the server rejected batch \(batchID), but the oldest outstanding one is \(oldest)")
            writeStream.stop()
            writeStreamDidClose(error: DocError(.internal, "the server rejected batch \(batchID) out of order"))
            return
        }
        writePipeline.removeFirst()
        syncer?.rejectFailedWrite(batchID: batchID, error: error)
        fillWritePipeline()
    }

    fileprivate func writeStreamDidClose(error: DocError?) {
        let handshakeWasComplete = writeHandshakeComplete
        writeHandshakeComplete = false
        guard canUseNetwork else {
            writeConnection.streamDidClose(error: error)
            return
        }
        // A clean close with writes outstanding (the server hung up) is retried like a
        // transient error.
        let failure = error ?? (writePipeline.isEmpty ? nil : DocError(.unavailable, "the write stream closed unexpectedly"))
        writeConnection.streamDidClose(error: failure)

        if let failure, !writePipeline.isEmpty {
            if handshakeWasComplete {
                handleWriteError(failure)
            } else {
                handleHandshakeError(failure)
            }
        }
        // Restarts (after backoff) for transient errors; after a rejection the pipeline may
        // already have restarted the stream.
        if shouldStartWriteStream {
            startWriteStream()
        }
    }

    /// The stream failed before the handshake completed: the server may not accept the
    /// stream token (e.g. it is too old). A permanent error clears it.
    private func handleHandshakeError(_ error: DocError) {
        guard Self.isPermanentError(error.code) else { return }
        logger.debug("write stream handshake failed with \(error); resetting the stream token")
        writeStream.lastStreamToken = []
        localStore.setLastStreamToken([])
    }

    /// A write failed. A transient error is left to the restart (the same batches are sent
    /// again after backoff); a permanent one rejects the oldest batch, which will never
    /// succeed, and the stream restarts at once with the rest.
    private func handleWriteError(_ error: DocError) {
        if error.isBatchIDConflict, let batch = writePipeline.first, onBatchIDConflict?(batch.batchID, error) == true {
            // Not the batch's fault: a new client id, and the same batches again at once.
            writeConnection.inhibitBackoff()
            return
        }
        guard Self.isPermanentWriteError(error.code) else { return }
        let batch = writePipeline.removeFirst()
        // A bad request, not a struggling server: no reason to wait before the next batch.
        writeConnection.inhibitBackoff()
        syncer?.rejectFailedWrite(batchID: batch.batchID, error: error)
        fillWritePipeline()
    }

    /// Whether retrying after `code` cannot help. `aborted` counts as permanent here (as for
    /// any request), but not for writes (see ``isPermanentWriteError(_:)``).
    private static func isPermanentError(_ code: DocError.Code) -> Bool {
        !code.isTransient || code == .aborted
    }

    /// Whether a write failing with `code` is rejected rather than retried: every code that is
    /// not transient (`aborted`, a contention failure, is retried).
    private static func isPermanentWriteError(_ code: DocError.Code) -> Bool {
        !code.isTransient
    }
}

extension RemoteStore: TargetMetadataProvider {
    /// The documents the sync engine has in the target.
    package func remoteKeys(for targetID: TargetID) -> Set<DocumentKey> {
        syncer?.remoteKeys(for: targetID) ?? []
    }

    /// The target, while it is listened to.
    package func targetData(for targetID: TargetID) -> TargetData? {
        listenTargets[targetID]
    }
}

/// Receives the streams' and the tracker's callbacks and forwards them to the remote store.
/// It exists because the streams are created (with their delegate) inside the remote store's
/// initializer, before `self` can be handed out; it holds the store weakly.
private final class Callbacks: WatchStreamDelegate, WriteStreamDelegate {
    weak var owner: RemoteStore?

    func watchStreamDidOpen() { owner?.watchStreamDidOpen() }

    func watchStreamDidChange(_ change: WatchChange, snapshotVersion: SnapshotVersion) {
        owner?.watchStreamDidChange(change, snapshotVersion: snapshotVersion)
    }

    func watchStreamDidClose(error: DocError?) { owner?.watchStreamDidClose(error: error) }

    func writeStreamDidOpen() { owner?.writeStreamDidOpen() }

    func writeStreamDidCompleteHandshake() { owner?.writeStreamDidCompleteHandshake() }

    func writeStreamDidReceiveResults(_ results: [WriteStreamResult]) { owner?.writeStreamDidReceiveResults(results) }

    func writeStreamDidReject(batchID: BatchID, error: DocError) { owner?.writeStreamDidReject(batchID: batchID, error: error) }

    func writeStreamDidClose(error: DocError?) { owner?.writeStreamDidClose(error: error) }
}

/// How a remote store handled the existence filters whose count did not match the client's
/// (``WatchChangeAggregator/handleExistenceFilter(targetID:count:bloomFilter:)``).
package struct ExistenceFilterCounts: Sendable, Hashable {
    /// Existence filters whose count differed from the client's.
    package var mismatches = 0
    /// Mismatches the bloom filter settled without a re-query.
    package var resolvedByBloomFilter = 0
    /// Documents those bloom filters removed from their targets (then resolved in limbo).
    package var documentsRemovedByBloomFilter = 0
    /// Mismatches re-queried because the count still differed after the bloom filter (a
    /// false positive).
    package var bloomFilterFalsePositives = 0
    /// Mismatches re-queried because there was no usable bloom filter.
    package var withoutUsableBloomFilter = 0

    package init() {}
}

import DocModel
import DocProtocol

/// The write stream over a ``FrameTransport``: its own connection (`hello` → `welcome`), the
/// write handshake, then batches out and results in, in order.
///
/// - Every batch is sent as `(clientId, batchId)` with the store's persistent client id, so a
///   batch sent again after a reconnect is answered with its stored outcome and never applied
///   twice.
/// - Batches written while the stream handles an incoming frame (the handshake's whole
///   pipeline, the refills after a frame of results) are sent together in one `writeBatches`
///   frame, which the server commits as a group (one synced write): when the handling ends,
///   or earlier when the delegate calls ``sendWritten()`` (the remote store does once it has
///   refilled, before it stores the acknowledgements). A frame of results that reports a
///   batch as not committed for a reason that must be retried sends nothing more: the stream
///   closes, and the batches after the failed one are sent again first. A batch written on
///   its own goes out at once as `write`. A group too large for one frame is split.
/// - `writeResult`, and each committed answer of `writeResults`, acknowledges the oldest batch
///   in flight (commit version, per-write update versions and transform results) and updates
///   ``lastStreamToken``.
/// - A rejection of the oldest batch in flight (a `writeError`, or a failed answer of
///   `writeResults`, with a code that is not transient) is handed to the delegate, and the
///   stream goes on: the server attempts the batches after it as usual, so their answers
///   (later in the same frame, or in later frames) are taken as they come.
/// - Any other failure of a batch closes the stream with the server's error: a transient
///   one (the remote store sends the batch again after backoff), and the answers about the
///   batch id, after which the server attempts nothing more of the connection (the remote
///   store takes a new client id, or keeps the batch as a failed write).
/// - A `writeError` for a batch that is not the oldest in flight means the server refused a
///   `writeBatches` frame as a whole (the batches before it in the frame were not decided), and
///   a non-fatal `error` frame while a `writeBatches` frame is unanswered that the server does
///   not take them: the stream then sends one batch per frame and closes with a transient
///   error, so every batch is sent again, alone, and answered for itself.
/// - A fatal `error` frame or a dropped connection closes the stream with that error.
///
/// ``stop()`` never calls the delegate. Used on the client core's actor only.
package final class NetworkWriteStream: WriteStream {
    private let link: NetworkStreamLink
    private let clientID: ClientIdentity
    private let activity: SyncActivity
    private weak var delegate: (any WriteStreamDelegate)?
    /// Batches sent on this connection and not yet answered, oldest first.
    private var inFlight: [BatchID] = []
    /// Batches written while an incoming frame is handled, sent together afterwards (or at
    /// ``sendWritten()``).
    private var unsent: [MutationBatch] = []
    private var isHandlingEvent = false
    /// The frame being handled answered a batch as not committed, to be sent again (the stream
    /// is about to close): nothing written meanwhile may leave before the batches after it are
    /// sent again, so ``write(_:)`` takes nothing (neither sent nor counted as an attempt); the
    /// batches stay in the remote store's pipeline, which sends them after the next handshake.
    private var isHandlingFailedFrame = false
    /// `writeBatches` frames sent on this connection and not yet answered.
    private var groupFramesInFlight = 0
    /// Whether several batches may share a frame (until the server refuses such a frame).
    private var sendsGroups = true
    private let limits = FrameLimits.default

    package private(set) var isHandshakeComplete = false
    package var lastStreamToken: ResumeToken = []

    init(link: NetworkStreamLink, clientID: ClientIdentity, activity: SyncActivity, delegate: any WriteStreamDelegate) {
        self.link = link
        self.clientID = clientID
        self.activity = activity
        self.delegate = delegate
        link.onEvent = { [weak self] event in self?.handle(event) }
    }

    package var isStarted: Bool { link.isStarted }
    package var isOpen: Bool { link.isOpen }

    package func start() {
        reset()
        link.start()
    }

    package func stop() {
        link.stop()
        reset()
    }

    package func markIdle() {
        link.markIdle { [weak self] in
            self?.reset()
            self?.delegate?.writeStreamDidClose(error: nil)
        }
    }

    package func writeHandshake() {
        link.send(.writeHandshake(.init(streamToken: lastStreamToken.isEmpty ? nil : lastStreamToken)))
    }

    package func write(_ batch: MutationBatch) {
        guard link.isOpen, isHandshakeComplete, !isHandlingFailedFrame else { return }
        inFlight.append(batch.batchID)
        activity.batchSent(batch.batchID)
        unsent.append(batch)
        if !isHandlingEvent { flush() }
    }

    package func sendWritten() {
        flush()
    }

    /// Sends the batches written since the last flush: one `write` frame for a single batch,
    /// `writeBatches` frames for several.
    private func flush() {
        guard !unsent.isEmpty else { return }
        let batches = unsent
        unsent.removeAll()
        guard link.isOpen else { return }
        activity.recordFirstSends()
        send(batches[...])
    }

    private func send(_ batches: ArraySlice<MutationBatch>) {
        let token = lastStreamToken.isEmpty ? nil : lastStreamToken
        guard batches.count > 1, sendsGroups else {
            for batch in batches {
                link.send(.write(.init(clientID: clientID.current, batchID: batch.batchID, mutations: batch.mutations, streamToken: token)))
            }
            return
        }
        if batches.count > limits.maxBatchesPerFrame {
            send(batches.prefix(limits.maxBatchesPerFrame))
            send(batches.dropFirst(limits.maxBatchesPerFrame))
            return
        }
        let frame = FrameEncoder.string(.writeBatches(.init(
            clientID: clientID.current, batches: batches.map { .init(batchID: $0.batchID, mutations: $0.mutations) }, streamToken: token)))
        guard frame.utf8.count <= limits.maxFrameBytes else {
            let middle = batches.startIndex + batches.count / 2
            send(batches[..<middle])
            send(batches[middle...])
            return
        }
        groupFramesInFlight += 1
        link.send(frame: frame)
    }

    private func reset() {
        isHandshakeComplete = false
        activity.batchesStopped(inFlight)
        inFlight.removeAll()
        unsent.removeAll()
        groupFramesInFlight = 0
    }

    private func handle(_ event: StreamEvent) {
        isHandlingEvent = true
        defer {
            isHandlingEvent = false
            isHandlingFailedFrame = false
            flush()
        }
        switch event {
        case .opened:
            activity.streamOpened(.write)
            delegate?.writeStreamDidOpen()
        case .received(.writeHandshake(let response)):
            lastStreamToken = response.streamToken
            isHandshakeComplete = true
            delegate?.writeStreamDidCompleteHandshake()
        case .received(.writeResult(let result)):
            if let token = result.streamToken { lastStreamToken = token }
            acknowledge(result.batchID, commitVersion: result.commitVersion, results: result.results)
        case .received(.writeError(let answer)):
            if let token = answer.streamToken { lastStreamToken = token }
            if isRejectionOfOldest(answer.batchID, answer.error) {
                reject(answer.batchID, answer.error)
            } else {
                refuse(answer.batchID, answer.error)
            }
        case .received(.writeResults(let frame)):
            groupFramesInFlight = max(0, groupFramesInFlight - 1)
            if let token = frame.streamToken { lastStreamToken = token }
            take(frame.answers)
        case .received(.error(let frame)) where groupFramesInFlight > 0:
            // A refused frame of several batches (a server that does not take them).
            fallBackToSingleBatches(frame.error)
        case .received:
            // Watch messages and non-fatal errors carry nothing for the write stream.
            break
        case .closed(let error):
            activity.streamClosed(.write, error, wasOpen: link.lastClose.wasOpen, wasIdle: link.lastClose.wasIdle)
            activity.batchesFailed(inFlight, error)
            reset()
            delegate?.writeStreamDidClose(error: error)
        }
    }

    /// The answers of a `writeResults` frame, in order. Each run of committed answers is
    /// acknowledged together, a rejection between them on its own, and the stream goes on. An
    /// answer that must be sent again (a transient failure, an answer about the batch id) or
    /// one out of order ends the frame: what was answered before it is taken, then the stream
    /// closes. That end is known before anything is taken, so that no refill leaves ahead of
    /// the batches sent again.
    private func take(_ answers: [ServerMessage.WriteResults.Answer]) {
        // Answer `i` is for the `i`th batch in flight: each one before the end takes one.
        let end = answers.indices.first { i in !Self.leavesStreamOpen(answers[i], expected: i < inFlight.count ? inFlight[i] : nil) }
        isHandlingFailedFrame = end != nil
        var committed: [WriteStreamResult] = []
        // Acknowledges the run of committed answers so far; `false` when that stopped the
        // stream (an unusable result: what is left of the frame is answered again after the
        // reconnect).
        func acknowledgeCommitted() -> Bool {
            guard !committed.isEmpty else { return link.isOpen }
            inFlight.removeFirst(committed.count)
            let run = committed
            committed.removeAll()
            delegate?.writeStreamDidReceiveResults(run)
            return link.isOpen
        }
        for answer in answers[..<(end ?? answers.endIndex)] {
            switch answer {
            case .committed(_, let version, let results):
                committed.append(WriteStreamResult(commitVersion: version, results: results))
            case .failed(let batchID, let error):
                guard acknowledgeCommitted() else { return }
                reject(batchID, error)
                guard link.isOpen else { return }
            }
        }
        guard acknowledgeCommitted(), let end else { return }
        switch answers[end] {
        case .committed(let batchID, _, _): failOutOfOrder(batchID)
        case .failed(let batchID, let error): refuse(batchID, error)
        }
    }

    /// Whether the stream goes on after `answer`, which must be for the batch `expected`: a
    /// commit of it, or a rejection (``isRejection(_:)``).
    private static func leavesStreamOpen(_ answer: ServerMessage.WriteResults.Answer, expected: BatchID?) -> Bool {
        switch answer {
        case .committed(let batchID, _, _): batchID == expected
        case .failed(let batchID, let error): batchID == expected && isRejection(error)
        }
    }

    /// Whether `error` rejects a batch for good and leaves the connection usable: a code that
    /// is not transient, and not one of the answers about the batch id, after which the server
    /// attempts nothing more of the connection.
    private static func isRejection(_ error: DocError) -> Bool {
        !error.code.isTransient && !error.isBatchIDConflict
    }

    /// Whether a `writeError` rejects the oldest batch in flight (see ``isRejection(_:)``).
    private func isRejectionOfOldest(_ batchID: BatchID, _ error: DocError) -> Bool {
        inFlight.first == batchID && Self.isRejection(error)
    }

    /// The server rejected `batchID`, the oldest batch in flight, for good: the delegate drops
    /// it, and the batches after it are answered on this stream (the server goes on with them).
    private func reject(_ batchID: BatchID, _ error: DocError) {
        inFlight.removeFirst()
        delegate?.writeStreamDidReject(batchID: batchID, error: error)
    }

    /// The server committed `batchID`, which must be the oldest batch in flight.
    private func acknowledge(_ batchID: BatchID, commitVersion: SnapshotVersion, results: [MutationResult]) {
        guard inFlight.first == batchID else {
            failOutOfOrder(batchID)
            return
        }
        inFlight.removeFirst()
        delegate?.writeStreamDidReceiveResult(commitVersion: commitVersion, results: results)
    }

    /// The server answered `batchID` out of order: the stream fails (`internal`).
    private func failOutOfOrder(_ batchID: BatchID) {
        fail(DocError(.internal,
            "the server answered batch \(batchID), but the oldest batch in flight is \(inFlight.first.map(String.init) ?? "none")"))
    }

    /// The server did not commit `batchID`: the stream closes with its error.
    private func refuse(_ batchID: BatchID, _ error: DocError) {
        if inFlight.first != batchID, inFlight.contains(batchID) {
            // A `writeBatches` frame refused as a whole: the batches before this one were not
            // decided.
            fallBackToSingleBatches(error)
            return
        }
        if error.code.isTransient {
            // Not a rejection: the server could not decide now (e.g. it is shutting down).
            activity.streamFailed(.write, error)
            activity.batchesFailed([batchID], error)
        }
        fail(error)
    }

    /// The server refused a frame of several batches: from now on one batch per frame, and the
    /// stream closes with a transient error so that every batch in flight is sent again.
    private func fallBackToSingleBatches(_ cause: DocError) {
        sendsGroups = false
        let error = DocError(.unavailable, "the server refused a frame of several batches (\(cause.message)); sending one batch per frame")
        activity.streamFailed(.write, error)
        fail(error)
    }

    /// Closes the stream with `error` (the remote store decides what happens to the batch).
    private func fail(_ error: DocError) {
        link.stop()
        reset()
        delegate?.writeStreamDidClose(error: error)
    }
}

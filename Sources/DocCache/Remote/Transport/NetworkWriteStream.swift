import DocModel
import DocProtocol

/// The write stream over a ``FrameTransport``: its own connection (`hello` → `welcome`), the
/// write handshake, then batches out and results in, in order.
///
/// - Every batch is sent as `(clientId, batchId)` with the store's persistent client id, so a
///   batch sent again after a reconnect is answered with its stored outcome and never applied
///   twice.
/// - `writeResult` acknowledges the oldest batch in flight (commit version, per-write update
///   versions and transform results) and updates ``lastStreamToken``.
/// - `writeError` closes the stream with the server's error: the remote store rejects the
///   batch for a permanent code and sends it again after backoff for a transient one.
/// - A fatal `error` frame or a dropped connection closes the stream with that error.
///
/// ``stop()`` never calls the delegate. Used on the client core's actor only.
package final class NetworkWriteStream: WriteStream {
    private let link: NetworkStreamLink
    private let clientID: String
    private let activity: SyncActivity
    private weak var delegate: (any WriteStreamDelegate)?
    /// Batches sent on this connection and not yet answered, oldest first.
    private var inFlight: [BatchID] = []

    package private(set) var isHandshakeComplete = false
    package var lastStreamToken: ResumeToken = []

    init(link: NetworkStreamLink, clientID: String, activity: SyncActivity, delegate: any WriteStreamDelegate) {
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
        guard link.isOpen, isHandshakeComplete else { return }
        inFlight.append(batch.batchID)
        activity.batchSent(batch.batchID)
        link.send(.write(.init(
            clientID: clientID, batchID: batch.batchID, mutations: batch.mutations,
            streamToken: lastStreamToken.isEmpty ? nil : lastStreamToken)))
    }

    private func reset() {
        isHandshakeComplete = false
        activity.batchesStopped(inFlight)
        inFlight.removeAll()
    }

    private func handle(_ event: StreamEvent) {
        switch event {
        case .opened:
            activity.streamOpened(.write)
            delegate?.writeStreamDidOpen()
        case .received(.writeHandshake(let response)):
            lastStreamToken = response.streamToken
            isHandshakeComplete = true
            delegate?.writeStreamDidCompleteHandshake()
        case .received(.writeResult(let result)):
            guard inFlight.first == result.batchID else {
                fail(DocError(.internal,
                    "the server answered batch \(result.batchID), but the oldest batch in flight is \(inFlight.first.map(String.init) ?? "none")"))
                return
            }
            inFlight.removeFirst()
            if let token = result.streamToken { lastStreamToken = token }
            delegate?.writeStreamDidReceiveResult(commitVersion: result.commitVersion, results: result.results)
        case .received(.writeError(let answer)):
            if let token = answer.streamToken { lastStreamToken = token }
            if answer.error.code.isTransient {
                // Not a rejection: the server could not decide now (e.g. it is shutting down).
                activity.streamFailed(.write, answer.error)
                activity.batchesFailed([answer.batchID], answer.error)
            }
            fail(answer.error)
        case .received:
            // Watch messages and non-fatal errors carry nothing for the write stream.
            break
        case .closed(let error):
            activity.streamFailed(.write, error)
            activity.batchesFailed(inFlight, error)
            reset()
            delegate?.writeStreamDidClose(error: error)
        }
    }

    /// Closes the stream with `error` (the remote store decides what happens to the batch).
    private func fail(_ error: DocError) {
        link.stop()
        reset()
        delegate?.writeStreamDidClose(error: error)
    }
}

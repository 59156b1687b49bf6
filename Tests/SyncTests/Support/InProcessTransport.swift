import DocModel
import DocProtocol
import DocServer
import DocTestSupport
import Synchronization
@testable import DocCache

/// A ``FrameTransport`` that hands the client's frames to the real ``DocServerCore`` of a
/// ``TestServerHost`` in the same process, as the WebSocket server will: the first frame must
/// be `hello`, whose token is verified (`TokenVerifier`); then every frame goes to
/// `receive(frame:on:)` in order and every server message comes back as a text frame, in
/// order. Only the socket is skipped.
///
/// Tests count what crossed it (``stats``) and inject faults (``dropAfterNextCommit()``).
final class InProcessTransport: FrameTransport {
    /// What crossed the transport, counted as the frames pass.
    struct Stats: Sendable {
        /// Connections that said `hello`.
        var connections = 0
        /// Connection attempts refused because the server was stopped.
        var refused = 0
        /// Frames by type, both directions (client frames prefixed with `→`).
        var frames: [String: Int] = [:]
        /// `write` frames the client sent, by batch id.
        var writesSent: [Int: Int] = [:]
        /// The batch ids of the `write` frames, in the order they were sent.
        var writeOrder: [Int] = []
        /// `addTarget` frames with a resume token (resumed listens).
        var resumedListens = 0
        /// `addTarget` frames without a resume token (full listens).
        var freshListens = 0
        /// The batch ids the client sent on a connection after that connection gave it a
        /// frame of answers failed by ``failAnswersOfNextWriteResults()``.
        var writesAfterFailedAnswers: [Int] = []
        /// Server frames the client received edited (``mutateServerFrames(seed:every:)``).
        var mutatedFrames = 0
    }

    private struct Faults {
        var dropsPending = 0
        /// Refuse connections after the next drop.
        var refuseAfterDrop = false
        var refusing = false
        /// `write` frames wait before reaching the server.
        var holdingWrites = false
        /// The next `writeResults` frame reaches the client with its answers after the first
        /// `n` failed.
        var failNextAnswersAfter: Int?
        /// Edits server frames on their way (``mutateServerFrames(seed:every:)``).
        var mutator: JSONMutator?
        var mutateEvery = 1
    }

    let host: TestServerHost
    private let state = Mutex((stats: Stats(), faults: Faults()))

    init(host: TestServerHost) {
        self.host = host
    }

    /// A snapshot of the counters.
    var stats: Stats { state.withLock { $0.stats } }

    /// The number of frames of `type` the server sent (`documentChange`, `writeResult`, …).
    func received(_ type: String) -> Int { stats.frames[type] ?? 0 }

    /// The next `write` frame is committed by the server, then the connection drops before
    /// the client can read the answer; with `thenRefuse`, connections are refused from then on
    /// until ``acceptConnections()``.
    func dropAfterNextCommit(thenRefuse: Bool = false) {
        state.withLock {
            $0.faults.dropsPending += 1
            $0.faults.refuseAfterDrop = thenRefuse
        }
    }

    /// `write` frames wait before reaching the server until ``releaseWrites()`` (the client
    /// has sent them; the server has not answered).
    func holdWrites() {
        state.withLock { $0.faults.holdingWrites = true }
    }

    func releaseWrites() {
        state.withLock { $0.faults.holdingWrites = false }
    }

    /// Returns when `message` may reach the server.
    func passGate(_ message: ClientMessage) async {
        switch message {
        case .write, .writeBatches: break
        default: return
        }
        while state.withLock({ $0.faults.holdingWrites }) { try? await Task.sleep(for: .milliseconds(5)) }
    }

    /// The next `writeResults` frame of more than `kept` answers reaches the client with every
    /// answer after its first `kept` turned into a transient failure (`unavailable`), as when
    /// the server could not decide them; the server has answered them all (committed or
    /// rejected). The batch ids the client sends on that connection afterwards are counted in
    /// ``Stats/writesAfterFailedAnswers``.
    func failAnswersOfNextWriteResults(after kept: Int = 1) {
        state.withLock { $0.faults.failNextAnswersAfter = kept }
    }

    /// `message` as the client receives it, and whether it is a frame failed by
    /// ``failAnswersOfNextWriteResults()`` (consumes the fault).
    func deliver(_ message: ServerMessage) -> (ServerMessage, failed: Bool) {
        guard case .writeResults(var results) = message,
              let kept = state.withLock({ state -> Int? in
                  guard let kept = state.faults.failNextAnswersAfter, results.answers.count > kept else { return nil }
                  state.faults.failNextAnswersAfter = nil
                  return kept
              })
        else { return (message, false) }
        results.answers = results.answers.prefix(kept) + results.answers.dropFirst(kept).map {
            .failed(batchID: $0.batchID, error: DocError(.unavailable, "the test transport failed this answer"))
        }
        return (.writeResults(results), true)
    }

    /// Counts the batches of `message` as sent after a failed frame of answers.
    func recordAfterFailedAnswers(_ message: ClientMessage) {
        let ids: [Int]
        switch message {
        case .write(let batch): ids = [batch.batchID]
        case .writeBatches(let frame): ids = frame.batches.map(\.batchID)
        default: return
        }
        state.withLock { $0.stats.writesAfterFailedAnswers += ids }
    }

    /// From now on, about one server frame in `every` reaches the client edited by a
    /// ``JSONMutator`` seeded with `seed` (the server sent the original), until
    /// ``stopMutatingServerFrames()``.
    func mutateServerFrames(seed: UInt64, every: Int) {
        state.withLock {
            $0.faults.mutator = JSONMutator(seed: seed)
            $0.faults.mutateEvery = every
        }
    }

    func stopMutatingServerFrames() {
        state.withLock { $0.faults.mutator = nil }
    }

    /// The text of `message` as the client receives it: its encoding, or an edit of it.
    func text(of message: ServerMessage) -> String {
        let text = FrameEncoder.string(message)
        return state.withLock { state in
            guard var mutator = state.faults.mutator else { return text }
            defer { state.faults.mutator = mutator }
            guard mutator.int(in: 0..<state.faults.mutateEvery) == 0, let edited = mutator.mutate(text: text) else { return text }
            state.stats.mutatedFrames += 1
            return edited
        }
    }

    /// Lets connections through again.
    func acceptConnections() {
        state.withLock { $0.faults.refusing = false }
    }

    func connect() async throws(DocError) -> any FrameConnection {
        guard let core = host.core, !state.withLock({ $0.faults.refusing }) else {
            state.withLock { $0.stats.refused += 1 }
            throw DocError(.unavailable, "connection refused: the test server is stopped")
        }
        return InProcessConnection(core: core, verifier: host.verifier, transport: self)
    }

    func record(received message: ServerMessage) {
        state.withLock { $0.stats.frames[message.type, default: 0] += 1 }
    }

    func record(sent message: ClientMessage) {
        state.withLock { state in
            state.stats.frames["→" + message.type, default: 0] += 1
            switch message {
            case .write(let batch):
                state.stats.writesSent[batch.batchID, default: 0] += 1
                state.stats.writeOrder.append(batch.batchID)
            case .writeBatches(let frame):
                for batch in frame.batches {
                    state.stats.writesSent[batch.batchID, default: 0] += 1
                    state.stats.writeOrder.append(batch.batchID)
                }
            case .hello:
                state.stats.connections += 1
            case .addTarget(let request):
                if request.resumeToken == nil { state.stats.freshListens += 1 } else { state.stats.resumedListens += 1 }
            case .removeTarget, .writeHandshake, .aggregate:
                break
            }
        }
    }

    /// Whether to drop the connection after committing this client frame (consumes the fault).
    func shouldDrop(after message: ClientMessage) -> Bool {
        switch message {
        case .write, .writeBatches: break
        default: return false
        }
        return state.withLock { state in
            guard state.faults.dropsPending > 0 else { return false }
            state.faults.dropsPending -= 1
            if state.faults.refuseAfterDrop { state.faults.refusing = true }
            return true
        }
    }
}

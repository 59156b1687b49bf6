import DocModel
import DocProtocol
import DocServer
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
        /// Connections that completed `hello` → `welcome`.
        var connections = 0
        /// Connection attempts refused because the server was stopped.
        var refused = 0
        /// Frames by type, both directions (client frames prefixed with `→`).
        var frames: [String: Int] = [:]
        /// `write` frames the client sent, by batch id.
        var writesSent: [Int: Int] = [:]
    }

    let host: TestServerHost
    private let state = Mutex((stats: Stats(), dropsPending: 0))

    init(host: TestServerHost) {
        self.host = host
    }

    /// A snapshot of the counters.
    var stats: Stats { state.withLock { $0.stats } }

    /// The number of frames of `type` the server sent (`documentChange`, `writeResult`, …).
    func received(_ type: String) -> Int { stats.frames[type] ?? 0 }

    /// The next `write` frame is committed by the server, then the connection drops before
    /// the client can read the answer.
    func dropAfterNextCommit() {
        state.withLock { $0.dropsPending += 1 }
    }

    func connect() async throws(DocError) -> any FrameConnection {
        guard let core = host.core else {
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
            if case .write(let batch) = message { state.stats.writesSent[batch.batchID, default: 0] += 1 }
            if case .hello = message { state.stats.connections += 1 }
        }
    }

    /// Whether to drop the connection after committing this client frame (consumes the fault).
    func shouldDrop(after message: ClientMessage) -> Bool {
        guard case .write = message else { return false }
        return state.withLock { state in
            guard state.dropsPending > 0 else { return false }
            state.dropsPending -= 1
            return true
        }
    }
}

import DocModel
import DocProtocol
import DocServer
import Synchronization
@testable import DocCache

/// One connection of an ``InProcessTransport``: the server side of the WebSocket endpoint,
/// without the socket.
final class InProcessConnection: FrameConnection {
    private struct State {
        var connection: ServerConnection?
        var closed = false
        /// Server messages are no longer delivered (the connection is dropping).
        var dropping = false
        /// A frame of answers failed by the transport was delivered on this connection.
        var deliveredFailedAnswers = false
        var pump: Task<Void, Never>?
    }

    let inbound: AsyncThrowingStream<String, any Error>
    private let continuation: AsyncThrowingStream<String, any Error>.Continuation
    private let core: DocServerCore
    private let verifier: TokenVerifier
    private let transport: InProcessTransport
    private let state = Mutex(State())

    init(core: DocServerCore, verifier: TokenVerifier, transport: InProcessTransport) {
        self.core = core
        self.verifier = verifier
        self.transport = transport
        (inbound, continuation) = AsyncThrowingStream.makeStream(of: String.self, throwing: (any Error).self)
    }

    func send(_ frame: String) async throws(DocError) {
        let (closed, connection) = state.withLock { ($0.closed, $0.connection) }
        guard !closed else { throw DocError(.unavailable, "the connection is closed") }
        let message: ClientMessage
        do {
            message = try FrameDecoder().decodeClientMessage(frame)
        } catch {
            // The server answers bad frames itself; let it.
            if let connection { await core.receive(text: frame, on: connection) }
            return
        }
        transport.record(sent: message)
        if state.withLock({ $0.deliveredFailedAnswers }) { transport.recordAfterFailedAnswers(message) }
        await transport.passGate(message)
        guard let connection else {
            await handshake(message)
            return
        }
        if transport.shouldDrop(after: message) {
            state.withLock { $0.dropping = true }
            await core.receive(message, on: connection)
            await drop()
            return
        }
        await core.receive(message, on: connection)
    }

    /// The first frame: `hello` with a valid token, as the WebSocket server requires.
    private func handshake(_ message: ClientMessage) async {
        guard case .hello(let hello) = message else {
            fail(DocError(.invalidArgument, "the first frame must be hello, got \(message.type)"))
            return
        }
        let connection: ServerConnection
        do {
            let auth = try await verifier.verify(hello.token)
            connection = try await core.handshake(hello, tenant: auth.tenant, uid: auth.uid)
        } catch {
            fail(error)
            return
        }
        let pump = Task { [continuation, transport] in
            for await message in connection.outbound {
                guard !self.state.withLock({ $0.dropping }) else { break }
                let (delivered, failed) = transport.deliver(message)
                if failed { self.state.withLock { $0.deliveredFailedAnswers = true } }
                transport.record(received: delivered)
                continuation.yield(transport.text(of: delivered))
            }
            continuation.finish()
        }
        let closedMeanwhile = state.withLock { state -> Bool in
            state.connection = connection
            state.pump = pump
            return state.closed
        }
        if closedMeanwhile { await core.close(connection) }
    }

    /// Answers with a fatal error frame and closes, as the server does for a bad `hello`.
    private func fail(_ error: DocError) {
        let frame = ServerMessage.error(.init(error, fatal: true))
        transport.record(received: frame)
        continuation.yield(FrameEncoder.string(frame))
        continuation.finish()
        state.withLock { $0.closed = true }
    }

    /// The connection drops: the client sees an error, the server a closed connection.
    private func drop() async {
        continuation.finish(throwing: DocError(.unavailable, "connection reset by the test transport"))
        await close()
    }

    func close() async {
        let (connection, pump) = state.withLock { state -> (ServerConnection?, Task<Void, Never>?) in
            state.closed = true
            return (state.connection, state.pump)
        }
        if let connection { await core.close(connection) }
        pump?.cancel()
        continuation.finish()
    }
}

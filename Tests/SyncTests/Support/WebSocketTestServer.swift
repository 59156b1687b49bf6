import DocModel
import DocProtocol
import DocServer
import Hummingbird
import HummingbirdWebSocket
import Synchronization

/// A minimal WebSocket front for a ``TestServerHost`` on loopback, shaped like the real
/// server's (`GET /health`, `GET /listen` upgraded to WebSocket, `hello` with a verified token
/// first, frames up to 4 MiB), so the client's real ``WebSocketTransport`` can be exercised
/// before the production server exists on this branch. It bridges frames to the real
/// `DocServerCore` exactly as ``InProcessConnection`` does.
final class WebSocketTestServer: Sendable {
    private let task: Task<Void, any Error>
    /// The port it listens on (127.0.0.1).
    let port: Int

    private init(task: Task<Void, any Error>, port: Int) {
        self.task = task
        self.port = port
    }

    /// `http://127.0.0.1:PORT`.
    var url: String { "http://127.0.0.1:\(port)" }

    static func start(host: TestServerHost) async throws -> WebSocketTestServer {
        let maxFrame = FrameLimits.default.maxFrameBytes
        let router = Router(context: BasicWebSocketRequestContext.self)
        router.ws("/listen") { inbound, outbound, _ in
            guard let core = host.core else { return }
            var frames = inbound.messages(maxSize: maxFrame).makeAsyncIterator()
            guard case .text(let first)? = try await frames.next() else { return }
            let connection: ServerConnection
            do {
                guard case .hello(let hello) = try FrameDecoder().decodeClientMessage(first) else {
                    throw DocError(.invalidArgument, "the first frame must be hello")
                }
                let auth = try await host.verifier.verify(hello.token)
                connection = try await core.handshake(hello, tenant: auth.tenant, uid: auth.uid)
            } catch {
                let refusal = (error as? DocError) ?? (error as? FrameError)?.error ?? DocError(.internal, "\(error)")
                try await outbound.write(.text(FrameEncoder.string(.error(.init(refusal, fatal: true)))))
                return
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await message in connection.outbound {
                        try await outbound.writeTextMessage(FrameEncoder.string(message))
                    }
                }
                while let message = try await frames.next() {
                    if case .text(let text) = message { await core.receive(text: text, on: connection) }
                }
                await core.close(connection)
                group.cancelAll()
            }
        }
        let port = PortBox()
        let app = Application(
            router: Router(),
            server: .http1WebSocketUpgrade(
                webSocketRouter: router, configuration: .init(ws: .init(maxFrameSize: maxFrame, autoPing: .disabled))),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in port.set(channel.localAddress?.port ?? 0) },
            logger: .discarding
        )
        let task = Task { try await app.runService(gracefulShutdownSignals: []) }
        let deadline = ContinuousClock.now + .seconds(30)
        while port.value == 0 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        guard port.value != 0 else {
            task.cancel()
            throw DocError(.unavailable, "the test WebSocket server did not start")
        }
        return WebSocketTestServer(task: task, port: port.value)
    }

    /// Stops listening and waits for the server to end.
    func stop() async {
        task.cancel()
        _ = try? await task.value
    }
}

private final class PortBox: Sendable {
    private let port = Mutex(0)
    func set(_ value: Int) { port.withLock { $0 = value } }
    var value: Int { port.withLock { $0 } }
}

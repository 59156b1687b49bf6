import DocModel
import DocProtocol
import DocTestSupport
import HummingbirdWSClient
import Logging
import Synchronization

/// A WebSocket connection for protocol-level tests: send text frames as written, read the
/// server's frames one by one (decoded), see when the server closed.
final class Received: Sendable {
    private let state = Mutex<(frames: [String], closed: Bool)>(([], false))
    func withLock<R>(_ body: (inout (frames: [String], closed: Bool)) -> R) -> R { state.withLock { body(&$0) } }
}

final class RawSocket: Sendable {
    private let outgoing: AsyncStream<String>.Continuation
    private let received = Received()
    private let task: Task<Void, Never>

    init(url: String, maxFrameSize: Int = 8 * 1024 * 1024) {
        let (outStream, outContinuation) = AsyncStream<String>.makeStream()
        outgoing = outContinuation
        let received = self.received
        let wsURL = url.replacingOccurrences(of: "http://", with: "ws://") + "/listen"
        task = Task {
            var configuration = WebSocketClientConfiguration()
            configuration.maxFrameSize = maxFrameSize
            _ = try? await WebSocketClient.connect(url: wsURL, configuration: configuration, logger: Logger(label: "raw-socket")) {
                inbound, outbound, _ in
                await withTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await text in outStream {
                            try? await outbound.write(.text(text))
                        }
                        try? await outbound.close(.normalClosure, reason: nil)
                    }
                    do {
                        for try await message in inbound.messages(maxSize: maxFrameSize) {
                            if case .text(let text) = message { received.withLock { $0.frames.append(text) } }
                        }
                    } catch {}
                    outContinuation.finish()
                }
            }
            received.withLock { $0.closed = true }
        }
    }

    func send(_ text: String) { outgoing.yield(text) }
    func send(_ message: ClientMessage) { send(FrameEncoder.string(message)) }

    /// The next frame from the server, decoded; nil when the connection closed first (or
    /// 60 s passed).
    func next() async -> ServerMessage? {
        guard let text = await nextText() else { return nil }
        return try? FrameDecoder().decodeServerMessage(text)
    }

    /// The next frame's text; nil when the connection closed first (or 60 s passed).
    func nextText() async -> String? {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let (frame, closed) = received.withLock { state -> (String?, Bool) in
                state.frames.isEmpty ? (nil, state.closed) : (state.frames.removeFirst(), false)
            }
            if let frame { return frame }
            if closed { return nil }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return nil
    }

    /// Frames until one matches, or nil at close.
    func next(where predicate: (ServerMessage) -> Bool) async -> ServerMessage? {
        while let message = await next() {
            if predicate(message) { return message }
        }
        return nil
    }

    /// Whether the server closed the connection (after every frame was read).
    var isClosed: Bool { received.withLock { $0.closed } }

    /// Closes the connection: waits up to 5 s for the client to end, then cancels it and
    /// returns (a server killed in the middle of the WebSocket upgrade leaves the client
    /// library waiting for an answer that never comes).
    func close() async {
        outgoing.finish()
        let task = self.task
        let ended = Flag()
        Task {
            await task.value
            ended.set()
        }
        if await !eventually(5, { ended.isSet }) { task.cancel() }
    }

    /// `hello` with this token and client id; returns the answer (`welcome` or `error`).
    func hello(token: String, clientID: String = "client-\(UInt64.random(in: 0...UInt64.max))") async -> ServerMessage? {
        send(.hello(.init(protocolVersion: .current, token: token, clientID: clientID)))
        return await next()
    }
}

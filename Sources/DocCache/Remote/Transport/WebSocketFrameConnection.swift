import DocModel
import HummingbirdWSClient
import Logging
import Synchronization

/// One WebSocket connection of a ``WebSocketTransport``.
///
/// HummingbirdWSClient runs a connection inside `WebSocketClient.connect`'s handler closure:
/// the connection is open while the handler runs. A task runs the client; the handler hands
/// its outbound writer to this object, forwards every text message to ``inbound`` and returns
/// when the server closes. ``close()`` cancels the task, which closes the socket.
final class WebSocketFrameConnection: FrameConnection {
    private enum State {
        /// Connecting; `opened` is resumed once the handler runs or the connection fails.
        case connecting(CheckedContinuation<Void, any Error>?)
        case open(WebSocketOutboundWriter)
        case closed
    }

    let inbound: AsyncThrowingStream<String, any Error>
    private let inboundContinuation: AsyncThrowingStream<String, any Error>.Continuation
    private let state = Mutex(State.connecting(nil))
    private let task = Mutex<Task<Void, Never>?>(nil)
    private let url: String

    private init(url: String) {
        self.url = url
        (inbound, inboundContinuation) = AsyncThrowingStream.makeStream(of: String.self, throwing: (any Error).self)
    }

    /// Connects to `url` (a `ws://` or `wss://` URL); returns once the WebSocket upgrade
    /// succeeded, or fails with `unavailable` when it has not after `timeout` (a server that
    /// dies in the middle of the upgrade closes the socket without an answer, and the client
    /// library would wait for one forever).
    static func open(url: String, maxFrameBytes: Int, timeout: Duration, logger: Logger) async throws(DocError) -> WebSocketFrameConnection {
        let connection = WebSocketFrameConnection(url: url)
        let watchdog = Task {
            try? await Task.sleep(for: timeout)
            guard !Task.isCancelled else { return }
            connection.abort(DocError(.unavailable, "\(url) did not complete the WebSocket upgrade within \(timeout)"), onlyIfConnecting: true)
        }
        defer { watchdog.cancel() }
        do {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (opened: CheckedContinuation<Void, any Error>) in
                    let proceed = connection.state.withLock { state -> Bool in
                        if case .closed = state { return false }
                        state = .connecting(opened)
                        return true
                    }
                    guard proceed else {
                        opened.resume(throwing: DocError(.cancelled, "connecting to \(url) was cancelled"))
                        return
                    }
                    let task = Task {
                        await connection.run(maxFrameBytes: maxFrameBytes, logger: logger)
                    }
                    connection.task.withLock { $0 = task }
                }
            } onCancel: {
                connection.abort(DocError(.cancelled, "connecting to \(url) was cancelled"))
            }
        } catch let error as DocError {
            throw error
        } catch {
            throw DocError(.unavailable, "cannot connect to \(url): \(error)")
        }
        return connection
    }

    private func run(maxFrameBytes: Int, logger: Logger) async {
        // Pings find connections that died silently (a dropped Wi-Fi, a NAT that forgot us):
        // an unanswered ping closes the connection, and the remote store reconnects.
        var configuration = WebSocketClientConfiguration(maxFrameSize: maxFrameBytes, autoPing: .enabled(timePeriod: .seconds(30)))
        configuration.closeTimeout = .seconds(5)
        var failure: DocError?
        do {
            try await WebSocketClient.connect(url: url, configuration: configuration, logger: logger) { inbound, outbound, _ in
                guard self.didOpen(outbound) else { return }
                for try await message in inbound.messages(maxSize: maxFrameBytes) {
                    // The protocol uses text frames only; binary frames are ignored.
                    if case .text(let text) = message { self.inboundContinuation.yield(text) }
                }
            }
        } catch {
            failure = DocError(.unavailable, "the connection to \(url) failed: \(error)")
        }
        finish(failure ?? DocError(.unavailable, "the server closed the connection (\(url))"))
    }

    /// The handler runs: the connection is open. Returns false when it was closed meanwhile.
    private func didOpen(_ writer: WebSocketOutboundWriter) -> Bool {
        let opened = state.withLock { state -> CheckedContinuation<Void, any Error>?? in
            guard case .connecting(let waiter) = state else { return nil }
            state = .open(writer)
            return .some(waiter)
        }
        guard let waiter = opened else { return false }
        waiter?.resume()
        return true
    }

    /// The connection ended (or never opened): `inbound` ends with `error`, a waiting
    /// `open` fails with it.
    private func finish(_ error: DocError) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            defer { state = .closed }
            if case .connecting(let waiter) = state { return waiter }
            return nil
        }
        waiter?.resume(throwing: error)
        inboundContinuation.finish(throwing: error)
    }

    func send(_ frame: String) async throws(DocError) {
        let writer = state.withLock { state -> WebSocketOutboundWriter? in
            if case .open(let writer) = state { return writer }
            return nil
        }
        guard let writer else { throw DocError(.unavailable, "the connection to \(url) is closed") }
        do {
            try await writer.writeTextMessage(frame)
        } catch {
            throw DocError(.unavailable, "cannot send to \(url): \(error)")
        }
    }

    func close() async {
        abort(DocError(.cancelled, "the connection to \(url) was closed"))
    }

    /// Closes at once: a connect still waiting fails with `error`, ``inbound`` ends, and the
    /// client's task is cancelled (which closes the socket). With `onlyIfConnecting`, an open
    /// or closed connection is left as it is.
    private func abort(_ error: DocError, onlyIfConnecting: Bool = false) {
        // `.some(waiter)` when closing now (the waiter of a connect still waiting, if any).
        let closing = state.withLock { state -> CheckedContinuation<Void, any Error>?? in
            var waiter: CheckedContinuation<Void, any Error>?
            if case .connecting(let w) = state { waiter = w } else if onlyIfConnecting { return .none }
            state = .closed
            return .some(waiter)
        }
        guard let waiter = closing else { return }
        waiter?.resume(throwing: error)
        inboundContinuation.finish()
        task.withLock { $0 }?.cancel()
    }
}

import DocModel
import DocProtocol
import Synchronization

/// One connection of a network stream, run by a task off the client's actor: get a token,
/// connect, say `hello`, wait for `welcome`, then send the stream's outgoing frames and report
/// every incoming frame, until the connection ends. Every step is reported through `sink`
/// (``StreamEvent``), which hops onto the client core's actor.
///
/// The session never retries: when the connection fails it reports ``StreamEvent/closed(_:)``
/// and ends; the remote store decides when to start again (with backoff). Cancelling the task
/// (the stream was stopped) closes the connection and reports nothing more.
enum StreamSession {
    /// Starts a session.
    ///
    /// - Parameters:
    ///   - outgoing: the frames to send after `welcome`, in order; finishing it (or cancelling
    ///     the task) ends the session.
    ///   - sink: where events go; awaited for each, so events arrive in order.
    static func start(
        configuration: NetworkConfiguration, clientID: String, outgoing: AsyncStream<String>,
        sink: @escaping @Sendable (StreamEvent) async -> Void
    ) -> Task<Void, Never> {
        Task {
            let connection = SessionBox<(any FrameConnection)?>(nil)
            do throws(DocError) {
                try await run(configuration: configuration, clientID: clientID, outgoing: outgoing, sink: sink) { opened in
                    connection.value = opened
                }
            } catch {
                await connection.value?.close()
                guard !Task.isCancelled else { return }
                await sink(.closed(error))
                return
            }
            await connection.value?.close()
        }
    }

    private static func run(
        configuration: NetworkConfiguration, clientID: String, outgoing: AsyncStream<String>,
        sink: @escaping @Sendable (StreamEvent) async -> Void, connected: (any FrameConnection) -> Void
    ) async throws(DocError) {
        let token = try await fetchToken(configuration.token)
        guard !Task.isCancelled else { throw DocError(.cancelled, "the stream was stopped") }
        let connection = try await configuration.transport.connect()
        connected(connection)
        guard !Task.isCancelled else { throw DocError(.cancelled, "the stream was stopped") }
        try await connection.send(FrameEncoder.string(.hello(.init(token: token, clientID: clientID))))

        // The server must answer `hello` in time; a silent server counts as unreachable.
        let timeout = configuration.handshakeTimeout
        let (watchdog, timedOut) = Self.watchdog(closing: connection, after: timeout)
        defer { watchdog.cancel() }
        let sendFailure = SessionBox<DocError?>(nil)

        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                var welcomed = false
                for try await text in connection.inbound {
                    let message = try decode(text)
                    if !welcomed {
                        switch message {
                        case .welcome:
                            welcomed = true
                            watchdog.cancel()
                            group.addTask {
                                // The stream's frames, in order, until it is stopped.
                                for await frame in outgoing {
                                    do throws(DocError) {
                                        try await connection.send(frame)
                                    } catch {
                                        sendFailure.value = error
                                        await connection.close()
                                        return
                                    }
                                }
                            }
                            await sink(.opened)
                        case .error(let frame):
                            throw frame.error
                        default:
                            throw DocError(.internal, "the server answered hello with \"\(message.type)\" instead of \"welcome\"")
                        }
                        continue
                    }
                    if case .error(let frame) = message, frame.fatal { throw frame.error }
                    await sink(.received(message))
                }
                group.cancelAll()
            }
        } catch let error as DocError {
            throw error
        } catch is CancellationError {
            throw DocError(.cancelled, "the stream was stopped")
        } catch {
            throw DocError(.unavailable, "the connection failed: \(error)")
        }
        // The frames ended without an error from the server.
        if timedOut.value {
            throw DocError(.unavailable, "the server did not answer hello within \(timeout)")
        }
        if let failure = sendFailure.value { throw failure }
        throw DocError(.unavailable, "the server closed the connection")
    }

    /// Closes `connection` after `timeout` unless the task is cancelled first; the box says
    /// whether it fired.
    static func watchdog(closing connection: any FrameConnection, after timeout: Duration) -> (Task<Void, Never>, SessionBox<Bool>) {
        let fired = SessionBox(false)
        let task = Task {
            try? await Task.sleep(for: timeout)
            guard !Task.isCancelled else { return }
            fired.value = true
            await connection.close()
        }
        return (task, fired)
    }

    static func fetchToken(_ provider: @Sendable () async throws -> String) async throws(DocError) -> String {
        do {
            return try await provider()
        } catch let error as DocError {
            throw error
        } catch {
            throw DocError(.unauthenticated, "the token provider failed: \(error)")
        }
    }

    static func decode(_ text: String) throws(DocError) -> ServerMessage {
        do {
            return try FrameDecoder().decodeServerMessage(text)
        } catch {
            throw DocError(.internal, "the server sent an invalid frame: \(error.error.message)", at: error.error.location)
        }
    }
}

/// A value shared between a session's tasks.
final class SessionBox<Value: Sendable>: Sendable {
    private let storage: Mutex<Value>
    init(_ value: Value) { storage = Mutex(value) }
    var value: Value {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
}

#if canImport(FoundationEssentials)
internal import FoundationEssentials
#else
internal import Foundation
#endif
internal import DocModel
internal import DocProtocol
internal import HummingbirdWebSocket
internal import NIOWebSocket
internal import NIOCore
internal import Logging

/// One WebSocket connection on `/listen`: the `hello` handshake, then a streaming transport
/// around ``DocServerCore`` — frames in, one at a time and in order, in this task; the
/// connection's outbound frames out, in order, written from its event loop by an
/// ``OutboxPump``.
///
/// Ending: the client closing the socket closes the core connection; the core ending the
/// connection (a fatal `error` frame: shutdown, overflow) closes the socket after that frame.
/// A connection ends when its token expires (after the verifier's tolerance): a fatal
/// `unauthenticated` frame, and the client reconnects with a fresh token and resumes.
struct ListenSession: Sendable {
    let core: DocServerCore
    let verifier: TokenVerifier
    let maxFrameBytes: Int
    let logger: Logger
    /// The pump queues of the server's event loops.
    let pumps: PumpQueues

    /// Serves the connection on `channel` (upgraded to WebSocket) until either side ends it.
    func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, channel: any Channel) async {
        var messages = inbound.messages(maxSize: maxFrameBytes).makeAsyncIterator()
        let first: WebSocketMessage
        do {
            guard let message = try await messages.next() else { return }
            first = message
        } catch {
            logger.info("connection failed before its handshake", metadata: ["error": "\(error)"])
            return
        }
        let connection: ServerConnection
        let auth: AuthContext
        do {
            (connection, auth) = try await handshake(first)
        } catch {
            logger.info("handshake refused", metadata: ["error": "\(error)"])
            // Fatal: the frame, then the socket closes as this handler returns.
            try? await outbound.write(.text(FrameEncoder.string(.error(.init(error, fatal: true)))))
            return
        }
        let ended = channel.eventLoop.makePromise(of: Void.self)
        let pump = OutboxPump(outbox: connection.outbound, queue: pumps.queue(for: channel.eventLoop), ended: ended)
        do {
            try await channel.eventLoop.submit {
                let pipeline = channel.pipeline.syncOperations
                let encoder = try pipeline.handler(type: WebSocketFrameEncoder.self)
                try pipeline.addHandler(pump, position: .before(encoder))
                try pipeline.addHandler(CloseFrameWatcher(pump: pump), position: .after(encoder))
            }.get()
        } catch {
            // The channel closed before the pump could join it.
            ended.succeed(())
            await core.close(connection)
            return
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await Self.endAtExpiry(of: auth, connection: connection)
            }
            group.addTask {
                // The core ended the connection (or the client left), and the pump has written
                // its last frame: closing the socket ends the receive loop below.
                try? await ended.futureResult.get()
                try? await outbound.close(.goingAway, reason: nil)
            }
            do {
                while let message = try await messages.next() {
                    switch message {
                    case .text(let text):
                        await core.receive(text: text, on: connection)
                    case .binary(let buffer):
                        await core.receive(frame: Array(buffer.readableBytesView), on: connection)
                    }
                }
            } catch {
                logger.info("connection ended with an error", metadata: [
                    "connection": "\(connection.id)", "error": "\(error)",
                ])
            }
            await core.close(connection)
            group.cancelAll()
        }
    }

    /// Verifies the first frame, which must be `hello` with a valid token, and opens the
    /// connection in the token's tenant (the token's ``AuthContext`` says how long after its
    /// `exp` the connection may stay open). The core writes the access line of a handshake that reaches
    /// it; one refused before (not `hello`, a bad token) gets its line here.
    private func handshake(_ first: WebSocketMessage) async throws(DocError) -> (ServerConnection, AuthContext) {
        let started = ContinuousClock.now
        let hello: ClientMessage.Hello
        let auth: AuthContext
        do {
            (hello, auth) = try await verify(first)
        } catch {
            AccessLog.log(core.accessLogger, op: "handshake", code: error.code, started: started,
                          ["tenant": "-", "uid": "-", "client": "-"])
            throw error
        }
        return (try await core.handshake(hello, auth: auth), auth)
    }

    /// Waits until the token has expired (`exp` plus its ``AuthContext/expiryTolerance``), then
    /// ends the connection with a fatal `unauthenticated` frame. Returns early when cancelled
    /// (the connection ended).
    static func endAtExpiry(of auth: AuthContext, connection: ServerConnection) async {
        let nowMicros = Int64(Date().timeIntervalSince1970 * 1_000_000)
        let remaining = Duration.microseconds(auth.expiresAt.microseconds - nowMicros) + auth.expiryTolerance
        if remaining > .zero {
            do {
                try await Task.sleep(for: remaining)
            } catch {
                return
            }
        }
        let error = DocError(.unauthenticated, "token expired at \(auth.expiresAt.rfc3339); reconnect with a fresh token")
        connection.outbound.finish(with: .error(.init(error, fatal: true)))
    }

    /// The first frame's `hello` and its verified token.
    private func verify(_ first: WebSocketMessage) async throws(DocError) -> (ClientMessage.Hello, AuthContext) {
        let limits = core.configuration.frameLimits
        let size: Int
        switch first {
        case .text(let text): size = text.utf8.count
        case .binary(let buffer): size = buffer.readableBytes
        }
        guard size <= limits.maxHelloFrameBytes else {
            // Not decoded: before the caller is known, no frame costs more than a hello's size.
            throw DocError(.invalidArgument, "the first frame of a connection must be hello; this one has \(size) bytes, "
                               + "more than a hello can (\(limits.maxHelloFrameBytes))")
        }
        let message: ClientMessage
        do {
            switch first {
            case .text(let text): message = try FrameDecoder(limits: limits).decodeClientMessage(text)
            case .binary(let buffer): message = try FrameDecoder(limits: limits).decodeClientMessage(Array(buffer.readableBytesView))
            }
        } catch {
            throw error.error
        }
        guard case .hello(let hello) = message else {
            throw DocError(.failedPrecondition, "the first frame of a connection must be hello, not \(message.type)", at: message.type)
        }
        return (hello, try await verifier.verify(hello.token))
    }
}

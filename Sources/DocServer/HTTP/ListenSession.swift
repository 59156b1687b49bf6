internal import DocModel
internal import DocProtocol
internal import HummingbirdWebSocket
internal import Logging

/// One WebSocket connection on `/listen`: the `hello` handshake, then the two loops of a
/// streaming transport around ``DocServerCore`` — frames in, one at a time and in order; the
/// connection's outbound frames out, in order.
///
/// Ending: the client closing the socket closes the core connection; the core ending the
/// connection (a fatal `error` frame: shutdown, overflow) closes the socket after that frame.
struct ListenSession: Sendable {
    let core: DocServerCore
    let verifier: TokenVerifier
    let maxFrameBytes: Int
    let logger: Logger

    func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async {
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
        do {
            connection = try await handshake(first)
        } catch {
            logger.info("handshake refused", metadata: ["error": "\(error)"])
            // Fatal: the frame, then the socket closes as this handler returns.
            try? await outbound.write(.text(FrameEncoder.string(.error(.init(error, fatal: true)))))
            return
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await message in connection.outbound {
                    do {
                        try await outbound.write(.text(FrameEncoder.string(message)))
                    } catch {
                        break
                    }
                }
                // The core ended the connection (or the client left): closing the socket ends
                // the receive loop below.
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
    /// connection in the token's tenant.
    private func handshake(_ first: WebSocketMessage) async throws(DocError) -> ServerConnection {
        let message: ClientMessage
        do {
            switch first {
            case .text(let text): message = try FrameDecoder(limits: core.configuration.frameLimits).decodeClientMessage(text)
            case .binary(let buffer):
                message = try FrameDecoder(limits: core.configuration.frameLimits).decodeClientMessage(Array(buffer.readableBytesView))
            }
        } catch {
            throw error.error
        }
        guard case .hello(let hello) = message else {
            throw DocError(.failedPrecondition, "the first frame of a connection must be hello, not \(message.type)", at: message.type)
        }
        let auth = try await verifier.verify(hello.token)
        return try await core.handshake(hello, auth: auth)
    }
}

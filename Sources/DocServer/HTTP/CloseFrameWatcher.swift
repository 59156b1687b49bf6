internal import NIOCore
internal import NIOWebSocket

/// Tells a connection's ``OutboxPump`` that the WebSocket writer is sending a close frame, so
/// that no frame follows it (RFC 6455, section 5.5.1). Hummingbird-websocket sends one of its
/// own when the client closes, on a protocol error and at shutdown; the pump writes on the
/// socket's side of the frame encoder and would not see it otherwise.
///
/// Sits on the other side of the encoder, where the writer's frames are still
/// `WebSocketFrame`s; both handlers run on the channel's event loop.
final class CloseFrameWatcher: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let pump: OutboxPump

    init(pump: OutboxPump) {
        self.pump = pump
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if unwrapOutboundIn(data).opcode == .connectionClose { pump.closeSent() }
        context.write(data, promise: promise)
    }
}

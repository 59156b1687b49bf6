internal import Hummingbird
internal import HummingbirdWebSocket
internal import NIOCore

/// The request context of the server's router: Hummingbird's basic WebSocket context plus the
/// connection's channel, so a `/listen` connection can add its ``OutboxPump`` to its
/// pipeline once it is upgraded.
struct ServerRequestContext: Hummingbird.RequestContext, WebSocketRequestContext {
    var coreContext: CoreRequestContextStorage
    let webSocket: WebSocketHandlerReference<Self>
    /// The connection's channel.
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.webSocket = .init()
        self.channel = source.channel
    }
}

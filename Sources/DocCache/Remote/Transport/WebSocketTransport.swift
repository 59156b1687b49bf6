package import DocModel
import DocProtocol
import HummingbirdWSClient
package import Logging

/// The real ``FrameTransport``: a WebSocket connection (HummingbirdWSClient) to the server's
/// `GET /listen` endpoint, `ws(s)://host[:port]/listen`, derived from the server's
/// `http(s)://host[:port]` URL.
///
/// Frames of up to ``maxFrameBytes`` are accepted in both directions (the protocol's frames
/// are at most 4 MiB; larger messages are split into continuation frames and reassembled).
/// TLS (`https` / `wss`) uses the system's trust roots.
package struct WebSocketTransport: FrameTransport {
    /// The largest WebSocket frame sent or received, and the largest message reassembled:
    /// the protocol's frame limit (4 MiB).
    package static let maxFrameBytes = max(FrameLimits.default.maxFrameBytes, 4 << 20)

    /// Where connections go.
    package let server: ServerURL
    /// How long a connection may take to open (TCP, TLS and the WebSocket upgrade) before
    /// the attempt fails with `unavailable` and the client backs off and tries again.
    package var connectTimeout: Duration = .seconds(10)
    private let logger: Logger

    /// A transport to the server at `server`, logging to `logger` (silent by default).
    package init(server: ServerURL, logger: Logger = DocumentStore.silentLogger) {
        self.server = server
        self.logger = logger
    }

    /// A transport to the server whose base URL is `url` (`http(s)://host[:port]`).
    ///
    /// - Throws: `invalidArgument` for a URL that is not of that form.
    package init(url: String) throws(DocError) {
        self.init(server: try ServerURL(url))
    }

    package func connect() async throws(DocError) -> any FrameConnection {
        try await WebSocketFrameConnection.open(
            url: server.listenURL, maxFrameBytes: Self.maxFrameBytes, timeout: connectTimeout, logger: logger)
    }
}

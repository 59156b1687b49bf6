package import DocModel

/// Opens connections to a DocServer that carry the protocol's text frames (one JSON message
/// per frame, see `docs/protocol.md`).
///
/// The real implementation is ``WebSocketTransport``; tests plug in a transport that hands
/// frames to a server core in the same process. A transport knows nothing of the protocol's
/// messages: the network streams (``NetworkWatchStream``, ``NetworkWriteStream``) say `hello`,
/// decode frames and talk to the remote store. Reconnecting and backoff are the remote
/// store's job, never the transport's: a connection that fails stays failed.
package protocol FrameTransport: Sendable {
    /// Connects to the server.
    ///
    /// - Throws: `unavailable` when the server cannot be reached (refused, unresolvable, TLS
    ///   failure, the WebSocket upgrade was refused), with the underlying reason in the
    ///   message.
    func connect() async throws(DocError) -> any FrameConnection
}

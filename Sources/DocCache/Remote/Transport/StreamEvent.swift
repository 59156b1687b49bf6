import DocModel
package import DocProtocol

/// What a network stream's connection task reports to the stream, on the client core's actor
/// (see ``StreamEventRouter``).
package enum StreamEvent: Sendable {
    /// The server answered `hello` with `welcome`: the stream is open.
    case opened
    /// A frame from the server, decoded (fatal `error` frames arrive as ``closed(_:)``).
    case received(ServerMessage)
    /// The connection ended: it could not be opened (no token, unreachable, refused `hello`),
    /// the server closed it (with the fatal error frame's error), or it dropped (`unavailable`).
    case closed(DocError)
}

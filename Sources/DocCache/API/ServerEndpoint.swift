public import DocModel

/// Where a ``DocumentStore`` syncs: a DocServer's base URL and a source of bearer tokens.
///
/// ```swift
/// let server = try ServerEndpoint(url: "https://sync.example.com") {
///     try await auth.freshToken()   // a JWT for this tenant and user
/// }
/// let store = try await DocumentStore.open(directory: dir, tenant: "acme", user: "u1", server: server)
/// ```
///
/// The store connects to the server's WebSocket endpoint (`wss://sync.example.com/listen`
/// for the URL above; `ws://` for `http://`) and asks ``token`` for a token before every
/// connection, so a refreshed token is picked up at the next reconnect. A token the server
/// refuses closes the connection with `unauthenticated` (see ``DocumentStore/lastSyncError``);
/// the store keeps retrying with backoff. When a token expires, the server ends the connections
/// that use it, and the store connects again at once with a new token from ``token``.
public struct ServerEndpoint: Sendable {
    /// The server's base URL, `http(s)://host[:port]` (the URL of its `/health` endpoint
    /// without the path).
    public let url: String
    /// Returns a bearer token (JWT) for the store's tenant and user. Throwing counts as a
    /// failed connection attempt (`unauthenticated` unless you throw a `DocError`).
    public let token: @Sendable () async throws -> String

    let serverURL: ServerURL

    /// An endpoint at `url`.
    ///
    /// - Throws: `invalidArgument` when `url` is not `http://host[:port]` or
    ///   `https://host[:port]` (a trailing `/` is allowed; paths, queries and user info are not).
    public init(url: String, token: @escaping @Sendable () async throws -> String) throws(DocError) {
        serverURL = try ServerURL(url)
        self.url = url
        self.token = token
    }
}

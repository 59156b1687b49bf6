/// The address a running server is bound to.
public struct ServerAddress: Sendable, Hashable, CustomStringConvertible {
    /// The bound host.
    public var host: String
    /// The bound port (the real one when the settings asked for port 0).
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `http://HOST:PORT`, what clients and `docctl --server` take (IPv6 hosts in brackets).
    public var url: String {
        host.contains(":") ? "http://[\(host)]:\(port)" : "http://\(host):\(port)"
    }

    /// The line a server prints once it is ready: `listening on http://HOST:PORT`.
    public var description: String { "listening on \(url)" }
}

/// The address a running server is bound to.
public struct ServerAddress: Sendable, Hashable, CustomStringConvertible {
    /// The bound host.
    public var host: String
    /// The bound port (the real one when the settings asked for port 0).
    public var port: Int
    /// The port `GET /metrics` is served on (``port``, or the bound
    /// ``HTTPServerSettings/metricsPort``); `nil` when not known.
    public var metricsPort: Int?

    /// Creates an address as given; `metricsPort` is `nil` when unknown.
    public init(host: String, port: Int, metricsPort: Int? = nil) {
        self.host = host
        self.port = port
        self.metricsPort = metricsPort
    }

    /// `http://HOST:PORT`, what clients and `docctl --server` take (IPv6 hosts in brackets).
    public var url: String {
        host.contains(":") ? "http://[\(host)]:\(port)" : "http://\(host):\(port)"
    }

    /// `http://HOST:PORT/metrics` on the metrics port, when known.
    public var metricsURL: String? {
        metricsPort.map { ServerAddress(host: host, port: $0).url + HTTPServerSettings.metricsPath }
    }

    /// The line a server prints once it is ready: `listening on http://HOST:PORT`.
    public var description: String { "listening on \(url)" }
}

/// Where and how the HTTP / WebSocket front of the server listens, and its timers.
public struct HTTPServerSettings: Sendable, Hashable {
    /// The address to bind (default `127.0.0.1`).
    public var host: String
    /// The port to bind (default 8080); `0` lets the system pick a free port, which
    /// ``DocServerHTTP/run(onReady:)`` reports.
    public var port: Int
    /// How often idle listeners get a global snapshot, so their resume tokens advance
    /// (default 5 s). See ``DocServerCore/tick()``.
    public var tickInterval: Duration
    /// How often batch outcomes and change log entries past their retention are pruned
    /// (default 1 h). See ``DocServerCore/runMaintenance(sharingEvery:)``.
    public var maintenanceInterval: Duration
    /// How long a graceful shutdown waits for open connections to close after they were told
    /// the server is going away (default 10 s).
    public var shutdownGrace: Duration
    /// Where `GET /metrics` is served: `nil` (the default) on ``port`` beside `/health`; a port
    /// (`0`: a free one) on ``host`` alone, and then the main port answers 404 for it.
    public var metricsPort: Int?

    /// The WebSocket path clients connect to.
    public static let listenPath = "/listen"
    /// The health check path.
    public static let healthPath = "/health"
    /// The Prometheus metrics path.
    public static let metricsPath = "/metrics"

    /// Creates settings; every parameter defaults to the value documented on its property.
    public init(
        host: String = "127.0.0.1", port: Int = 8080, tickInterval: Duration = .seconds(5),
        maintenanceInterval: Duration = .seconds(3_600), shutdownGrace: Duration = .seconds(10), metricsPort: Int? = nil
    ) {
        self.host = host
        self.port = port
        self.tickInterval = tickInterval
        self.maintenanceInterval = maintenanceInterval
        self.shutdownGrace = shutdownGrace
        self.metricsPort = metricsPort
    }
}

internal import DocModel
internal import Prometheus
internal import Synchronization

/// The server core's metrics, in the core's own ``PrometheusCollectorRegistry`` (never the
/// process-wide `MetricsSystem`: several cores may run in one process, as in the tests).
///
/// The names, types and labels are listed in docs/operations.md, "Metrics". Everything the
/// request path touches is made here, once: a counter is a relaxed atomic add, a histogram one
/// short uncontended lock (swift-prometheus's), and no event builds a string or looks a metric
/// up by name. Labels are low-cardinality: an error code, a store operation, a registered
/// request type, a tenant (bounded by the tenants served); never a uid, a path or a batch.
///
/// The registry's own metric types are used rather than swift-metrics' `Counter` / `Timer`
/// over a `PrometheusMetricsFactory`: the same atomics and histograms without the existential
/// handler hop, with `# HELP` lines (the factory registers metrics without help) and buckets per
/// metric. The factory is still offered to embedders (``DocServerCore/metricsFactory``).
final class ServerMetrics: Sendable {
    let registry: PrometheusCollectorRegistry

    /// Open connections (set when scraped).
    let connections: Gauge
    /// Tenants with live state in this process (set when scraped).
    let tenants: Gauge
    /// Connections opened (handshakes that succeeded).
    let connectionsOpened: Counter
    /// Frames received from clients, valid or not.
    let framesReceived: Counter

    /// Batches committed for clients (`source="client"`) and by request processing
    /// (`source="request"`).
    let clientCommits: Counter
    let requestCommits: Counter
    /// Store transactions that recorded batch outcomes: one per batch committed on its own,
    /// one per group commit.
    let storeCommits: Counter
    /// A committed batch's processing in its tenant's turn: rules, preconditions, the store's
    /// atomic commit (not the wait for the turn, not the fan-out).
    let commitDuration: DurationHistogram
    /// A commit's fan-out to the tenant's listeners.
    let fanOutDuration: DurationHistogram
    /// Client batches, aggregate requests and frames answered with an error, by
    /// `DocError.Code.rawValue`.
    private let rejections: [Counter]

    /// Change log entries written by this process's commits, and pruned by its maintenance.
    let changeLogAppended: Counter
    let changeLogPruned: Counter
    /// Batch outcomes recorded by this process's commits (committed or rejected), and pruned.
    let outcomesRecorded: Counter
    let outcomesPruned: Counter

    /// Failures of the store (unavailable, internal, data loss…), by operation.
    let storeErrorsCommit: Counter
    let storeErrorsRead: Counter
    let storeErrorsOpen: Counter
    let storeErrorsMaintenance: Counter
    let storeErrorsRequest: Counter

    private let requestsByType = Mutex<[String: RequestTypeMetrics]>([:])
    private let targetsByTenant = Mutex<[TenantID: Gauge]>([:])

    /// The metrics of one request type.
    struct RequestTypeMetrics: Sendable {
        let applied: Counter
        let rejected: Counter
        let failed: Counter
        let duration: DurationHistogram
    }

    /// The buckets of every duration histogram: 50 µs … 10 s.
    static let durationBuckets: [Duration] = [
        .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500),
        .milliseconds(1), .microseconds(2_500), .milliseconds(5), .milliseconds(10), .milliseconds(25),
        .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .milliseconds(2_500), .seconds(5), .seconds(10),
    ]

    static let prefix = "doccache"

    private static func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: prefix, metricName: metric, unitName: unit, helpText: help)
    }

    init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        connections = registry.makeGauge(descriptor: Self.name("connections", "", "Open client connections."))
        tenants = registry.makeGauge(descriptor: Self.name("tenants", "", "Tenants with live state in this process."))
        connectionsOpened = registry.makeCounter(descriptor: Self.name(
            "connections_opened", "total", "Client connections opened (successful handshakes)."))
        framesReceived = registry.makeCounter(descriptor: Self.name(
            "frames_received", "total", "Frames received from clients after their handshake, valid or not."))

        let commits = Self.name("commits", "total",
                                "Write batches committed (applied now; re-sent batches answered from their outcome are not counted).")
        clientCommits = registry.makeCounter(descriptor: commits, labels: [("source", "client")])
        requestCommits = registry.makeCounter(descriptor: commits, labels: [("source", "request")])
        storeCommits = registry.makeCounter(descriptor: Self.name(
            "store_commits", "total",
            "Store transactions that recorded batch outcomes (one per batch committed alone, one per group commit)."))
        commitDuration = registry.makeDurationHistogram(
            descriptor: Self.name("commit_duration", "seconds",
                                  "Processing of a committed batch in its tenant's turn: rules, preconditions, the store's atomic commit."),
            buckets: Self.durationBuckets)
        fanOutDuration = registry.makeDurationHistogram(
            descriptor: Self.name("fanout_duration", "seconds", "Fan-out of one commit version to the tenant's listeners."),
            buckets: Self.durationBuckets)

        let rejection = Self.name("rejections", "total",
                                  "Client write batches, aggregate requests and frames answered with an error, by DocError code.")
        var byCode: [Counter] = []
        for raw in 1...16 {   // every code but ok
            let code = DocError.Code(rawValue: raw)!
            byCode.append(registry.makeCounter(descriptor: rejection, labels: [("code", code.name)]))
        }
        rejections = byCode

        changeLogAppended = registry.makeCounter(descriptor: Self.name(
            "change_log_entries_appended", "total", "Change log entries written by this process's commits."))
        changeLogPruned = registry.makeCounter(descriptor: Self.name(
            "change_log_entries_pruned", "total", "Change log entries pruned by this process's maintenance."))
        outcomesRecorded = registry.makeCounter(descriptor: Self.name(
            "batch_outcomes_recorded", "total", "Batch outcomes (committed or rejected) recorded by this process's commits."))
        outcomesPruned = registry.makeCounter(descriptor: Self.name(
            "batch_outcomes_pruned", "total", "Batch outcomes pruned by this process's maintenance."))

        let storeErrors = Self.name("store_errors", "total", "Store operations that failed (unavailable, internal, data loss…), by operation.")
        storeErrorsCommit = registry.makeCounter(descriptor: storeErrors, labels: [("op", "commit")])
        storeErrorsRead = registry.makeCounter(descriptor: storeErrors, labels: [("op", "read")])
        storeErrorsOpen = registry.makeCounter(descriptor: storeErrors, labels: [("op", "open")])
        storeErrorsMaintenance = registry.makeCounter(descriptor: storeErrors, labels: [("op", "maintenance")])
        storeErrorsRequest = registry.makeCounter(descriptor: storeErrors, labels: [("op", "request")])
    }

    // MARK: Events

    /// A client batch or frame answered with `code`.
    func rejected(_ code: DocError.Code) {
        let index = code.rawValue - 1
        guard rejections.indices.contains(index) else { return }
        rejections[index].increment()
    }

    /// Whether an error is the store failing (rather than a refusal or a lost race).
    static func isStoreFailure(_ code: DocError.Code) -> Bool {
        switch code {
        case .unavailable, .internal, .dataLoss, .deadlineExceeded, .unknown, .resourceExhausted, .cancelled:
            return true
        default:
            return false
        }
    }

    /// Counts a store failure of `op` (the counter), when `error` is one.
    func storeFailed(_ counter: Counter, _ error: DocError) {
        if Self.isStoreFailure(error.code) { counter.increment() }
    }

    /// The metrics of a request type (`unknown` for a type no handler is registered for: the
    /// label stays bounded by the registered types).
    func requests(type: String) -> RequestTypeMetrics {
        if let known = requestsByType.withLock({ $0[type] }) { return known }
        let total = Self.name("requests", "total", "Request documents processed, by type and outcome (applied, rejected, failed: left pending).")
        let labels = [("type", type)]
        let made = RequestTypeMetrics(
            applied: registry.makeCounter(descriptor: total, labels: labels + [("outcome", "applied")]),
            rejected: registry.makeCounter(descriptor: total, labels: labels + [("outcome", "rejected")]),
            failed: registry.makeCounter(descriptor: total, labels: labels + [("outcome", "failed")]),
            duration: registry.makeDurationHistogram(
                descriptor: Self.name("request_duration", "seconds",
                                      "A request document's processing, from taking it to its final commit (retries included)."),
                labels: labels, buckets: Self.durationBuckets))
        return requestsByType.withLock { known in
            if let existing = known[type] { return existing }
            known[type] = made
            return made
        }
    }

    /// The listen-target gauge of a tenant (made at the first scrape that finds its hub).
    func targets(tenant: TenantID) -> Gauge {
        targetsByTenant.withLock { gauges in
            if let gauge = gauges[tenant] { return gauge }
            let gauge = registry.makeGauge(
                descriptor: Self.name("listen_targets", "", "Listen targets of the tenant's connections (set when scraped)."),
                labels: [("tenant", tenant.rawValue)])
            gauges[tenant] = gauge
            return gauge
        }
    }

    /// The Prometheus text of every metric.
    func text() -> String { registry.emitToString() }
}

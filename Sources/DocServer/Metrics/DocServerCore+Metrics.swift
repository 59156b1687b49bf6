public import CoreMetrics
public import Prometheus

extension DocServerCore {
    /// The label `docctl serve` gives the access logger (``init(store:configuration:logger:accessLogger:)``).
    public static let accessLoggerLabel = AccessLog.label

    /// This core's metrics registry (each core has its own; the process-wide `MetricsSystem` is
    /// never bootstrapped). ``metricsText()`` renders it with the gauges brought up to date.
    public var metricsRegistry: PrometheusCollectorRegistry { metrics.registry }

    /// A swift-metrics factory over ``metricsRegistry``: metrics an embedder makes with it
    /// (`Counter(label: "myapp_transfers_total", factory: core.metricsFactory)`, in a request
    /// handler for instance) are served at `/metrics` beside the core's.
    public var metricsFactory: any MetricsFactory {
        var factory = PrometheusMetricsFactory(registry: metrics.registry)
        factory.defaultDurationHistogramBuckets = ServerMetrics.durationBuckets
        return factory
    }

    /// The metrics in the Prometheus text format (what `GET /metrics` serves): the counters and
    /// histograms as they stand, and the gauges read now (connections, tenants, listen targets
    /// per tenant). See docs/operations.md, "Metrics".
    public func metricsText() async -> String {
        let all = liveHubs()
        metrics.connections.set(to: Double(connectionCount))
        metrics.tenants.set(to: Double(all.count))
        for (tenant, hub) in all {
            metrics.targets(tenant: tenant).set(to: Double(await hub.targetCount))
        }
        return metrics.text()
    }
}

#if canImport(FoundationEssentials)
internal import FoundationEssentials
#else
internal import Foundation
#endif
public import Logging
internal import DocProtocol
internal import Hummingbird
internal import HummingbirdWebSocket
package import NIOCore
internal import ServiceLifecycle
internal import Synchronization
internal import UnixSignals

/// The server on the network: HTTP and WebSocket (Hummingbird 2) around a ``DocServerCore``.
///
/// - `GET /health`: the core's ``ServerHealth`` as JSON; status 200 when it can serve, 503
///   otherwise.
/// - `GET /metrics`: the core's metrics in the Prometheus text format
///   (``DocServerCore/metricsText()``), here or, with ``HTTPServerSettings/metricsPort``, on a
///   port of its own.
/// - `GET /listen`, upgraded to WebSocket: the doccache protocol (docs/protocol.md). The first
///   frame must be `hello` with a bearer token, which ``TokenVerifier`` checks; a bad or
///   expired token gets a fatal `unauthenticated` error frame and the socket closes.
/// - `GET /attachments/{id}/upload`, `PUT /attachments/{id}`, `GET /attachments/{id}`:
///   attachments (docs/attachments.md, "Server"), stored by the core's
///   ``ServerConfiguration/attachments``; without them these answer 501.
///
/// ```swift
/// let server = DocServerHTTP(core: core, verifier: verifier, settings: HTTPServerSettings(port: 0))
/// try await server.run { address in print(address) }   // "listening on http://127.0.0.1:53124"
/// ```
///
/// ``run(handleSignals:onReady:)`` returns after a graceful shutdown: on SIGTERM or SIGINT
/// (when it handles signals), or ``shutdown()``. Shutting down refuses new writes, commits the
/// ones already received, ends every stream with a fatal `unavailable` frame (clients
/// reconnect and resume from their tokens) and stops listening. The store stays open for its
/// owner to close.
public final class DocServerHTTP: Sendable {
    /// The server core requests go to.
    public let core: DocServerCore
    /// Address and timers.
    public let settings: HTTPServerSettings
    private let verifier: TokenVerifier
    private let logger: Logger
    private let group = Mutex<ServiceGroup?>(nil)
    private let stopRequested = Atomic<Bool>(false)
    /// The event loops the sockets run on; `nil`: SwiftNIO's shared ones.
    private let eventLoopGroup: (any EventLoopGroup)?

    /// A server for `core`, checking bearer tokens with `verifier`.
    public convenience init(core: DocServerCore, verifier: TokenVerifier, settings: HTTPServerSettings = HTTPServerSettings(),
                            logger: Logger = Logger(label: "doccache.server.http")) {
        self.init(core: core, verifier: verifier, settings: settings, logger: logger, eventLoopGroup: nil)
    }

    /// A server whose sockets run on `eventLoopGroup`: shutting that group down after the
    /// server stops closes every connection it still has, as a process exit would (tests that
    /// restart servers in process).
    package init(core: DocServerCore, verifier: TokenVerifier, settings: HTTPServerSettings, logger: Logger,
                 eventLoopGroup: (any EventLoopGroup)?) {
        self.core = core
        self.verifier = verifier
        self.settings = settings
        self.logger = logger
        self.eventLoopGroup = eventLoopGroup
    }

    /// Serves until a graceful shutdown, or until the task is cancelled.
    ///
    /// - Parameters:
    ///   - handleSignals: shut down gracefully on SIGTERM and SIGINT (default `true`; tests that
    ///     run servers in process pass `false` and call ``shutdown()``).
    ///   - onReady: called once the socket is bound, with the address (the real port when the
    ///     settings asked for port 0).
    /// - Throws: when the address cannot be bound.
    public func run(handleSignals: Bool = true, onReady: @escaping @Sendable (ServerAddress) async -> Void = { _ in }) async throws {
        let router = Router(context: ServerRequestContext.self)
        // Before any route: Hummingbird builds each route's middleware chain when it is added.
        router.add(middleware: ConnectionCloseMiddleware())
        let core = self.core
        router.get(RouterPath(stringLiteral: HTTPServerSettings.healthPath)) { _, _ -> Response in
            let health = await core.health()
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let body = (try? encoder.encode(health)) ?? Data("{\"status\":\"unavailable\"}".utf8)
            return Response(
                status: health.isOK ? .ok : .serviceUnavailable,
                headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
        if self.settings.metricsPort == nil { Self.addMetricsRoute(to: router, core: core) }
        // A WebSocket message may span frames; its whole size is bounded by the protocol's
        // frame limit (plus room for the framing of an oversized frame to be read and refused).
        let maxMessage = core.configuration.frameLimits.maxFrameBytes
        let session = ListenSession(
            core: core, verifier: verifier, maxFrameBytes: maxMessage, logger: logger, pumps: PumpQueues())
        router.ws(RouterPath(stringLiteral: HTTPServerSettings.listenPath), shouldUpgrade: { request, _ in
            // A plain GET (a browser, a misconfigured health check) is told what the path is for,
            // instead of an empty 200.
            guard request.headers[.upgrade]?.lowercased() == "websocket" else {
                throw HTTPError(.upgradeRequired, headers: [.upgrade: "websocket"],
                                message: "\(HTTPServerSettings.listenPath) is the WebSocket endpoint of the sync protocol (docs/protocol.md): connect with a WebSocket client")
            }
            return .upgrade([:])
        }) { inbound, outbound, context in
            await session.run(inbound: inbound, outbound: outbound, channel: context.requestContext.channel)
        }
        // Upload bodies are streamed to the blob store chunk by chunk: Hummingbird's
        // `maxUploadSize` only caps bodies collected in memory, which these handlers never do.
        AttachmentEndpoints(core: core, verifier: verifier, logger: logger).register(on: router)
        let settings = self.settings
        let logger = self.logger
        // With a metrics port, a second application serves /metrics there; the main one reports
        // ready once that port is bound too (its bound port goes into the address).
        let (metricsBound, metricsBoundContinuation) = AsyncStream<Int>.makeStream()
        var metricsService: MetricsService?
        if let metricsPort = settings.metricsPort {
            let metricsRouter = Router(context: BasicRequestContext.self)
            Self.addMetricsRoute(to: metricsRouter, core: core)
            metricsService = MetricsService(
                app: Application(
                    router: metricsRouter,
                    configuration: .init(address: .hostname(settings.host, port: metricsPort), serverName: "doccache-metrics"),
                    onServerRunning: { channel in
                        metricsBoundContinuation.yield(channel.localAddress?.port ?? metricsPort)
                        metricsBoundContinuation.finish()
                    },
                    logger: logger),
                bound: metricsBoundContinuation)
        } else {
            metricsBoundContinuation.finish()
        }
        let app = Application(
            router: router,
            server: .http1WebSocketUpgrade(
                webSocketRouter: router,
                configuration: .init(ws: .init(maxFrameSize: maxMessage))),
            configuration: .init(address: .hostname(settings.host, port: settings.port), serverName: "doccache"),
            onServerRunning: { channel in
                var address = ServerAddress(host: settings.host, port: channel.localAddress?.port ?? settings.port)
                if settings.metricsPort == nil {
                    address.metricsPort = address.port
                } else {
                    var bound = metricsBound.makeAsyncIterator()
                    // nil: the metrics port could not be bound, and the group is stopping.
                    guard let port = await bound.next() else { return }
                    address.metricsPort = port
                }
                logger.info("server ready", metadata: ["url": "\(address.url)", "metrics": "\(address.metricsURL ?? "")"])
                await onReady(address)
            },
            eventLoopGroupProvider: eventLoopGroup.map { .shared($0) } ?? .singleton,
            logger: logger)
        // Shut down in reverse order: the core first, then the HTTP server, the metrics last.
        var services: [any Service] = [app, CoreService(core: core, settings: settings, logger: logger)]
        if let metricsService { services.insert(metricsService, at: 0) }
        var configuration = ServiceGroupConfiguration(
            services: services,
            gracefulShutdownSignals: handleSignals ? [.sigterm, .sigint] : [],
            logger: logger)
        configuration.maximumGracefulShutdownDuration = settings.shutdownGrace
        let serviceGroup = ServiceGroup(configuration: configuration)
        group.withLock { $0 = serviceGroup }
        if stopRequested.load(ordering: .relaxed) { await serviceGroup.triggerGracefulShutdown() }
        try await serviceGroup.run()
    }

    /// Adds `GET /metrics` (the core's ``DocServerCore/metricsText()``) to `router`.
    private static func addMetricsRoute<Context: Hummingbird.RequestContext>(to router: Router<Context>, core: DocServerCore) {
        router.get(RouterPath(stringLiteral: HTTPServerSettings.metricsPath)) { _, _ -> Response in
            let text = await core.metricsText()
            return Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: text)))
        }
    }

    /// The metrics port's application; its bound port is reported through `bound`, which
    /// ends when the application does (so nobody waits for a port that failed to bind).
    private struct MetricsService: Service {
        let app: any Service
        let bound: AsyncStream<Int>.Continuation

        func run() async throws {
            defer { bound.finish() }
            try await app.run()
        }
    }

    /// Begins a graceful shutdown; ``run(handleSignals:onReady:)`` returns when it is done.
    public func shutdown() async {
        stopRequested.store(true, ordering: .relaxed)
        if let serviceGroup = group.withLock({ $0 }) { await serviceGroup.triggerGracefulShutdown() }
    }
}

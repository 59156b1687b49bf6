#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif
internal import DocModel
internal import Hummingbird
public import Logging
internal import NIOCore
internal import ServiceLifecycle
internal import Synchronization

/// The running server's administration endpoint for the embedded store: HTTP on a Unix domain
/// socket in the data directory (`DIR/admin.sock`, mode 0600), never on a network port.
///
/// A running server holds the LevelDB lock of its data directory, so no other process can open
/// the store; `docctl backup --data DIR` asks the server through this socket instead. The
/// socket's file permissions are the authority: whoever may open it may also read the data
/// directory's files, so it needs no token.
///
/// - `GET /backup`: 200 and a backup file (``BackupFormat``) of the whole store, streamed from
///   one LevelDB snapshot while commits go on. Also usable directly:
///   `curl --unix-socket DIR/admin.sock http://localhost/backup -o FILE` (then check it with
///   `docctl restore`, which refuses an incomplete or corrupt file).
///
/// ```swift
/// let admin = AdminSocketServer(store: store, path: AdminSocketServer.path(dataDirectory: dir), logger: logger)
/// let serving = Task { await admin.run() }
/// …
/// await admin.shutdown(); await serving.value      // before closing the store
/// ```
public final class AdminSocketServer: Sendable {
    /// The socket's file name in the data directory.
    public static let fileName = "admin.sock"

    /// The socket of the store in `dataDirectory`.
    public static func path(dataDirectory: String) -> String {
        (dataDirectory.hasSuffix("/") ? dataDirectory : dataDirectory + "/") + fileName
    }

    /// The path of the socket.
    public let path: String
    private let store: LevelDBServerStore
    private let logger: Logger
    private let shutdownGrace: Duration
    private let group = Mutex<ServiceGroup?>(nil)
    private let stopRequested = Atomic<Bool>(false)

    /// An endpoint for `store` at `path` (``path(dataDirectory:)``); a backup still being sent
    /// when ``shutdown()`` is called gets `shutdownGrace` to finish, then its connection is cut.
    public init(store: LevelDBServerStore, path: String, logger: Logger, shutdownGrace: Duration = .seconds(10)) {
        self.store = store
        self.path = path
        self.logger = logger
        self.shutdownGrace = shutdownGrace
    }

    /// Serves until ``shutdown()`` (or until the calling task is cancelled), then removes the
    /// socket file. A stale socket file (left by a server that was killed) is replaced. Failing
    /// to bind (e.g. a path longer than the system's limit for socket paths) is logged, not
    /// thrown: the server runs on without online backups.
    ///
    /// Stop it with ``shutdown()``: Hummingbird takes task cancellation for an abrupt stop and
    /// logs it at error level (`Waiting on child channel: CancellationError()`, and `Server
    /// shutdown error: Already closed` when its graceful close finds the socket closed).
    ///
    /// - Parameter onReady: called once the socket accepts connections.
    public func run(onReady: @escaping @Sendable () async -> Void = {}) async {
        let router = Router()
        let store = self.store
        let logger = self.logger
        router.get("/backup") { _, _ -> Response in
            Self.backupResponse(store: store, logger: logger)
        }
        let path = self.path
        let app = Application(
            router: router,
            configuration: .init(address: .unixDomainSocket(path: path), serverName: "doccache-admin"),
            onServerRunning: { _ in
                // Created with the process's umask; only the owner may connect.
                _ = chmod(path, 0o600)
                logger.info("admin socket ready", metadata: ["path": "\(path)"])
                await onReady()
            },
            logger: logger)
        // The group `app.runService` would make, kept so that `shutdown()` can stop it gracefully.
        var configuration = ServiceGroupConfiguration(services: [app], logger: logger)
        configuration.maximumGracefulShutdownDuration = shutdownGrace
        let serviceGroup = ServiceGroup(configuration: configuration)
        group.withLock { $0 = serviceGroup }
        if stopRequested.load(ordering: .relaxed) { await serviceGroup.triggerGracefulShutdown() }
        do {
            try await serviceGroup.run()
        } catch {
            if !Task.isCancelled {
                logger.error("the admin socket stopped: online backups are unavailable", metadata: [
                    "path": "\(path)", "error": "\(error)",
                ])
            }
        }
        _ = unlink(path)
    }

    /// Begins a graceful shutdown: the socket stops accepting connections, a backup being sent
    /// may finish (within the shutdown grace of ``init(store:path:logger:shutdownGrace:)``), then
    /// ``run(onReady:)`` removes the socket file and returns. Also when called before `run` starts.
    public func shutdown() async {
        stopRequested.store(true, ordering: .relaxed)
        if let serviceGroup = group.withLock({ $0 }) { await serviceGroup.triggerGracefulShutdown() }
    }

    /// The answer to `GET /backup`: a snapshot now, its backup streamed as the body.
    static func backupResponse(store: LevelDBServerStore, logger: Logger) -> Response {
        let source: LevelDBBackupSource
        do throws(DocError) {
            guard !store.database.isClosed else { throw DocError(.unavailable, "the store is closed") }
            source = try LevelDBBackupSource(database: store.database, clock: store.options.clock)
        } catch {
            logger.warning("backup refused", metadata: ["error": "\(error)"])
            return Response(status: .serviceUnavailable, headers: [.contentType: "text/plain; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(string: "\(error.message)\n")))
        }
        let header = source.header
        logger.info("backup started", metadata: [
            "tenants": "\(header.tenants.count)",
            "versions": "\(header.tenants.map { "\($0.tenant)@\($0.lastVersion)" }.joined(separator: ","))",
        ])
        // The source is handed from this handler to the body writer, which alone uses it.
        let handoff = Mutex<LevelDBBackupSource?>(source)
        let body = ResponseBody { writer in
            guard let source = handoff.withLock({ box -> sending LevelDBBackupSource? in
                let taken = box
                box = nil
                return taken
            }) else { return }
            let started = ContinuousClock.now
            do {
                while true {
                    let chunk: [UInt8]
                    do throws(DocError) {
                        guard let next = try source.next() else { break }
                        chunk = next
                    } catch {
                        logger.error("backup failed", metadata: ["error": "\(error)"])
                        try await writer.write(ByteBuffer(bytes: source.failure(error)))
                        break
                    }
                    try await writer.write(ByteBuffer(bytes: chunk))
                }
                try await writer.finish(nil)
                logger.info("backup sent", metadata: [
                    "records": "\(source.records)", "bytes": "\(source.bytes)", "duration": "\(ContinuousClock.now - started)",
                ])
            } catch {
                source.release()
                logger.warning("backup not completed: the connection ended", metadata: ["error": "\(error)"])
                throw error
            }
        }
        return Response(status: .ok, headers: [.contentType: "application/octet-stream"], body: body)
    }
}

internal import DocModel
internal import Logging
internal import PostgresNIO
internal import Synchronization

/// The store's connection to its database: a postgres-nio connection pool run in its own task,
/// every call bounded by the operation timeout, every error mapped to a ``DocError``.
///
/// Lifecycle: ``start()`` runs the pool; ``close()`` cancels it (calls made afterwards throw
/// `unavailable`). While the database is down, calls fail with `unavailable` after at most the
/// operation timeout (the pool keeps trying to connect with backoff); once it is back, calls
/// succeed again without anything being reopened.
final class PostgresDatabase: Sendable {
    let url: PostgresURL
    let options: PostgresServerStore.Options
    let client: PostgresClient
    /// The URL with its password hidden, for messages.
    var name: String { url.redacted }

    private let runner = Mutex<Task<Void, Never>?>(nil)
    private let closed = Atomic<Bool>(false)

    init(url: PostgresURL, options: PostgresServerStore.Options) throws(DocError) {
        self.url = url
        self.options = options
        var configuration: PostgresClient.Configuration
        if let socket = url.socketPath {
            configuration = .init(unixSocketPath: socket, username: url.user, password: url.password, database: url.database)
        } else {
            configuration = .init(host: url.host, port: url.port, username: url.user, password: url.password,
                                  database: url.database, tls: .disable)
            if let tls = Self.tls(for: url.tls) {
                configuration.tls = tls.required ? .require(tls.configuration) : .prefer(tls.configuration)
            }
        }
        configuration.options.connectTimeout = options.connectTimeout
        configuration.options.maximumConnections = max(1, options.maximumConnections)
        configuration.options.keepAliveBehavior = .init(frequency: .seconds(15))
        client = PostgresClient(configuration: configuration, backgroundLogger: options.logger)
    }

    /// The TLS a URL's mode asks for: `nil` for none; otherwise the configuration and whether
    /// a server without TLS is refused (`require` and the verifying modes) or accepted (`prefer`).
    static func tls(for mode: PostgresURL.TLSMode) -> (configuration: TLSConfiguration, required: Bool)? {
        switch mode {
        case .disable: return nil
        case .prefer: return (unverifiedTLS, false)
        case .require: return (unverifiedTLS, true)
        case .verifyCA, .verifyFull: return (.makeClientConfiguration(), true)
        }
    }

    /// TLS as libpq's `prefer`/`require`: encrypted, the server's certificate not checked.
    static var unverifiedTLS: TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        return tls
    }

    /// The configuration of a single connection outside the pool (start-up checks, migrations,
    /// the `LISTEN` connection).
    func connectionConfiguration() throws(DocError) -> PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        if let socket = url.socketPath {
            configuration = .init(unixSocketPath: socket, username: url.user, password: url.password, database: url.database)
        } else {
            configuration = .init(host: url.host, port: url.port, username: url.user, password: url.password,
                                  database: url.database, tls: .disable)
            do {
                if let tls = Self.tls(for: url.tls) {
                    let context = try NIOSSLContext(configuration: tls.configuration)
                    configuration.tls = tls.required ? .require(context) : .prefer(context)
                }
            } catch {
                throw DocError(.invalidArgument, "cannot set up TLS for \(name): \(error)")
            }
        }
        configuration.options.connectTimeout = TimeAmount(max(options.connectTimeout, .milliseconds(1)))
        return configuration
    }

    private static let connectionIDs = Atomic<Int>(1_000_000)

    /// Opens a connection outside the pool; the caller closes it.
    func connect() async throws(DocError) -> PostgresConnection {
        let configuration = try connectionConfiguration()
        let logger = options.logger
        let id = Self.connectionIDs.wrappingAdd(1, ordering: .relaxed).newValue
        let name = self.name
        return try await withDeadline(options.connectTimeout + .seconds(1), onTimeout: {
            DocError(.unavailable, "cannot connect to \(name): no answer within the connect timeout")
        }, discardLate: { late in
            // Connected after the caller gave up (timed out, or cancelled: a store closing):
            // nobody will use or close it.
            try? await late.close()
        }) { () async throws(DocError) -> PostgresConnection in
            do {
                return try await PostgresConnection.connect(configuration: configuration, id: id, logger: logger)
            } catch {
                let mapped = PostgresErrorMapping.map(error, doing: "connect", database: name)
                throw DocError(.unavailable, "cannot connect to \(name): \(mapped.message)")
            }
        }
    }

    /// Runs the pool (in a task of its own, until ``close()``).
    func start() {
        let client = self.client
        runner.withLock { runner in
            guard runner == nil else { return }
            runner = Task { await client.run() }
        }
    }

    var isClosed: Bool { closed.load(ordering: .acquiring) }

    /// Stops the pool and closes its connections.
    func close() async {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        guard let task = runner.withLock({ $0 }) else { return }
        task.cancel()
        // Wait for the pool to close its connections, but not forever (a connection stuck on a
        // dead peer must not hold the shutdown).
        _ = try? await withDeadline(.seconds(5), onTimeout: { DocError(.deadlineExceeded, "pool shutdown") }) {
            () async throws(DocError) in await task.value
        }
    }

    // MARK: Calls

    /// Runs `body` on a pooled connection, within the operation timeout; errors become
    /// ``DocError``s (see ``PostgresErrorMapping``).
    func withConnection<T: Sendable>(
        _ what: String,
        timeout: Duration? = nil,
        _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> T
    ) async throws(DocError) -> T {
        guard !isClosed else { throw DocError(.unavailable, "\(what): the store is closed") }
        let name = self.name
        let timeout = timeout ?? options.operationTimeout
        let client = self.client
        let logger = options.logger
        return try await withDeadline(timeout, onTimeout: {
            DocError(.unavailable, "\(what): \(name) did not answer within \(timeout) (is the database reachable?)")
        }) { () async throws(DocError) -> T in
            let leased = Atomic<Bool>(false)
            do {
                return try await client.withConnection { connection in
                    leased.store(true, ordering: .relaxed)
                    return try await body(connection, logger)
                }
            } catch {
                if !leased.load(ordering: .relaxed), !(error is DocError), !(error is CancellationError) {
                    // No connection could be had: the database is down or refusing connections.
                    throw DocError(.unavailable, "\(what): cannot reach \(name): \(PostgresErrorMapping.map(error, doing: what, database: name).message)")
                }
                throw PostgresErrorMapping.map(error, doing: what, database: name)
            }
        }
    }

    /// Runs `body` in one transaction started with `begin` (e.g. `BEGIN` or `BEGIN TRANSACTION
    /// ISOLATION LEVEL REPEATABLE READ, READ ONLY`): committed when it returns, rolled back when
    /// it throws (its error is rethrown as is). `timeout` is the operation timeout unless given.
    func transaction<T: Sendable>(
        _ what: String,
        begin: PostgresQuery = "BEGIN",
        timeout: Duration? = nil,
        _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> T
    ) async throws(DocError) -> T {
        try await withConnection(what, timeout: timeout) { connection, logger in
            try await connection.run(begin, logger)
            let value: T
            do {
                value = try await body(connection, logger)
            } catch {
                // The error says why; a failed rollback (the connection is gone) adds nothing.
                _ = try? await connection.run("ROLLBACK", logger)
                throw error
            }
            try await connection.run("COMMIT", logger)
            return value
        }
    }

    /// Runs one statement on a pooled connection and returns its rows (within `timeout`, by
    /// default the operation timeout).
    func rows(_ what: String, _ query: PostgresQuery, timeout: Duration? = nil) async throws(DocError) -> [PostgresRow] {
        try await withConnection(what, timeout: timeout) { connection, logger in
            try await connection.rows(query, logger)
        }
    }
}

extension PostgresConnection {
    /// Runs a statement and drains its rows.
    func run(_ query: PostgresQuery, _ logger: Logger) async throws {
        _ = try await self.query(query, logger: logger).collect()
    }

    /// Runs a statement and returns its rows.
    func rows(_ query: PostgresQuery, _ logger: Logger) async throws -> [PostgresRow] {
        try await self.query(query, logger: logger).collect()
    }
}

public import DocModel
public import DocServer
internal import Logging
internal import PostgresNIO
internal import Synchronization

/// The server's store on PostgreSQL: any number of server instances share one database.
///
/// Every tenant lives in the same tables under its own tenant column (see ``PostgresSchema``
/// for the tables and the SQL relied on). The database, not process memory, orders the
/// commits of a tenant (its row is locked in each commit transaction), deduplicates batches
/// and checks the versions a batch read, so instances can commit to one tenant concurrently;
/// ``commitNotices()`` tells each instance of the others' commits.
///
/// ```swift
/// let store = try await PostgresServerStore.connect(url: "postgres://doccache@db:5432/doccache")
/// let core = DocServerCore(store: store, configuration: configuration, logger: logger)
/// ```
///
/// Faults: an unreachable database at ``connect(url:options:)`` is an `unavailable` error
/// naming the URL (password hidden). Once running, a lost database makes calls throw
/// `unavailable` within ``Options/operationTimeout``; when it is back, calls succeed again
/// without reopening the store.
///
/// Engines: PostgreSQL; CockroachDB and YugabyteDB with ``NoticeMode/poll(milliseconds:)``
/// (they do not implement `LISTEN`/`NOTIFY`).
///
/// Lifecycle: the store runs a connection pool (and, for ``commitNotices()``, a listen
/// connection and a poll) in tasks of its own until ``close()``: close it when done.
public final class PostgresServerStore: ServerStore {
    let database: PostgresDatabase
    let options: Options
    private let feed: CommitNoticeFeed
    private let compositeIndexes = PostgresCompositeIndexes()
    private let tenants = Mutex<[TenantID: PostgresTenantStore]>([:])

    private init(database: PostgresDatabase, options: Options) {
        self.database = database
        self.options = options
        self.feed = CommitNoticeFeed(database: database, mode: options.notices, channel: options.channel)
    }

    /// Connects to the database at `url`, creating or upgrading its tables on first start.
    ///
    /// - Parameter url: `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE` (also
    ///   `postgresql://`; parameters `sslmode` and `host` for a unix socket directory).
    /// - Throws: `invalidArgument` for a URL that does not parse (or a bad notice channel); `unavailable` when the
    ///   database cannot be reached or refuses the connection (the message names the URL, with
    ///   its password hidden); `failedPrecondition` when the database has a newer schema than
    ///   this server knows.
    public static func connect(url: String, options: Options = Options()) async throws(DocError) -> PostgresServerStore {
        let parsed = try PostgresURL(url)
        let channel = options.channel.utf8
        guard (1...63).contains(channel.count), channel.allSatisfy({ $0 == UInt8(ascii: "_") || (0x30...0x39).contains($0)
                                                                    || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) })
        else {
            throw DocError(.invalidArgument, "the notice channel is 1…63 ASCII letters, digits and underscores", at: "channel \(options.channel)")
        }
        let database = try PostgresDatabase(url: parsed, options: options)
        // One connection outside the pool first: its error says why the database cannot be
        // used (refused, unknown database, authentication) where the pool would only wait.
        let connection = try await database.connect()
        do {
            try await PostgresSchema.migrate(connection, database: database.name, logger: options.logger)
            try await PostgresCompositeIndexes.declare(options.compositeIndexes, on: connection, database: database.name, logger: options.logger)
        } catch {
            try? await connection.close()
            throw error
        }
        try? await connection.close()
        database.start()
        return PostgresServerStore(database: database, options: options)
    }

    /// The tenant's store, kept open for later calls; the first call by any instance inserts the
    /// tenant's row (race-free). Throws `unavailable` once the store is closed or the database is
    /// unreachable.
    public func tenant(_ tenant: TenantID) async throws(DocError) -> any TenantStore {
        try await tenantStore(tenant)
    }

    /// The concrete tenant store; creates the tenant's row on first use (race-free across
    /// instances: `INSERT … ON CONFLICT DO NOTHING`, then read back).
    func tenantStore(_ tenant: TenantID) async throws(DocError) -> PostgresTenantStore {
        guard !database.isClosed else { throw DocError(.unavailable, "the store is closed") }
        if let open = tenants.withLock({ $0[tenant] }) { return open }
        let created = SnapshotVersion(microseconds: max(1, options.clock.nowMicros()))
        let incarnation = Int64(bitPattern: UInt64.random(in: 1...UInt64.max))
        let name = tenant.rawValue
        _ = try await database.rows("create tenant \(tenant)", """
            INSERT INTO doccache_tenants (tenant, last_version, incarnation, log_floor)
            VALUES (\(name), \(created.microseconds), \(incarnation), \(created.microseconds))
            ON CONFLICT DO NOTHING
            """)
        let store = PostgresTenantStore(tenant: tenant, database: database,
                                        notifyChannel: options.notices.usesNotify ? options.channel : nil,
                                        compositeIndexes: compositeIndexes)
        _ = try await store.state()   // read back: the row exists, whoever created it
        return tenants.withLock { open in
            if let existing = open[tenant] { return existing }
            open[tenant] = store
            return store
        }
    }

    /// Every tenant with a row, sorted by name; rows whose name is not a valid ``TenantID`` are
    /// skipped.
    public func tenantIDs() async throws(DocError) -> [TenantID] {
        let rows = try await database.rows("list the tenants", "SELECT tenant FROM doccache_tenants")
        var found: [TenantID] = []
        for row in rows {
            guard let name = try? row.decode(String.self), let tenant = try? TenantID(name) else { continue }
            found.append(tenant)
        }
        return found.sorted()
    }

    /// Runs `SELECT 1` within ``Options/operationTimeout`` (at most 3 s); throws `unavailable`
    /// when the store is closed or the query fails.
    public func checkHealth() async throws(DocError) {
        guard !database.isClosed else { throw DocError(.unavailable, "the store is closed") }
        do {
            // A health probe answers quickly: at most 3 s even with a longer operation timeout.
            _ = try await database.rows("health check", "SELECT 1", timeout: min(options.operationTimeout, .seconds(3)))
        } catch {
            throw DocError(.unavailable, error.message)
        }
    }

    /// Stops the commit notices and closes the connection pool; later calls throw `unavailable`.
    public func close() async {
        feed.stop()
        await database.close()
    }

    /// Commits of every instance on this database, as they become visible: from `LISTEN`
    /// (``NoticeMode/listen``) and a poll of the tenants' versions (both modes). Ends when the
    /// store closes.
    public func commitNotices() -> AsyncStream<CommitNotice>? {
        feed.subscribe()
    }
}

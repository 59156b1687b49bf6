public import DocModel
public import DocServer
public import Logging

extension PostgresServerStore {
    /// How a store hears of commits made by other server instances (``PostgresServerStore/commitNotices()``).
    public enum NoticeMode: Sendable, Hashable {
        /// `LISTEN` on ``Options/channel``: every commit transaction sends `pg_notify` on that
        /// channel, delivered when the transaction commits. A poll of the tenants' versions
        /// every `safetyPollMilliseconds` catches what a lost notification (a dropped listen
        /// connection) would miss. PostgreSQL only.
        case listen(safetyPollMilliseconds: Int)
        /// No `LISTEN`/`NOTIFY` at all (commits do not call `pg_notify` either): the tenants'
        /// versions are polled every `milliseconds`. For CockroachDB and YugabyteDB, which do not
        /// implement `LISTEN`/`NOTIFY`, and for connection poolers in transaction mode.
        case poll(milliseconds: Int)

        /// `LISTEN`/`NOTIFY` with a safety poll every second (the default).
        public static var listen: NoticeMode { .listen(safetyPollMilliseconds: 1_000) }

        var usesNotify: Bool {
            if case .listen = self { return true }
            return false
        }

        var pollInterval: Duration {
            switch self {
            case .listen(let ms), .poll(let ms): return .milliseconds(max(10, ms))
            }
        }
    }

    /// Settings of the PostgreSQL store.
    public struct Options: Sendable {
        /// How commits of other instances are heard (default ``NoticeMode/listen``).
        public var notices: NoticeMode
        /// The `LISTEN`/`NOTIFY` channel in ``NoticeMode/listen`` mode (instances sharing a
        /// database must use the same one).
        public var channel: String
        /// The clock that dates new tenant databases.
        public var clock: ServerClock
        /// The longest a store call may take, waiting for a connection included; past it the
        /// call throws `unavailable` (the database is unreachable or overloaded).
        public var operationTimeout: Duration
        /// The longest an aggregation (`count`, `sum`, `average`) may take instead: it reads
        /// every matching document in one transaction, a page of 1,024 per statement, which
        /// for millions of documents takes longer than ``operationTimeout``. Firestore gives
        /// an aggregation 60 s too.
        public var aggregationTimeout: Duration
        /// The longest a new connection may take to be established.
        public var connectTimeout: Duration
        /// The most connections the store's pool opens (the `LISTEN` connection is extra).
        public var maximumConnections: Int
        /// Where the store logs connection losses and reconnections.
        public var logger: Logger
        /// The composite indexes this instance declares (docs/server-queries.md, "Composite
        /// indexes"): connecting records those the database lacks and builds their rows
        /// before the store is returned. The database keeps the indexes every instance
        /// declared; all of them are maintained, ready ones serve queries.
        public var compositeIndexes: [CompositeIndex]

        /// Creates settings. Defaults: ``NoticeMode/listen`` on channel `doccache_commits`, the
        /// system clock, 10 s per operation, 60 s per aggregation, 5 s to connect, 20 connections,
        /// no logging, no composite indexes. The channel is checked by
        /// ``PostgresServerStore/connect(url:options:)``.
        public init(
            notices: NoticeMode = .listen,
            channel: String = "doccache_commits",
            clock: ServerClock = .system,
            operationTimeout: Duration = .seconds(10),
            aggregationTimeout: Duration = .seconds(60),
            connectTimeout: Duration = .seconds(5),
            maximumConnections: Int = 20,
            logger: Logger = .discarding,
            compositeIndexes: [CompositeIndex] = []
        ) {
            self.notices = notices
            self.channel = channel
            self.clock = clock
            self.operationTimeout = operationTimeout
            self.aggregationTimeout = aggregationTimeout
            self.connectTimeout = connectTimeout
            self.maximumConnections = maximumConnections
            self.logger = logger
            self.compositeIndexes = compositeIndexes
        }
    }
}

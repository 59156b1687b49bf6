internal import DocModel
internal import DocServer
internal import Logging
internal import PostgresNIO
internal import Synchronization

/// Feeds ``PostgresServerStore/commitNotices()``: the notices of commits made by any instance.
///
/// Two sources, both only wake-ups (the change log is the source of truth):
/// - in ``PostgresServerStore/NoticeMode/listen`` mode, a dedicated connection `LISTEN`s on the
///   channel every commit transaction `pg_notify`s (`'TENANT VERSION'`); when the connection
///   drops it is made again (with backoff) for as long as the store is open;
/// - in both modes, a poll of `SELECT tenant, last_version FROM doccache_tenants`: every tenant
///   whose version grew since the previous poll is announced. In listen mode it is the safety
///   net for notifications lost while the listen connection was down.
///
/// The feed starts with the first subscriber and runs until ``stop()``. Subscribers each get
/// their own stream (newest notices kept when one falls behind: they only say "look").
final class CommitNoticeFeed: Sendable {
    private let database: PostgresDatabase
    private let mode: PostgresServerStore.NoticeMode
    private let channel: String

    private struct State {
        var subscribers: [Int: AsyncStream<CommitNotice>.Continuation] = [:]
        var nextID = 0
        var tasks: [Task<Void, Never>] = []
        var started = false
        var stopped = false
        var listenConnection: PostgresConnection?
    }

    private let state = Mutex(State())

    init(database: PostgresDatabase, mode: PostgresServerStore.NoticeMode, channel: String) {
        self.database = database
        self.mode = mode
        self.channel = channel
    }

    /// A new stream of notices; it ends when the store closes.
    func subscribe() -> AsyncStream<CommitNotice> {
        let (stream, continuation) = AsyncStream<CommitNotice>.makeStream(bufferingPolicy: .bufferingNewest(4_096))
        let (id, start, stopped) = state.withLock { state -> (Int, Bool, Bool) in
            guard !state.stopped else { return (0, false, true) }
            let id = state.nextID
            state.nextID += 1
            state.subscribers[id] = continuation
            defer { state.started = true }
            return (id, !state.started, false)
        }
        if stopped {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        if start { startSources() }
        return stream
    }

    /// Stops the sources and ends every stream.
    func stop() {
        let (tasks, subscribers, connection) = state.withLock { state in
            state.stopped = true
            defer {
                state.tasks = []
                state.subscribers = [:]
                state.listenConnection = nil
            }
            return (state.tasks, Array(state.subscribers.values), state.listenConnection)
        }
        for task in tasks { task.cancel() }
        if let connection { let _: Void = connection.close() }
        for subscriber in subscribers { subscriber.finish() }
    }

    private func publish(_ notice: CommitNotice) {
        let subscribers = state.withLock { Array($0.subscribers.values) }
        for subscriber in subscribers { subscriber.yield(notice) }
    }

    private var isStopped: Bool { state.withLock { $0.stopped } }

    private func startSources() {
        var tasks = [Task { [self] in await pollLoop() }]
        if mode.usesNotify { tasks.append(Task { [self] in await listenLoop() }) }
        let stopped = state.withLock { state -> Bool in
            state.tasks += tasks
            return state.stopped
        }
        if stopped { for task in tasks { task.cancel() } }
    }

    // MARK: Polling

    private func pollLoop() async {
        var known: [String: Int64]?
        let interval = mode.pollInterval
        while !Task.isCancelled, !isStopped {
            do {
                let rows = try await database.rows("poll the tenants' versions", "SELECT tenant, last_version FROM doccache_tenants")
                var versions: [String: Int64] = [:]
                versions.reserveCapacity(rows.count)
                for row in rows {
                    guard let (tenant, version) = try? row.decode((String, Int64).self) else { continue }
                    versions[tenant] = version
                }
                if let previous = known {
                    for (tenant, version) in versions where version > (previous[tenant] ?? Int64.min) {
                        guard let id = try? TenantID(tenant) else { continue }
                        publish(CommitNotice(tenant: id, version: SnapshotVersion(microseconds: version)))
                    }
                }
                known = versions
            } catch {
                database.options.logger.debug("commit poll failed", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: interval)
        }
    }

    // MARK: LISTEN

    private func listenLoop() async {
        let logger = database.options.logger
        var failures = 0
        while !Task.isCancelled, !isStopped {
            do {
                let connection = try await database.connect()
                let registered = state.withLock { state -> Bool in
                    guard !state.stopped else { return false }
                    state.listenConnection = connection
                    return true
                }
                guard registered else {
                    try? await connection.close()
                    return
                }
                if failures > 0 { logger.info("commit notices: listening again", metadata: ["database": "\(database.name)"]) }
                failures = 0
                var ended: (any Error)?
                do {
                    try await connection.listen(on: channel) { notifications in
                        for try await notification in notifications {
                            if let notice = Self.parse(notification.payload) { publish(notice) }
                        }
                    }
                } catch {
                    ended = error
                }
                // Closed whatever ended the listen (the feed stopping, the database lost).
                try? await connection.close()
                if let ended { throw ended }
            } catch {
                if failures == 0 {
                    logger.warning("commit notices: the listen connection failed; polling until it is back",
                                   metadata: ["database": "\(database.name)", "error": "\(error)"])
                }
            }
            failures += 1
            state.withLock { $0.listenConnection = nil }
            // Backoff: 100 ms after the first failure, doubling, at most 2 s.
            try? await Task.sleep(for: .milliseconds(min(2_000, 100 << min(failures - 1, 5))))
        }
    }

    /// `'TENANT VERSION'` (the tenant name may hold spaces: the version follows the last one).
    static func parse(_ payload: String) -> CommitNotice? {
        guard let space = payload.lastIndex(of: " "),
              let version = Int64(payload[payload.index(after: space)...]),
              let tenant = try? TenantID(String(payload[..<space]))
        else { return nil }
        return CommitNotice(tenant: tenant, version: SnapshotVersion(microseconds: version))
    }
}

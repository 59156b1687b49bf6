import DocTestSupport
import Foundation
import Synchronization

/// A throwaway PostgreSQL cluster for tests and benchmarks: its own data directory under the
/// system's temporary directory, a free TCP port on 127.0.0.1 and a unix socket in the data
/// directory's parent, `trust` authentication for the `postgres` user. Nothing of an existing
/// installation is used but its binaries (`initdb`, `pg_ctl`, `createdb`, `psql`).
///
/// PostgreSQL refuses to run as root: when the process is root (these machines, CI
/// containers), the cluster's directory is given to the `postgres` user (created by Debian's
/// `postgresql` package) and the server binaries run as that user through `runuser`.
///
/// A watchdog shell stops the server and removes the directory when the process that started
/// it dies, so a crashed or killed test run leaves no server behind.
///
/// ```swift
/// let cluster = try await PostgresCluster.start()
/// defer { cluster.stop() }
/// let url = try await cluster.createDatabase("t1")   // postgres://postgres@127.0.0.1:PORT/t1
/// ```
///
/// The tools run on threads of their own (``onOwnThread(_:)``), never on the cooperative pool
/// the calling test shares with every other test; only ``stop()``, which `defer` and `atexit`
/// need synchronous, blocks its caller (for a `pg_ctl stop -m immediate`).
public final class PostgresCluster: Sendable {
    /// The temporary directory holding the data directory, the server log and the unix socket.
    public let directory: String
    /// The TCP port on 127.0.0.1.
    public let port: Int
    /// The directory of the PostgreSQL binaries used.
    public let binDirectory: String
    /// The database created at start.
    public let database: String
    /// The superuser (no password: `trust` authentication).
    public let user = "postgres"

    private let runAsPostgres: Bool
    private let fsync: Bool
    private let state = Mutex<State>(.running)

    private enum State { case running, killed, stopped }

    private init(directory: String, port: Int, binDirectory: String, database: String, runAsPostgres: Bool, fsync: Bool) {
        self.directory = directory
        self.port = port
        self.binDirectory = binDirectory
        self.database = database
        self.runAsPostgres = runAsPostgres
        self.fsync = fsync
    }

    /// The URL of the database created at start, e.g. `postgres://postgres@127.0.0.1:PORT/doccache`.
    public var url: String { url(database: database) }

    /// The URL of `database` on this cluster.
    public func url(database: String) -> String { "postgres://\(user)@127.0.0.1:\(port)/\(database)" }

    /// The unix socket of the server (`DIRECTORY/.s.PGSQL.PORT`).
    public var socketPath: String { "\(directory)/.s.PGSQL.\(port)" }

    /// The server's log file.
    public var logPath: String { "\(directory)/server.log" }

    var dataDirectory: String { "\(directory)/data" }

    /// Whether the server is running (not ``kill()``ed nor ``stop()``ped).
    public var isRunning: Bool { state.withLock { $0 == .running } }

    // MARK: Starting

    /// Creates a cluster in a new temporary directory and starts it.
    ///
    /// - Parameters:
    ///   - fsync: Flush to stable storage (`false`, the default, is faster and still survives
    ///     a crash of the server process; only a crash of the machine can lose data).
    ///   - database: The database created at start.
    /// - Throws: ``PostgresClusterError`` when the binaries are missing (run `make deps`), or
    ///   when `initdb`, `pg_ctl` or `createdb` fail (the message includes their output).
    public static func start(fsync: Bool = false, database: String = "doccache") async throws -> PostgresCluster {
        try await onOwnThread { try startBlocking(fsync: fsync, database: database) }
    }

    private static func startBlocking(fsync: Bool, database: String) throws -> PostgresCluster {
        let bin = try findBinDirectory()
        let asPostgres = getuid() == 0
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("doccache-pg-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        do {
            if asPostgres { try giveToPostgres(directory) }
            try runTool(bin + "/initdb", ["-D", directory + "/data", "--auth=trust", "-U", "postgres", "-E", "UTF8",
                                          "--locale=C", "--no-sync"],
                        asPostgres: asPostgres, in: directory)
            var lastError: (any Error)?
            for _ in 0..<5 {
                let port = try freePort()
                let cluster = PostgresCluster(directory: directory, port: port, binDirectory: bin, database: database,
                                              runAsPostgres: asPostgres, fsync: fsync)
                do {
                    try cluster.startServer()
                } catch {
                    lastError = error   // most likely the port was taken meanwhile: try another
                    continue
                }
                cluster.startWatchdog()
                do {
                    try runTool(bin + "/createdb", cluster.createdbArguments(database), asPostgres: false, in: directory)
                } catch {
                    cluster.stop()
                    throw error
                }
                return cluster
            }
            throw lastError ?? PostgresClusterError("could not start PostgreSQL")
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    /// The start of the shared cluster, made by its first caller; the others await it too.
    private static let sharedStart = Mutex<Task<PostgresCluster, any Error>?>(nil)
    /// The shared cluster once started, for the `atexit` handler that stops it.
    private static let sharedCluster = Mutex<PostgresCluster?>(nil)

    /// One cluster per process, started on first use and stopped when the process exits: what
    /// test suites share (each test then creates its own database with ``createDatabase(_:)``).
    /// A start that failed fails every call, with the same error. `fsync`: as for
    /// ``start(fsync:database:)``; the first call decides.
    /// The operation and connect timeouts of the tests' PostgreSQL stores: liveness caps, far
    /// above what a call takes alone. In full parallel runs a database shared by many suites
    /// answered after more than the production default of 10 s. Tests of the timeouts
    /// themselves set their own.
    public static let testOperationTimeout: Duration = .seconds(60)
    public static let testConnectTimeout: Duration = .seconds(30)

    public static func shared(fsync: Bool = false) async throws -> PostgresCluster {
        let start = sharedStart.withLock { start in
            if let start { return start }
            let new = Task {
                let cluster = try await PostgresCluster.start(fsync: fsync)
                sharedCluster.withLock { $0 = cluster }
                atexit { PostgresCluster.sharedCluster.withLock { $0 }?.stop() }
                return cluster
            }
            start = new
            return new
        }
        return try await start.value
    }

    // MARK: Databases

    private static let counter = Atomic<Int>(0)

    /// Creates `name` (owned by the superuser) and returns its URL.
    @discardableResult
    public func createDatabase(_ name: String) async throws -> String {
        try await tool("createdb", createdbArguments(name), asPostgres: false)
        return url(database: name)
    }

    private func createdbArguments(_ name: String) -> [String] {
        ["-h", "127.0.0.1", "-p", String(port), "-U", user, name]
    }

    /// Creates a database with a fresh name starting with `prefix` and returns its URL.
    public func createUniqueDatabase(prefix: String = "t") async throws -> String {
        let n = Self.counter.wrappingAdd(1, ordering: .relaxed).newValue
        let name = "\(prefix)_\(getpid())_\(n)_\(UUID().uuidString.prefix(6).lowercased())"
        return try await createDatabase(name)
    }

    /// Runs SQL with `psql` (stops at the first error) and returns its unaligned, tuples-only
    /// output.
    @discardableResult
    public func psql(_ sql: String, database: String? = nil) async throws -> String {
        try await tool("psql", ["-h", "127.0.0.1", "-p", String(port), "-U", user, "-d", database ?? self.database,
                                "-v", "ON_ERROR_STOP=1", "-X", "-q", "-A", "-t", "-c", sql],
                       asPostgres: false)
    }

    // MARK: Faults and shutdown

    /// Stops the server at once (`pg_ctl stop -m immediate`, as a crash would) and keeps the
    /// data: ``restart()`` starts it again on the same port.
    /// Not to be called while another ``kill()`` or ``restart()`` of the cluster runs.
    public func kill() async throws {
        guard isRunning else { return }
        try await tool("pg_ctl", ["-D", dataDirectory, "-m", "immediate", "-w", "stop"], asPostgres: runAsPostgres)
        state.withLock { $0 = .killed }
    }

    /// Starts a ``kill()``ed server again on the same port and socket.
    public func restart() async throws {
        guard state.withLock({ $0 == .killed }) else { return }
        try await onOwnThread { try self.startServer() }
        state.withLock { $0 = .running }
    }

    /// Runs the client tool `name` (`pg_dump`, `pg_restore`, …) of the cluster's binaries as
    /// this process's user and returns its combined output; throws with it when it fails.
    @discardableResult
    public func runClientTool(_ name: String, _ arguments: [String]) async throws -> String {
        try await tool(name, arguments, asPostgres: false)
    }

    /// Stops the server and removes its directory. Idempotent.
    public func stop() {
        state.withLock { state in
            guard state != .stopped else { return }
            if state == .running {
                _ = try? Self.runTool(binDirectory + "/pg_ctl", ["-D", dataDirectory, "-m", "immediate", "-w", "stop"],
                                      asPostgres: runAsPostgres, in: directory)
            }
            try? FileManager.default.removeItem(atPath: directory)
            state = .stopped
        }
    }

    // MARK: Internals

    private func startServer() throws {
        var settings = [
            "-c listen_addresses=127.0.0.1", "-p \(port)", "-k \(directory)",
            "-c max_connections=300", "-c shared_buffers=32MB",
        ]
        if !fsync { settings += ["-c fsync=off", "-c full_page_writes=off"] }
        try Self.runTool(binDirectory + "/pg_ctl", ["-D", dataDirectory, "-l", logPath, "-w", "-t", "60", "-o", settings.joined(separator: " "), "start"],
                         asPostgres: runAsPostgres, in: directory)
    }

    /// A shell that waits for this process to end, then stops the server and removes the
    /// directory (a no-op after ``stop()``).
    private func startWatchdog() {
        let pgctl = "'\(binDirectory)/pg_ctl'"
        let stop = runAsPostgres
            ? "runuser -u postgres -- \(pgctl) -D '\(dataDirectory)' -m immediate -w stop"
            : "\(pgctl) -D '\(dataDirectory)' -m immediate -w stop"
        let script = """
            while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done
            if [ -d '\(dataDirectory)' ]; then \(stop) >/dev/null 2>&1; rm -rf '\(directory)'; fi
            """
        try? ChildProcess.start(["/bin/sh", "-c", script])
    }

    /// Runs the tool `name` of the cluster's binaries on a thread of its own.
    @discardableResult
    private func tool(_ name: String, _ arguments: [String], asPostgres: Bool) async throws -> String {
        let (path, directory) = (binDirectory + "/" + name, self.directory)
        return try await onOwnThread { try Self.runTool(path, arguments, asPostgres: asPostgres, in: directory) }
    }

    @discardableResult
    static func runTool(_ path: String, _ arguments: [String], asPostgres: Bool, in directory: String) throws -> String {
        var command = [path] + arguments
        if asPostgres {
            let runuser = try findExecutable("runuser", in: ["/usr/sbin", "/sbin", "/usr/bin", "/bin"])
            command = [runuser, "-u", "postgres", "--"] + command
        }
        let (status, output) = try ChildProcess.run(command[0], Array(command.dropFirst()), in: directory)
        guard status == 0 else {
            throw PostgresClusterError("\(command.joined(separator: " ")) failed with status \(status): \(output)")
        }
        return output
    }

    /// The directory of `initdb`, `pg_ctl`, `createdb` and `psql`: `initdb`'s on PATH (symlinks
    /// resolved), else the newest `/usr/lib/postgresql/*/bin` (Debian), else Homebrew's.
    static func findBinDirectory() throws -> String {
        let fm = FileManager.default
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        var candidates = path.split(separator: ":").map(String.init)
        let debian = "/usr/lib/postgresql"
        let versions = ((try? fm.contentsOfDirectory(atPath: debian)) ?? [])
            .sorted { (Int($0) ?? 0, $0) > (Int($1) ?? 0, $1) }
        candidates += versions.map { "\(debian)/\($0)/bin" }
        candidates += ["/opt/homebrew/bin", "/usr/local/bin"]
        for directory in candidates
        where fm.isExecutableFile(atPath: directory + "/initdb") && fm.isExecutableFile(atPath: directory + "/pg_ctl") {
            // A symlinked initdb (e.g. /usr/local/bin/initdb → /usr/lib/postgresql/15/bin) names
            // the directory where its siblings (postgres, createdb) are.
            let resolved = URL(fileURLWithPath: directory + "/initdb").resolvingSymlinksInPath().deletingLastPathComponent().path
            if ["pg_ctl", "createdb", "psql"].allSatisfy({ fm.isExecutableFile(atPath: resolved + "/" + $0) }) { return resolved }
        }
        throw PostgresClusterError(
            "PostgreSQL is not installed (no initdb/pg_ctl on PATH nor under /usr/lib/postgresql/*/bin): run `make deps`")
    }

    static func findExecutable(_ name: String, in directories: [String]) throws -> String {
        for directory in directories where FileManager.default.isExecutableFile(atPath: directory + "/" + name) {
            return directory + "/" + name
        }
        throw PostgresClusterError("\(name) not found in \(directories.joined(separator: ", ")): it is needed to run PostgreSQL as the postgres user")
    }

    /// Gives `directory` to the `postgres` user (PostgreSQL refuses to run as root).
    static func giveToPostgres(_ directory: String) throws {
        guard let entry = getpwnam("postgres") else {
            throw PostgresClusterError(
                "running as root, and there is no `postgres` user to run PostgreSQL as: run `make deps` (Debian's postgresql package creates it)")
        }
        guard chown(directory, entry.pointee.pw_uid, entry.pointee.pw_gid) == 0 else {
            throw PostgresClusterError("cannot give \(directory) to the postgres user: errno \(errno)")
        }
    }

    /// A TCP port on 127.0.0.1 that is free now (the kernel picks it).
    public static func freePort() throws -> Int {
        do {
            return try freeLoopbackPort()
        } catch {
            throw PostgresClusterError("no free port on 127.0.0.1: \(error.message)")
        }
    }
}

/// Why a ``PostgresCluster`` could not start or run a tool.
public struct PostgresClusterError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, with the tool's output when a tool failed.
    public let message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

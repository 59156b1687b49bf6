import DocModel
import DocServer
import DocServerPostgres
import Foundation
import PostgresTestSupport
import Synchronization
import Testing

/// A new database on the process's shared throwaway cluster.
func freshDatabase(_ prefix: String = "pg") async throws -> String {
    try await PostgresCluster.shared().createUniqueDatabase(prefix: prefix)
}

/// The name of a database from its URL.
func databaseName(_ url: String) -> String { String(url.split(separator: "/").last ?? "") }

/// How many connections the server has open to the database at `url` (`pg_stat_activity`).
func openConnections(to url: String) async throws -> Int {
    let rows = try await PostgresCluster.shared().psql(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = '\(databaseName(url))'")
    guard let count = Int(rows.trimmingCharacters(in: .whitespacesAndNewlines)) else {
        throw DocError(.internal, "psql answered \(rows) for a count")
    }
    return count
}

/// Options for tests: a small pool, the timeouts of ``PostgresCluster/testOperationTimeout``.
func testOptions(notices: PostgresServerStore.NoticeMode = .poll(milliseconds: 100), channel: String = "doccache_commits",
                 operationTimeout: Duration = PostgresCluster.testOperationTimeout,
                 connectTimeout: Duration = PostgresCluster.testConnectTimeout,
                 maximumConnections: Int = 4) -> PostgresServerStore.Options {
    PostgresServerStore.Options(notices: notices, channel: channel, operationTimeout: operationTimeout,
                                connectTimeout: connectTimeout, maximumConnections: maximumConnections)
}

enum P {
    static func key(_ path: String) -> DocumentKey { try! DocumentKey(path) }

    static func committed(_ client: String, _ batch: Int, version: SnapshotVersion) -> BatchOutcome {
        BatchOutcome(batch: BatchKey(clientID: client, batchID: batch), uid: "u", digest: 1,
                     recordedAt: ServerClock.system.nowMicros(), result: .committed(version: version, results: []))
    }

    /// Commits one document write at a version above the tenant's last (a fresh read each time).
    @discardableResult
    static func touch(_ tenant: any TenantStore, _ path: String, client: String = "touch", batch: Int) async throws -> SnapshotVersion {
        let read = try await tenant.documents([key(path)])
        let version = SnapshotVersion(microseconds: max(ServerClock.system.nowMicros(), read.version.microseconds + 1))
        let document = Document(key: key(path), data: ObjectValue(["b": .integer(Int64(batch))]), version: version)
        _ = try await tenant.commit(CommitRequest(outcome: committed(client, batch, version: version),
                                                  writes: [DocumentWrite(key: key(path), document: document)]))
        return version
    }
}

/// One increment as a server instance applies it: read the counter, add one, commit at a
/// version above the read with the version read as precondition; processed again on `aborted`.
struct Increment: Sendable {
    var version: SnapshotVersion
    var previous: SnapshotVersion
    var value: Int64
    var attempts: Int
}

func increment(_ tenant: any TenantStore, _ path: String, client: String, batch: Int) async throws -> Increment {
    let key = P.key(path)
    var attempts = 0
    while true {
        attempts += 1
        let read = try await tenant.documents([key])
        let current = read.documents[key]
        let value = (current?.data["n"]?.integerValue ?? 0) + 1
        let version = SnapshotVersion(microseconds: max(ServerClock.system.nowMicros(), read.version.microseconds + 1))
        let document = Document(key: key, data: ObjectValue(["n": .integer(value)]), version: version)
        let result: Result<CommitResult, DocError>
        do {
            result = .success(try await tenant.commit(CommitRequest(
                outcome: P.committed(client, batch, version: version), writes: [DocumentWrite(key: key, document: document)],
                readVersions: [key: current?.version ?? .none])))
        } catch {
            result = .failure(error)
        }
        switch result {
        case .success(.stored(let previous)):
            return Increment(version: version, previous: previous, value: value, attempts: attempts)
        case .success(.duplicate):
            throw DocError(.internal, "batch \(client)#\(batch) reported as a duplicate")
        case .failure(let error) where error.code == .aborted:
            try await Task.sleep(for: .microseconds(Int.random(in: 0...2_000)))
        case .failure(let error):
            throw error
        }
    }
}

/// Collects the notices of a stream in the background.
final class NoticeRecorder: Sendable {
    private let notices = Mutex<[CommitNotice]>([])
    private let task: Mutex<Task<Void, Never>?> = Mutex(nil)

    init(_ stream: AsyncStream<CommitNotice>) {
        let t = Task { [self] in
            for await notice in stream { record(notice) }
        }
        task.withLock { $0 = t }
    }

    private func record(_ notice: CommitNotice) { notices.withLock { $0.append(notice) } }

    var all: [CommitNotice] { notices.withLock { $0 } }

    func contains(tenant: String, atLeast version: SnapshotVersion) -> Bool {
        all.contains { $0.tenant.rawValue == tenant && $0.version >= version }
    }

    func cancel() { task.withLock { $0?.cancel() } }
}

import DocModel
import DocServer
import DocServerPostgres
import Foundation
import PostgresTestSupport
import Synchronization
import Testing

/// The stores the contract runs against.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case leveldb
    case postgres

    var testDescription: String { rawValue }
}

/// A clock the test moves by hand (microseconds).
final class ManualClock: Sendable {
    private let now: Mutex<Int64>
    init(_ start: Int64 = 1_700_000_000_000_000) { now = Mutex(start) }
    var micros: Int64 { now.withLock { $0 } }
    func advance(by micros: Int64) { now.withLock { $0 += micros } }
    var serverClock: ServerClock { ServerClock { [self] in self.micros } }
}

/// A fresh, empty store of one kind for one test: a LevelDB directory under the temporary
/// directory, or a new database on the process's throwaway PostgreSQL cluster.
final class StoreFixture: Sendable {
    let kind: StoreKind
    let clock: ManualClock
    /// The LevelDB directory, or the PostgreSQL URL.
    let location: String
    private let current: Mutex<(any ServerStore)?>
    /// The composite indexes the store is opened with.
    private let declared = Mutex<[CompositeIndex]>([])

    private init(kind: StoreKind, clock: ManualClock, location: String, store: any ServerStore) {
        self.kind = kind
        self.clock = clock
        self.location = location
        self.current = Mutex(store)
    }

    /// The open store.
    var store: any ServerStore {
        get throws {
            guard let store = current.withLock({ $0 }) else { throw DocError(.failedPrecondition, "the fixture's store is closed") }
            return store
        }
    }

    static func make(_ kind: StoreKind, clock: ManualClock = ManualClock()) async throws -> StoreFixture {
        switch kind {
        case .leveldb:
            let directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("store-contract-\(UUID().uuidString)").path
            let store = try open(at: directory, clock: clock)
            return StoreFixture(kind: kind, clock: clock, location: directory, store: store)
        case .postgres:
            let url = try await PostgresCluster.shared().createUniqueDatabase(prefix: "contract")
            let store = try await PostgresServerStore.connect(url: url, options: postgresOptions(clock))
            return StoreFixture(kind: kind, clock: clock, location: url, store: store)
        }
    }

    /// The tests' timeouts (``PostgresCluster/testOperationTimeout``).
    static func postgresOptions(_ clock: ManualClock) -> PostgresServerStore.Options {
        PostgresServerStore.Options(notices: .poll(milliseconds: 200), clock: clock.serverClock,
                                    operationTimeout: PostgresCluster.testOperationTimeout,
                                    connectTimeout: PostgresCluster.testConnectTimeout, maximumConnections: 4)
    }

    private static func open(at directory: String, clock: ManualClock, compositeIndexes: [CompositeIndex] = []) throws -> LevelDBServerStore {
        try LevelDBServerStore.open(directory: directory, options: .init(syncWrites: false, clock: clock.serverClock,
                                                                        compositeIndexes: compositeIndexes))
    }

    /// A tenant of the open store.
    func tenant(_ name: String) async throws -> any TenantStore {
        try await store.tenant(TenantID(name))
    }

    /// Closes the store (its tenant stores then fail).
    func close() async {
        if let store = current.withLock({ $0 }) { await store.close() }
        current.withLock { $0 = nil }
    }

    /// Closes the store and opens the same storage again, declaring `compositeIndexes` from
    /// then on when given.
    func reopen(compositeIndexes: [CompositeIndex]? = nil) async throws -> any ServerStore {
        await close()
        if let compositeIndexes { declared.withLock { $0 = compositeIndexes } }
        let indexes = declared.withLock { $0 }
        let store: any ServerStore
        switch kind {
        case .leveldb: store = try Self.open(at: location, clock: clock, compositeIndexes: indexes)
        case .postgres:
            var options = Self.postgresOptions(clock)
            options.compositeIndexes = indexes
            store = try await PostgresServerStore.connect(url: location, options: options)
        }
        current.withLock { $0 = store }
        return store
    }

    /// Closes the store and removes a LevelDB directory (PostgreSQL databases go with the cluster).
    func tearDown() async {
        await close()
        if kind == .leveldb { try? FileManager.default.removeItem(atPath: location) }
    }
}

/// Builders for the contract's keys, documents, outcomes and targets.
enum C {
    static func key(_ path: String) -> DocumentKey { try! DocumentKey(path) }
    static func field(_ path: String) -> FieldPath { try! FieldPath(path) }

    static func doc(_ path: String, _ fields: [String: Value], version: Int64) -> Document {
        Document(key: key(path), data: ObjectValue(fields), version: SnapshotVersion(microseconds: version))
    }

    static func put(_ path: String, _ fields: [String: Value], version: Int64) -> DocumentWrite {
        DocumentWrite(key: key(path), document: doc(path, fields, version: version))
    }

    static func delete(_ path: String) -> DocumentWrite { DocumentWrite(key: key(path), document: nil) }

    static func outcome(_ client: String, _ batch: Int, version: Int64?, at recordedAt: Int64 = 1, uid: String = "u") -> BatchOutcome {
        BatchOutcome(
            batch: BatchKey(clientID: client, batchID: batch), uid: uid, digest: 7, recordedAt: recordedAt,
            result: version.map { .committed(version: SnapshotVersion(microseconds: $0), results: []) }
                ?? .rejected(DocError(.notFound, "nope", at: "a/b")))
    }

    static func v(_ micros: Int64) -> SnapshotVersion { SnapshotVersion(microseconds: micros) }

    static func target(_ query: DocModel.Query) -> Target { try! query.toTarget() }

    static func collection(_ path: String, limit: Int = 100) -> Target {
        try! DocModel.Query(collection: path).limit(to: limit).toTarget()
    }
}

extension ChangeLogRead {
    /// The entries of a complete read (`nil` when unavailable).
    var entries: [ChangeLogEntry]? {
        if case .complete(let entries, _) = self { return entries }
        return nil
    }

    var isUnavailable: Bool {
        if case .unavailable = self { return true }
        return false
    }
}

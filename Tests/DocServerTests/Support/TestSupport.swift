import DocTestSupport
import DocModel
import DocProtocol
import Foundation
import Synchronization
@testable import DocServer

/// A clock the test moves by hand (microseconds).
final class ManualClock: Sendable {
    private let now: Mutex<Int64>
    init(_ start: Int64 = 1_700_000_000_000_000) { now = Mutex(start) }
    var micros: Int64 { now.withLock { $0 } }
    func advance(by micros: Int64) { now.withLock { $0 += micros } }
    func set(_ micros: Int64) { now.withLock { $0 = micros } }
    var serverClock: ServerClock { ServerClock { [self] in self.micros } }
}

/// A fresh directory under the system's temporary directory, removed by `remove()`.
struct TempDirectory {
    let path: String

    init() {
        path = FileManager.default.temporaryDirectory
            .appendingPathComponent("docserver-tests-\(UUID().uuidString)").path
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// A store and a server core over it, in a temporary directory.
final class TestServer: Sendable {
    let directory: TempDirectory
    let clock: ManualClock
    let store: LevelDBServerStore
    let core: DocServerCore

    init(configuration: ServerConfiguration = ServerConfiguration(), sync: Bool = false, clock: ManualClock = ManualClock(),
         compositeIndexes: [CompositeIndex] = []) {
        directory = TempDirectory()
        self.clock = clock
        var configuration = configuration
        configuration.clock = clock.serverClock
        store = try! LevelDBServerStore.open(directory: directory.path,
                                             options: .init(syncWrites: sync, clock: clock.serverClock, compositeIndexes: compositeIndexes))
        core = DocServerCore(store: store, configuration: configuration, logger: .discarding)
    }

    /// Another server core (another instance) on the test clock, over `store` (a wrapper
    /// around ``store``).
    func core(over store: any ServerStore) -> DocServerCore {
        var configuration = ServerConfiguration()
        configuration.clock = clock.serverClock
        return DocServerCore(store: store, configuration: configuration, logger: .discarding)
    }

    func tenantStore(_ name: String) throws -> LevelDBTenantStore {
        try store.tenantStore(TenantID(name))
    }

    func connect(tenant: String = "acme", uid: String = "u1", client: String = "client-1") async throws -> ServerConnection {
        let connection = try await core.handshake(tenant: tenant, uid: uid, clientID: client)
        guard case .welcome? = connection.outbound.drain().first else { throw DocError(.internal, "no welcome") }
        return connection
    }

    /// Commits one batch through the connection; returns the answer.
    @discardableResult
    func write(_ connection: ServerConnection, batch: Int, _ mutations: [Mutation]) async -> ServerMessage {
        let answer = await core.write(.init(clientID: connection.clientID, batchID: batch, mutations: mutations), on: connection)
        _ = connection.outbound.drain()
        return answer
    }

    /// The store is closed and its directory removed when the server goes away.
    deinit {
        store.database.close()
        directory.remove()
    }
}

enum T {
    static func key(_ path: String) -> DocumentKey { try! DocumentKey(path) }
    static func field(_ path: String) -> FieldPath { try! FieldPath(path) }
    static func data(_ fields: [String: Value]) -> ObjectValue { ObjectValue(fields) }

    static func set(_ path: String, _ fields: [String: Value]) -> Mutation { .set(key(path), ObjectValue(fields)) }

    static func increment(_ path: String, _ field: String = "n", by n: Int64 = 1) -> Mutation {
        .setMerge(key(path), ObjectValue(), transforms: [.increment(T.field(field), by: .integer(n))])
    }

    static func target(_ query: DocModel.Query) -> Target { try! query.toTarget() }

    static func collection(_ path: String, limit: Int? = 100, orderBy: String? = nil, descending: Bool = false,
                           includeDeleted: Bool = false) -> Target {
        var q = try! DocModel.Query(collection: path)
        if let orderBy { q = try! q.order(by: field(orderBy), descending: descending) }
        if let limit { q = try! q.limit(to: limit) }
        if includeDeleted { q = q.includingDeleted() }
        return try! q.toTarget()
    }
}

extension ServerMessage {
    var writeResult: ServerMessage.WriteResult? { if case .writeResult(let r) = self { return r } else { return nil } }
    var writeError: ServerMessage.WriteError? { if case .writeError(let e) = self { return e } else { return nil } }
    var targetChange: ServerMessage.TargetChange? { if case .targetChange(let c) = self { return c } else { return nil } }
    var documentChange: ServerMessage.DocumentChange? { if case .documentChange(let c) = self { return c } else { return nil } }
}

/// A client's view of its targets, built only from watch messages, as the client's
/// aggregator would (without the pending-request bookkeeping).
struct ClientMirror {
    var targets: [Int32: [DocumentKey: Document]] = [:]
    var tokens: [Int32: [UInt8]] = [:]
    var globalToken: [UInt8]?
    var snapshotVersion: SnapshotVersion = .none
    var documentsReceived = 0
    /// Targets whose count still differed from an existence filter after its bloom filter
    /// was applied: the client would listen to them again from scratch.
    var needsRequery: Set<Int32> = []

    mutating func apply(_ messages: [ServerMessage]) {
        for message in messages {
            switch message {
            case .targetChange(let c):
                switch c.state {
                case .added: for t in c.targetIDs where targets[t] == nil { targets[t] = [:] }
                case .removed: for t in c.targetIDs { targets[t] = nil }
                case .reset: for t in c.targetIDs { targets[t] = [:] }
                case .current: for t in c.targetIDs { tokens[t] = c.resumeToken }
                case .noChange:
                    if c.targetIDs.isEmpty, let v = c.snapshotVersion {
                        snapshotVersion = v
                        globalToken = c.resumeToken
                        for t in targets.keys { tokens[t] = c.resumeToken }
                    }
                }
            case .documentChange(let c):
                documentsReceived += 1
                for t in c.targetIDs { targets[t, default: [:]][c.document.key] = c.document }
                for t in c.removedTargetIDs { targets[t]?[c.document.key] = nil }
            case .documentDelete(let d):
                for t in d.removedTargetIDs { targets[t]?[d.key] = nil }
            case .documentRemove(let r):
                for t in r.removedTargetIDs { targets[t]?[r.key] = nil }
            case .existenceFilter(let f):
                // As the client: on a mismatch, drop what the bloom filter rules out.
                guard var documents = targets[f.targetID], documents.count != f.count else { break }
                if let bloom = f.bloomFilter {
                    for key in documents.keys where !bloom.mightContain(key) { documents[key] = nil }
                }
                targets[f.targetID] = documents
                if documents.count != f.count { needsRequery.insert(f.targetID) }
            default:
                break
            }
        }
    }

    func keys(_ target: Int32) -> [String] { (targets[target] ?? [:]).keys.map(\.description).sorted() }
}

extension ServerMessage.ExistenceFilter.BloomFilter {
    /// Whether the filter may contain the document (as the client tests it; docs/protocol.md).
    func mightContain(_ key: DocumentKey) -> Bool {
        let bitCount = bitmap.count * 8 - padding
        guard bitCount > 0 else { return false }
        let hash = BloomFilterHash.hash(ServerMessage.ExistenceFilter.documentName(of: key))
        return (0..<hashCount).allSatisfy { i in
            let index = BloomFilterHash.bitIndex(hash, i, bitCount: bitCount)
            return bitmap[index / 8] & (1 << UInt8(index % 8)) != 0
        }
    }
}

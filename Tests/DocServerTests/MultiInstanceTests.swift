import DocModel
import DocProtocol
import Synchronization
import Testing
@testable import DocServer

/// Two server cores over one store, as two server instances over one PostgreSQL database:
/// neither knows the other's commits except through the store (its change log and, when the
/// store has them, commit notices). The embedded store is shared in-process here, so the
/// catch-up logic is tested without a database server; the PostgreSQL suites run the same
/// situations across real processes.
@Suite struct MultiInstanceTests {
    /// Two cores, A and B, on one LevelDB store (optionally publishing commit notices).
    final class TwoInstances: Sendable {
        let server: TestServer
        let noticing: NoticingStore
        let a: DocServerCore
        let b: DocServerCore

        init() {
            server = TestServer()
            noticing = NoticingStore(server.store)
            var configuration = ServerConfiguration()
            configuration.clock = server.clock.serverClock
            a = DocServerCore(store: noticing, configuration: configuration, logger: .discarding)
            b = DocServerCore(store: noticing, configuration: configuration, logger: .discarding)
        }

        func connect(_ core: DocServerCore, client: String) async throws -> ServerConnection {
            let connection = try await core.handshake(tenant: "acme", uid: "u1", clientID: client)
            _ = connection.outbound.drain()
            return connection
        }

        func write(_ core: DocServerCore, _ connection: ServerConnection, batch: Int, _ mutations: [Mutation]) async -> ServerMessage {
            server.clock.advance(by: 10)
            return await core.write(.init(clientID: connection.clientID, batchID: batch, mutations: mutations), on: connection)
        }

        func lastVersion() async throws -> SnapshotVersion {
            try await server.tenantStore("acme").state().lastVersion
        }
    }

    /// Global snapshot versions in the order they were sent.
    func snapshots(_ messages: [ServerMessage]) -> [SnapshotVersion] {
        messages.compactMap { $0.targetChange?.isGlobalSnapshot == true ? $0.targetChange?.snapshotVersion : nil }
    }

    @Test func aListenerOnBReceivesCommitsThroughAOnTheNextTickInCommitOrder() async throws {
        let two = TwoInstances()
        let listener = try await two.connect(two.b, client: "listener")
        _ = await two.b.watch(.init(targetID: 2, target: T.collection("rooms", limit: 10)), on: listener)
        var mirror = ClientMirror()
        mirror.apply(listener.outbound.drain())
        let writer = try await two.connect(two.a, client: "writer")
        var versions: [SnapshotVersion] = []
        for i in 1...3 {
            let answer = await two.write(two.a, writer, batch: i, [T.set("rooms/r\(i)", ["i": .integer(Int64(i))])])
            versions.append(try #require(answer.writeResult?.commitVersion))
        }
        // B heard nothing yet: no notices from this store, and B's process made no commit.
        #expect(listener.outbound.drain().isEmpty)
        // The tick catches up; its own snapshot is not needed (the connection is already at
        // the last version), so it reports none sent.
        #expect(await two.b.tick() == 0)
        let delivered = listener.outbound.drain()
        // One global snapshot per commit, in commit order.
        #expect(snapshots(delivered) == versions)
        mirror.apply(delivered)
        #expect(mirror.keys(2) == ["rooms/r1", "rooms/r2", "rooms/r3"])
        #expect(mirror.snapshotVersion == versions.last)
        let token = try #require(mirror.globalToken.flatMap(WatchToken.init(bytes:)))
        #expect(token.version == versions.last)
        // Nothing new: the next tick sends nothing.
        #expect(await two.b.tick() == 0)
        #expect(listener.outbound.drain().isEmpty)
    }

    @Test func commitNoticesWakeTheOtherInstance() async throws {
        let two = TwoInstances()
        let following = Task { await two.b.followCommits() }
        defer { following.cancel() }
        let listener = try await two.connect(two.b, client: "listener")
        _ = await two.b.watch(.init(targetID: 2, target: T.target(DocModel.Query(document: T.key("rooms/lobby")))), on: listener)
        _ = listener.outbound.drain()
        let writer = try await two.connect(two.a, client: "writer")
        let version = try #require(await two.write(two.a, writer, batch: 1, [T.set("rooms/lobby", ["floor": 1])]).writeResult?.commitVersion)
        var received: [ServerMessage] = []
        for _ in 0..<500 where snapshots(received).last != version {
            received += listener.outbound.drain()
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(received.compactMap { $0.documentChange?.document.data["floor"] } == [1])
        #expect(snapshots(received) == [version])
    }

    @Test func aCommitOnBAfterOneOnAIsDeliveredAfterIt() async throws {
        let two = TwoInstances()
        let listener = try await two.connect(two.b, client: "listener")
        _ = await two.b.watch(.init(targetID: 2, target: T.collection("rooms", limit: 10)), on: listener)
        _ = listener.outbound.drain()
        let writerA = try await two.connect(two.a, client: "writer-a")
        let writerB = try await two.connect(two.b, client: "writer-b")
        let va = try #require(await two.write(two.a, writerA, batch: 1, [T.set("rooms/a", [:])]).writeResult?.commitVersion)
        let vb = try #require(await two.write(two.b, writerB, batch: 1, [T.set("rooms/b", [:])]).writeResult?.commitVersion)
        let delivered = listener.outbound.drain()
        // B's own commit came after A's: B reads the log and delivers both, A's first.
        #expect(snapshots(delivered) == [va, vb])
        #expect(delivered.compactMap { $0.documentChange?.document.key.description } == ["rooms/a", "rooms/b"])
    }

    @Test func aTargetAddedAtANewerVersionBringsTheConnectionsOtherTargetsThereFirst() async throws {
        let two = TwoInstances()
        let listener = try await two.connect(two.b, client: "listener")
        _ = await two.b.watch(.init(targetID: 2, target: T.collection("rooms", limit: 10)), on: listener)
        _ = listener.outbound.drain()
        let writer = try await two.connect(two.a, client: "writer")
        let v1 = try #require(await two.write(two.a, writer, batch: 1, [T.set("rooms/a", ["n": 1])]).writeResult?.commitVersion)
        // A second target, read at v1: target 2 must first receive rooms/a, so that the
        // snapshot at v1 is true for both.
        let added = await two.b.watch(.init(targetID: 4, target: T.collection("halls", limit: 10)), on: listener)
        let delivered = listener.outbound.drain()
        #expect(delivered.count > added.count)
        let roomsA = try #require(delivered.firstIndex { $0.documentChange?.document.key.description == "rooms/a" })
        let target4Added = try #require(delivered.firstIndex { $0.targetChange?.state == .added && $0.targetChange?.targetIDs == [4] })
        #expect(roomsA < target4Added)
        #expect(snapshots(delivered) == [v1, v1])
        var mirror = ClientMirror()
        mirror.apply(delivered)
        #expect(mirror.keys(2) == ["rooms/a"])
    }

    @Test func aTokenFromAResumesOnB() async throws {
        let two = TwoInstances()
        let writer = try await two.connect(two.a, client: "writer")
        _ = await two.write(two.a, writer, batch: 1, [T.set("rooms/a", ["n": 1])])
        let onA = try await two.connect(two.a, client: "listener")
        let first = await two.a.watch(.init(targetID: 2, target: T.collection("rooms", limit: 10)), on: onA)
        var mirror = ClientMirror()
        mirror.apply(first)
        let token = try #require(mirror.tokens[2])
        await two.a.close(onA)
        // While the client is away: a change through A, then the client reconnects to B.
        _ = await two.write(two.a, writer, batch: 2, [T.set("rooms/b", ["n": 2]), T.set("rooms/a", ["n": 3])])
        let onB = try await two.connect(two.b, client: "listener")
        let resumed = await two.b.watch(.init(targetID: 2, target: T.collection("rooms", limit: 10), resumeToken: token), on: onB)
        #expect(!resumed.contains { $0.targetChange?.state == .reset })
        mirror.apply(resumed)
        #expect(mirror.keys(2) == ["rooms/a", "rooms/b"])
        #expect(mirror.targets[2]?[T.key("rooms/a")]?.data["n"] == 3)
        #expect(mirror.snapshotVersion == (try await two.lastVersion()))
    }

    @Test func concurrentIncrementsThroughBothInstancesAreNeverLost() async throws {
        let two = TwoInstances()
        let perInstance = 40
        await withTaskGroup(of: Void.self) { group in
            for (name, core) in [("a", two.a), ("b", two.b)] {
                group.addTask {
                    let connection = try! await two.connect(core, client: "client-\(name)")
                    for i in 1...perInstance {
                        let answer = await core.write(.init(clientID: connection.clientID, batchID: i, mutations: [T.increment("counters/c")]),
                                                      on: connection)
                        #expect(answer.writeResult != nil, "\(name) batch \(i): \(answer)")
                    }
                }
            }
        }
        let store = try two.server.tenantStore("acme")
        let stored = try await store.documents([T.key("counters/c")]).documents[T.key("counters/c")]
        #expect(stored?.data["n"] == .integer(Int64(2 * perInstance)))
        guard case .complete(let log, _) = try await store.changes(after: store.state().changeLogFloor, maxEntries: 1_000) else {
            Issue.record("log unavailable")
            return
        }
        let versions = log.map(\.version)
        #expect(versions.count == 2 * perInstance)
        #expect(zip(versions, versions.dropFirst()).allSatisfy { $0 < $1 })
    }
}

/// A store that publishes a commit notice after every commit, as the PostgreSQL store does
/// for the commits of every process.
final class NoticingStore: ServerStore {
    let base: LevelDBServerStore
    private let stream: AsyncStream<CommitNotice>
    private let continuation: AsyncStream<CommitNotice>.Continuation
    private let handedOut = Mutex(false)

    init(_ base: LevelDBServerStore) {
        self.base = base
        (stream, continuation) = AsyncStream.makeStream(of: CommitNotice.self)
    }

    func tenant(_ tenant: TenantID) async throws(DocError) -> any TenantStore {
        NoticingTenantStore(base: try await base.tenant(tenant), notices: continuation)
    }

    func tenantIDs() async throws(DocError) -> [TenantID] { try await base.tenantIDs() }
    func checkHealth() async throws(DocError) { try await base.checkHealth() }
    func close() async { continuation.finish() }

    /// One consumer (the core following it).
    func commitNotices() -> AsyncStream<CommitNotice>? {
        handedOut.withLock { taken in
            defer { taken = true }
            return taken ? nil : stream
        }
    }
}

struct NoticingTenantStore: ForwardingTenantStore {
    let base: any TenantStore
    let notices: AsyncStream<CommitNotice>.Continuation

    func commit(_ request: CommitRequest) async throws(DocError) -> CommitResult {
        let result = try await base.commit(request)
        if case .stored = result, let version = request.outcome.commitVersion {
            notices.yield(CommitNotice(tenant: tenant, version: version))
        }
        return result
    }
}

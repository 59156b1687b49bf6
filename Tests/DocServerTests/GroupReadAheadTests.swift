import DocModel
import DocProtocol
import Synchronization
import Testing
@testable import DocServer

/// A commit group reads the tenant's state, its batches' outcomes and their documents from the
/// store in one call (``GroupCommitView/prefetch(batches:documents:)``), not twice per batch: on
/// PostgreSQL each read is a round trip, and a group's batches are processed one after the
/// other.
@Suite struct GroupReadAheadTests {
    /// The reads of a tenant's store, counted.
    final class Reads: Sendable {
        private let counts = Mutex<[String: Int]>([:])
        func count(_ what: String) { counts.withLock { $0[what, default: 0] += 1 } }
        var all: [String: Int] { counts.withLock { $0 } }
        func reset() { counts.withLock { $0 = [:] } }
    }

    struct CountingTenantStore: ForwardingTenantStore {
        let base: any TenantStore
        let reads: Reads
        func outcome(of batch: BatchKey) async throws(DocError) -> BatchOutcome? {
            reads.count("outcome")
            return try await base.outcome(of: batch)
        }
        func laterOutcomeExists(after batch: BatchKey) async throws(DocError) -> Bool {
            reads.count("laterOutcome")
            return try await base.laterOutcomeExists(after: batch)
        }
        func state() async throws(DocError) -> TenantState {
            reads.count("state")
            return try await base.state()
        }
        func readAhead(batches: [BatchKey], documents keys: [DocumentKey]) async throws(DocError) -> GroupReadAhead {
            reads.count("readAhead")
            return try await base.readAhead(batches: batches, documents: keys)
        }
        func documents(_ keys: [DocumentKey]) async throws(DocError) -> DocumentsRead {
            reads.count("documents")
            return try await base.documents(keys)
        }
    }

    final class CountingStore: ForwardingServerStore {
        let base: LevelDBServerStore
        let reads = Reads()
        init(base: LevelDBServerStore) { self.base = base }
        func wrap(_ tenant: any TenantStore) -> any TenantStore { CountingTenantStore(base: tenant, reads: reads) }
    }

    /// A core over `server`'s store whose reads are counted, and a connection of client `c1`
    /// (the counts start after its handshake).
    static func countedConnection(_ server: TestServer) async throws -> (CountingStore, DocServerCore, ServerConnection) {
        let store = CountingStore(base: server.store)
        let core = server.core(over: store)
        let connection = try await core.handshake(tenant: "acme", uid: "u1", clientID: "c1")
        _ = connection.outbound.drain()
        store.reads.reset()   // the handshake's reads
        return (store, core, connection)
    }

    @Test func aFrameOfBatchesReadsTheStoreOnce() async throws {
        let server = TestServer()
        let (store, core, connection) = try await Self.countedConnection(server)

        func frame(_ ids: ClosedRange<Int>) -> ClientMessage.WriteBatches {
            ClientMessage.WriteBatches(clientID: "c1", batches: ids.map { i in
                .init(batchID: i, mutations: [
                    T.set("notes/n\(i)", ["n": .integer(Int64(i))]),
                    .setMerge(T.key("counters/c"), ObjectValue(), transforms: [.increment(T.field("n"), by: 1)]),
                ])
            })
        }
        guard case .writeResults(let first) = await core.write(frame(1...8), on: connection) else {
            Issue.record("no writeResults")
            return
        }
        #expect(first.answers.allSatisfy { if case .committed = $0 { true } else { false } })
        #expect(store.reads.all == ["readAhead": 1])

        // Batches 7 and 8 again, with new ones: answered from their outcomes, read ahead too;
        // the counter counts each batch once, each batch seeing the one before it.
        guard case .writeResults(let second) = await core.write(frame(7...12), on: connection) else {
            Issue.record("no writeResults")
            return
        }
        #expect(second.answers.prefix(2) == first.answers.suffix(2))
        #expect(store.reads.all == ["readAhead": 2])
        let stored = try await server.tenantStore("acme").documents([T.key("counters/c"), T.key("notes/n12")])
        #expect(stored.documents[T.key("counters/c")]?.data["n"] == .integer(12))
        #expect(stored.documents[T.key("notes/n12")]?.data["n"] == .integer(12))
    }

    /// A batch committed on its own looks up its outcome, and whether a later batch of its
    /// client has one, in one read (on PostgreSQL one round trip, not two).
    @Test func aSingleBatchLooksUpItsOutcomeInOneRead() async throws {
        let server = TestServer()   // kept: its store closes when it goes
        let (store, core, connection) = try await Self.countedConnection(server)
        let answer = await core.write(.init(clientID: "c1", batchID: 1, mutations: [T.set("notes/n1", ["n": 1])]), on: connection)
        #expect(answer.writeResult != nil, "\(answer)")
        let reads = store.reads.all
        #expect(reads["readAhead"] == 1 && reads["outcome"] == nil && reads["laterOutcome"] == nil, "\(reads)")
    }
}

import DocCache
import DocModel
import DocProtocol
import DocServer
import DocTestSupport
import Foundation
import Testing

/// Several batches per frame (`writeBatches` / `writeResults`) and group commit, against the
/// real server on 127.0.0.1 through real WebSockets.
@Suite("Group commit over WebSocket", .serialized)
struct GroupCommitSyncTests {
    static func set(_ path: String, _ fields: [String: Value]) -> Mutation { .set(try! DocumentKey(path), ObjectValue(fields)) }

    /// The value of an unlabelled counter in the server's metrics exposition.
    static func counter(_ name: String, of server: LiveServer) async -> Double? {
        Samples(await server.core.metricsText()).value(name, [:])
    }

    @Test func aFrameOfBatchesIsAnsweredPerBatchAndABadOneChangesNothing() async throws {
        let server = try await LiveServer()
        defer { server.removeData() }
        let socket = RawSocket(url: server.url)
        guard case .welcome? = await socket.hello(token: try await server.token(), clientID: "c1") else {
            Issue.record("no welcome"); return
        }
        // A frame whose second batch is invalid is refused whole, answered for that batch.
        socket.send(#"{"type":"writeBatches","clientId":"c1","batches":[{"batchId":1,"mutations":[{"path":"docs/a","kind":"set","data":{}}]},"#
            + #"{"batchId":2,"mutations":[{"path":"docs/b","kind":"patch","data":{}}]}]}"#)
        guard case .writeError(let refused)? = await socket.next() else { Issue.record("no writeError"); return }
        #expect(refused.batchID == 2 && refused.error.code == .invalidArgument)

        // A valid frame: batch 2 fails its precondition between two commits.
        socket.send(.writeBatches(.init(clientID: "c1", batches: [
            .init(batchID: 1, mutations: [Self.set("docs/a", ["n": 1])]),
            .init(batchID: 2, mutations: [.update(try DocumentKey("docs/missing"), fields: [try FieldPath("n"): 1])]),
            .init(batchID: 3, mutations: [Self.set("docs/b", ["n": 3])]),
        ])))
        guard case .writeResults(let results)? = await socket.next() else { Issue.record("no writeResults"); return }
        #expect(results.answers.map(\.batchID) == [1, 2, 3])
        guard case .committed(_, let v1, _) = results.answers[0], case .failed(_, let error) = results.answers[1],
              case .committed(_, let v3, _) = results.answers[2] else { Issue.record("\(results.answers)"); return }
        #expect(error.code == .notFound)
        #expect(v1 < v3)
        // Sent again (a client that did not get the answer): the same answers, nothing applied twice.
        socket.send(.writeBatches(.init(clientID: "c1", batches: [
            .init(batchID: 1, mutations: [Self.set("docs/a", ["n": 1])]),
            .init(batchID: 2, mutations: [.update(try DocumentKey("docs/missing"), fields: [try FieldPath("n"): 1])]),
            .init(batchID: 3, mutations: [Self.set("docs/b", ["n": 3])]),
        ])))
        guard case .writeResults(let again)? = await socket.next() else { Issue.record("no second writeResults"); return }
        #expect(again.answers == results.answers)
        let tenant = try await server.core.store.tenant(TenantID("acme"))
        #expect(try await tenant.state().lastVersion == v3)
        await socket.close()
        await server.stop()
    }

    @Test func offlineWritesSyncInGroupsWithARejectionAmongThem() async throws {
        let server = try await LiveServer()
        let devices = ClientSyncTests.Devices(server)
        let alice = try await devices.open("alice")
        let bob = try await devices.open("bob")
        _ = try await alice.document("orders/o1").setData(["total": 10]).committed
        let seenVersion = try #require(try await bob.document("orders/o1").getDocument(source: .server).version)
        _ = try await alice.document("orders/o1").updateData(["total": 20]).committed   // bob's version is now stale
        let tenant = try await server.core.store.tenant(TenantID("acme"))
        let start = try await tenant.state().lastVersion
        let outcomesBefore = try #require(await Self.counter("doccache_batch_outcomes_recorded_total", of: server))
        let storeCommitsBefore = try #require(await Self.counter("doccache_store_commits_total", of: server))

        try await bob.disableNetwork()
        var handles: [WriteHandle] = []
        for i in 0..<35 { handles.append(try await bob.document(String(format: "items/i%03d", i)).setData(["n": .value(.integer(Int64(i)))])) }
        let stale = try await bob.document("orders/o1").updateData(["total": 30], ifVersion: seenVersion)
        for i in 35..<80 { handles.append(try await bob.document(String(format: "items/i%03d", i)).setData(["n": .value(.integer(Int64(i)))])) }
        try await bob.enableNetwork()
        try await bob.waitForPendingWrites()

        do {
            _ = try await stale.committed
            Issue.record("the stale update was committed")
        } catch {
            #expect(error.code == .failedPrecondition)
        }
        var versions: [SnapshotVersion] = []
        for handle in handles { versions.append(try await handle.committed) }
        #expect(zip(versions, versions.dropFirst()).allSatisfy { $0 < $1 }, "committed in queue order")
        #expect(await bob.pendingWriteCount == 0)
        // The 81 batches were stored in groups: fewer store transactions than outcomes.
        let outcomes = try #require(await Self.counter("doccache_batch_outcomes_recorded_total", of: server)) - outcomesBefore
        let storeCommits = try #require(await Self.counter("doccache_store_commits_total", of: server)) - storeCommitsBefore
        #expect(outcomes == 81)
        #expect(storeCommits > 0 && storeCommits < outcomes / 2, "\(storeCommits) store commits for \(outcomes) batches")

        // Every item once on the server; the order untouched by the rejected batch.
        guard case .complete(let changes, _) = try await tenant.changes(after: start, maxEntries: 1_000) else {
            Issue.record("no change log"); return
        }
        #expect(changes.count == 80)
        #expect(Set(changes.map(\.key)).count == 80)
        #expect(!changes.contains { $0.key.description == "orders/o1" })
        #expect(try await tenant.documents([try DocumentKey("orders/o1")]).documents.first?.value.data[try FieldPath("total")] == 20)
        await devices.close()
        await server.stop()
        server.removeData()
    }
}

import DocModel
import DocProtocol
import Testing
@testable import DocServer

@Suite struct CommitTests {
    func document(_ server: TestServer, _ path: String, tenant: String = "acme") async throws -> Document? {
        try await server.tenantStore(tenant).documents([T.key(path)]).documents[T.key(path)]
    }

    @Test func commitVersionsIncreaseStrictlyEvenWhenTheClockStepsBack() async throws {
        let server = TestServer()
        let c = try await server.connect()
        var versions: [Int64] = []
        for i in 1...5 {
            if i == 3 { server.clock.advance(by: -60_000_000) }   // the clock steps back a minute
            if i == 5 { server.clock.advance(by: 120_000_000) }
            let answer = await server.write(c, batch: i, [T.set("a/\(i)", ["i": .integer(Int64(i))])])
            versions.append(try #require(answer.writeResult).commitVersion.microseconds)
        }
        #expect(zip(versions, versions.dropFirst()).allSatisfy { $0 < $1 })
        #expect(versions[4] == server.clock.micros)                 // back to "now"
        #expect(try await document(server, "a/4")?.version.microseconds == versions[3])
    }

    @Test func transformsAreComputedAtCommit() async throws {
        let server = TestServer()
        let c = try await server.connect()
        await server.write(c, batch: 1, [.set(T.key("s/1"), T.data(["n": 10, "tags": ["a", "b"]]))])
        server.clock.advance(by: 5_000_000)
        let answer = await server.write(c, batch: 2, [
            .update(T.key("s/1"), fields: [:], transforms: [
                .increment(T.field("n"), by: 5), .serverTimestamp(T.field("at")),
                .arrayUnion(T.field("tags"), ["c", "a"]), .arrayRemove(T.field("tags2"), ["x"]),
            ]),
        ])
        let result = try #require(answer.writeResult)
        let commitTime = Timestamp(microseconds: result.commitVersion.microseconds)
        #expect(result.commitVersion.microseconds == server.clock.micros)
        #expect(result.results.count == 1)
        let transforms = result.results[0].transformResults
        #expect(transforms.count == 4)
        #expect(transforms[0].isIdentical(to: 15))
        #expect(transforms[1].isIdentical(to: .timestamp(commitTime)))
        #expect(transforms[2].isNull && transforms[3].isNull)   // array transforms report null
        let stored = try #require(try await document(server, "s/1"))
        #expect(stored.data["n"]?.isIdentical(to: 15) == true)
        #expect(stored.data["at"] == .timestamp(commitTime))
        #expect(stored.data["tags"]?.isIdentical(to: ["a", "b", "c"]) == true)
        #expect(stored.data["tags2"]?.isIdentical(to: []) == true)
        #expect(stored.version == result.commitVersion)
        #expect(stored.createTime < stored.version)
    }

    @Test func tombstonesSetDeletedAtAndUpdatedAt() async throws {
        let server = TestServer()
        let c = try await server.connect()
        await server.write(c, batch: 1, [T.set("t/1", ["keep": true])])
        server.clock.advance(by: 1_000)
        let result = try #require(await server.write(c, batch: 2, [.tombstone(T.key("t/1"))]).writeResult)
        let at = Value.timestamp(Timestamp(microseconds: result.commitVersion.microseconds))
        let stored = try #require(try await document(server, "t/1"))
        #expect(stored.isTombstone)
        #expect(stored.data[tombstoneField] == at)
        #expect(stored.data[updatedAtField] == at)
        #expect(stored.data["keep"] == true)
        #expect(result.results[0].transformResults == [at, at])
        // A tombstone of a missing document creates one holding only the two fields.
        _ = try #require(await server.write(c, batch: 3, [.tombstone(T.key("t/2"))]).writeResult)
        #expect(try await document(server, "t/2")?.data.fields.keys.sorted() == ["deletedAt", "updatedAt"])
    }

    @Test func preconditionsRejectWithTheirCodes() async throws {
        let server = TestServer()
        let c = try await server.connect()
        let created = try #require(await server.write(c, batch: 1, [T.set("p/1", ["v": 1])]).writeResult)
        let cases: [(Mutation, DocError.Code)] = [
            (.update(T.key("p/missing"), fields: [T.field("v"): 2]), .notFound),
            (.create(T.key("p/1"), T.data(["v": 2])), .alreadyExists),
            (.delete(T.key("p/1"), precondition: .updateTime(SnapshotVersion(microseconds: 1))), .failedPrecondition),
            (.verify(T.key("p/missing"), .exists(true)), .notFound),
        ]
        for (i, (mutation, code)) in cases.enumerated() {
            let error = try #require(await server.write(c, batch: 10 + i, [mutation]).writeError, "case \(i)")
            #expect(error.error.code == code, "case \(i)")
            #expect(error.error.location?.contains("write 0") == true)
        }
        // The matching update time passes.
        let ok = await server.write(c, batch: 20, [.delete(T.key("p/1"), precondition: .updateTime(created.commitVersion))])
        #expect(ok.writeResult != nil)
        #expect(try await document(server, "p/1") == nil)
    }

    @Test func aBatchIsAllOrNothing() async throws {
        let server = TestServer()
        let c = try await server.connect()
        await server.write(c, batch: 1, [T.set("x/1", ["n": 1])])
        let before = try await server.tenantStore("acme").state()
        let answer = await server.write(c, batch: 2, [
            T.set("x/2", ["n": 2]), T.increment("x/1"), .create(T.key("x/1"), T.data([:])),
        ])
        let error = try #require(answer.writeError)
        #expect(error.error.code == .alreadyExists)
        #expect(error.error.location?.contains("write 2") == true)
        #expect(try await document(server, "x/2") == nil)
        #expect(try await document(server, "x/1")?.data["n"] == 1)
        let after = try await server.tenantStore("acme").state()
        #expect(after.lastVersion == before.lastVersion)   // no version consumed, no log entry
        guard case .complete(let log, _) = try await server.tenantStore("acme").changes(after: before.lastVersion, maxEntries: 10) else {
            Issue.record("log unavailable")
            return
        }
        #expect(log.isEmpty)
    }

    @Test func documentLimitsRejectTheBatch() async throws {
        let server = TestServer()
        let c = try await server.connect()
        // Each write is within the limits; together they grow the document past 1 MiB.
        let half = String(repeating: "x", count: 600_000)
        let answer = await server.write(c, batch: 1, [
            T.set("big/1", ["a": .string(half)]),
            .setMerge(T.key("big/1"), T.data(["b": .string(half)])),
        ])
        let error = try #require(answer.writeError)
        #expect(error.error.code == .invalidArgument)
        #expect(error.error.message.contains("1 MiB"))
        #expect(try await document(server, "big/1") == nil)
        // Nesting deeper than 20, sent without going through the frame decoder.
        var deep: Value = 1
        for _ in 0..<20 { deep = ["x": deep] }
        let tooDeep = await server.write(c, batch: 2, [T.set("deep/1", ["d": deep])])
        #expect(tooDeep.writeError?.error.code == .invalidArgument)
        #expect(tooDeep.writeError?.error.message.contains("deeper than 20") == true)
        // Too many writes.
        let many = (0..<501).map { T.set("m/\($0)", [:]) }
        #expect(await server.write(c, batch: 3, many).writeError?.error.message.contains("at most 500 writes") == true)
    }

    @Test func exactlyOnce_eachIncrementBatchSentTwice() async throws {
        let server = TestServer()
        let c = try await server.connect()
        for batch in 1...100 {
            let first = try #require(await server.write(c, batch: batch, [T.increment("counters/c")]).writeResult)
            let again = try #require(await server.write(c, batch: batch, [T.increment("counters/c")]).writeResult)
            #expect(again.commitVersion == first.commitVersion)
            #expect(again.results == first.results)
            #expect(again.results[0].transformResults[0].isIdentical(to: .integer(Int64(batch))))
        }
        #expect(try await document(server, "counters/c")?.data["n"]?.isIdentical(to: 100) == true)
        // The same batch ids from another client are other batches.
        let other = try await server.connect(client: "client-2")
        _ = try #require(await server.write(other, batch: 1, [T.increment("counters/c")]).writeResult)
        #expect(try await document(server, "counters/c")?.data["n"]?.isIdentical(to: 101) == true)
    }

    @Test func aResentRejectionGetsTheSameRejection() async throws {
        let server = TestServer()
        let c = try await server.connect()
        let update = Mutation.update(T.key("r/1"), fields: [T.field("v"): 1])
        let first = try #require(await server.write(c, batch: 1, [update]).writeError)
        #expect(first.error.code == .notFound)
        // The document now exists, but the batch was already answered: same rejection, not applied.
        await server.write(c, batch: 2, [T.set("r/1", ["v": 0])])
        let again = try #require(await server.write(c, batch: 1, [update]).writeError)
        #expect(again.error == first.error)
        #expect(try await document(server, "r/1")?.data["v"] == 0)
    }

    @Test func reusedBatchIDsAndForeignUsersAreRefused() async throws {
        let server = TestServer()
        let alice = try await server.connect(uid: "alice", client: "shared")
        await server.write(alice, batch: 1, [T.increment("k/1")])
        // Same ids, other mutations: refused as a batch id collision (another store writes under
        // the client id), nothing applied, and nothing more of the connection is attempted.
        let reused = try #require(await server.write(alice, batch: 1, [T.increment("k/1", by: 5)]).writeError)
        #expect(reused.error.code == .failedPrecondition && reused.error.isBatchIDCollision)
        #expect(reused.error.message.contains("other mutations"))
        let after = try #require(await server.write(alice, batch: 2, [T.increment("k/1")]).writeError)
        #expect(after.error.code == .unavailable, "\(after.error)")
        // Same ids from another user: refused.
        let mallory = try await server.connect(uid: "mallory", client: "shared")
        let foreign = try #require(await server.write(mallory, batch: 1, [T.increment("k/1")]).writeError)
        #expect(foreign.error.code == .permissionDenied)
        #expect(try await document(server, "k/1")?.data["n"]?.isIdentical(to: 1) == true)
        // A batch whose client id is not the connection's: refused before anything is read.
        let wrong = await server.core.write(.init(clientID: "someone-else", batchID: 9, mutations: [T.increment("k/1")]), on: alice)
        #expect(wrong.writeError?.error.code == .invalidArgument)
        #expect(try await document(server, "k/1")?.data["n"]?.isIdentical(to: 1) == true)
    }

    @Test func transientFailuresAreNotRemembered() async throws {
        let server = TestServer()
        let c = try await server.connect()
        await server.store.close()   // the store goes away: unavailable
        let failed = try #require(await server.write(c, batch: 1, [T.increment("k/1")]).writeError)
        #expect(failed.error.code == .unavailable)
        #expect(failed.error.code.isTransient)
    }

    @Test func tenantsCommitInParallel() async throws {
        let server = TestServer()
        let tenants = ["t1", "t2", "t3", "t4"]
        var connections: [ServerConnection] = []
        for t in tenants { connections.append(try await server.connect(tenant: t)) }
        await withTaskGroup(of: Void.self) { group in
            for connection in connections {
                group.addTask {
                    for batch in 1...20 { _ = await server.core.write(.init(clientID: connection.clientID, batchID: batch, mutations: [T.increment("c/c")]), on: connection) }
                }
            }
        }
        for t in tenants {
            #expect(try await document(server, "c/c", tenant: t)?.data["n"]?.isIdentical(to: 20) == true, "tenant \(t)")
        }
    }

    @Test func commitWithoutAConnection() async throws {
        let server = TestServer()
        let answer = await server.core.commit(tenant: "acme", uid: "tool", clientID: "docctl", batchID: 1, mutations: [T.set("a/1", ["x": 1])])
        #expect(answer.writeResult != nil)
        let again = await server.core.commit(tenant: "acme", uid: "tool", clientID: "docctl", batchID: 1, mutations: [T.set("a/1", ["x": 1])])
        #expect(again.writeResult?.commitVersion == answer.writeResult?.commitVersion)
        #expect(await server.core.commit(tenant: "bad/tenant", uid: "t", clientID: "c", batchID: 1, mutations: []).writeError?.error.code == .invalidArgument)
    }

    @Test func durableStoreCommits() async throws {
        let server = TestServer(sync: true)
        let c = try await server.connect()
        #expect(await server.write(c, batch: 1, [T.set("d/1", ["x": 1])]).writeResult != nil)
        #expect(try await document(server, "d/1") != nil)
    }
}

import DocModel
import DocProtocol
import LevelDB
import Testing
@testable import DocServer

@Suite struct StoreTests {
    func outcome(_ client: String, _ batch: Int, version: Int64?, at recordedAt: Int64 = 1, uid: String = "u") -> BatchOutcome {
        BatchOutcome(
            batch: BatchKey(clientID: client, batchID: batch), uid: uid, digest: 7, recordedAt: recordedAt,
            result: version.map { .committed(version: SnapshotVersion(microseconds: $0), results: []) }
                ?? .rejected(DocError(.notFound, "nope")))
    }

    func doc(_ path: String, _ fields: [String: Value], version: Int64) -> Document {
        Document(key: T.key(path), data: ObjectValue(fields), version: SnapshotVersion(microseconds: version))
    }

    @Test func commitStoresDocumentsLogAndOutcomeTogether() async throws {
        let server = TestServer()
        let store = try server.tenantStore("acme")
        let created = try await store.state()
        #expect(created.lastVersion.microseconds == server.clock.micros)
        let v = created.lastVersion.microseconds + 10
        let result = try await store.commit(CommitRequest(
            outcome: outcome("c", 1, version: v),
            writes: [DocumentWrite(key: T.key("a/1"), document: doc("a/1", ["x": 1], version: v)),
                     DocumentWrite(key: T.key("a/2"), document: doc("a/2", ["x": 2], version: v))]))
        #expect(result == .stored(previousVersion: created.lastVersion))
        let read = try await store.documents([T.key("a/1"), T.key("a/2"), T.key("a/3")])
        #expect(read.version.microseconds == v)
        #expect(read.documents.count == 2)
        #expect(read.documents[T.key("a/2")]?.data["x"] == 2)
        guard case .complete(let log, let through) = try await store.changes(after: created.lastVersion, maxEntries: 100) else {
            Issue.record("log unavailable")
            return
        }
        #expect(through.microseconds == v)
        #expect(log.map(\.key.description) == ["a/1", "a/2"])
        #expect(log.allSatisfy { $0.version.microseconds == v })
        #expect(try await store.outcome(of: BatchKey(clientID: "c", batchID: 1))?.commitVersion?.microseconds == v)

        // A delete removes the document and logs a NoDocument.
        _ = try await store.commit(CommitRequest(outcome: outcome("c", 2, version: v + 1),
                                                 writes: [DocumentWrite(key: T.key("a/1"), document: nil)]))
        #expect(try await store.documents([T.key("a/1")]).documents.isEmpty)
        guard case .complete(let after, _) = try await store.changes(after: SnapshotVersion(microseconds: v), maxEntries: 100) else {
            Issue.record("log unavailable")
            return
        }
        #expect(after.count == 1)
        #expect(after.first?.document == .noDocument(NoDocument(key: T.key("a/1"), version: SnapshotVersion(microseconds: v + 1))))
    }

    @Test func refusedCommitStoresNothing() async throws {
        let server = TestServer()
        let store = try server.tenantStore("acme")
        let last = try await store.state().lastVersion.microseconds
        // A version that is not above the last one: aborted, and nothing of the request stored.
        await #expect(throws: DocError.self) {
            try await store.commit(CommitRequest(outcome: outcome("c", 1, version: last),
                                                 writes: [DocumentWrite(key: T.key("a/1"), document: doc("a/1", [:], version: last))]))
        }
        #expect(try await store.documents([T.key("a/1")]).documents.isEmpty)
        #expect(try await store.outcome(of: BatchKey(clientID: "c", batchID: 1)) == nil)
        #expect(try await store.state().lastVersion.microseconds == last)
        // A rejection may not carry writes.
        await #expect(throws: DocError.self) {
            try await store.commit(CommitRequest(outcome: outcome("c", 2, version: nil),
                                                 writes: [DocumentWrite(key: T.key("a/1"), document: nil)]))
        }
        #expect(try await store.outcome(of: BatchKey(clientID: "c", batchID: 2)) == nil)
    }

    @Test func duplicateBatchAppliesNothing() async throws {
        let server = TestServer()
        let store = try server.tenantStore("acme")
        let v = try await store.state().lastVersion.microseconds + 1
        let first = outcome("c", 1, version: v)
        #expect(try await store.commit(CommitRequest(outcome: first, writes: [DocumentWrite(key: T.key("a/1"), document: doc("a/1", ["n": 1], version: v))]))
                == .stored(previousVersion: SnapshotVersion(microseconds: v - 1)))
        let again = try await store.commit(CommitRequest(
            outcome: outcome("c", 1, version: v + 5), writes: [DocumentWrite(key: T.key("a/1"), document: doc("a/1", ["n": 2], version: v + 5))]))
        #expect(again == .duplicate(first))
        #expect(try await store.documents([T.key("a/1")]).documents[T.key("a/1")]?.data["n"] == 1)
        #expect(try await store.state().lastVersion.microseconds == v)
    }

    @Test func tenantsAreIsolated() async throws {
        let server = TestServer()
        // "a" is a byte prefix of "ab": the ordered-code prefixes must still not overlap.
        let a = try server.tenantStore("a")
        let ab = try server.tenantStore("ab")
        let va = try await a.state().lastVersion.microseconds + 1
        let vab = try await ab.state().lastVersion.microseconds + 1
        _ = try await a.commit(CommitRequest(outcome: outcome("c", 1, version: va),
                                             writes: [DocumentWrite(key: T.key("rooms/r1"), document: doc("rooms/r1", ["who": "a"], version: va))]))
        _ = try await ab.commit(CommitRequest(outcome: outcome("c", 1, version: vab + 100),
                                              writes: [DocumentWrite(key: T.key("rooms/r1"), document: doc("rooms/r1", ["who": "ab"], version: vab + 100))]))
        #expect(try await a.documents([T.key("rooms/r1")]).documents[T.key("rooms/r1")]?.data["who"] == "a")
        #expect(try await ab.documents([T.key("rooms/r1")]).documents[T.key("rooms/r1")]?.data["who"] == "ab")
        #expect(try await a.query(T.collection("rooms"), limit: nil).documents.count == 1)
        #expect(try await a.outcome(of: BatchKey(clientID: "c", batchID: 1))?.commitVersion?.microseconds == va)
        #expect(try await ab.outcome(of: BatchKey(clientID: "c", batchID: 1))?.commitVersion?.microseconds == vab + 100)
        #expect(try await a.state().incarnation != ab.state().incarnation)
        #expect(try !TenantKeys(TenantID("ab")).prefix.starts(with: TenantKeys(TenantID("a")).prefix))
        // Every key of tenant "a" lies under its prefix; none under "ab"'s.
        let all = try server.store.database.entries().collect()
        let aKeys = all.filter { $0.key.starts(with: a.keys.prefix) }
        let abKeys = all.filter { $0.key.starts(with: ab.keys.prefix) }
        #expect(!aKeys.isEmpty && !abKeys.isEmpty)
        #expect(Set(aKeys.map(\.key)).isDisjoint(with: Set(abKeys.map(\.key))))
        #expect(aKeys.count + abKeys.count + 1 == all.count)   // + the global format key
    }

    @Test func queriesUseCollectionsAndGroups() async throws {
        let server = TestServer()
        let store = try server.tenantStore("acme")
        var v = try await store.state().lastVersion.microseconds
        for (i, path) in ["rooms/r1", "rooms/r2", "rooms/r1/messages/m1", "rooms/r2/messages/m2", "users/u/messages/m3", "roomsX/r9"].enumerated() {
            v += 1
            _ = try await store.commit(CommitRequest(outcome: outcome("c", i, version: v),
                                                     writes: [DocumentWrite(key: T.key(path), document: doc(path, ["i": .integer(Int64(i))], version: v))]))
        }
        #expect(try await store.query(T.collection("rooms"), limit: nil).documents.map(\.key.description) == ["rooms/r1", "rooms/r2"])
        let group = T.target(try DocModel.Query(collectionGroup: "messages").limit(to: 10))
        #expect(try await store.query(group, limit: nil).documents.map(\.key.description)
                == ["rooms/r1/messages/m1", "rooms/r2/messages/m2", "users/u/messages/m3"])
        let under = T.target(try DocModel.Query(collectionGroup: "messages", parent: ResourcePath("rooms/r2")).limit(to: 10))
        #expect(try await store.query(under, limit: nil).documents.map(\.key.description) == ["rooms/r2/messages/m2"])
        let byI = T.collection("rooms/r1/messages", limit: 1)
        #expect(try await store.query(byI, limit: 1).documents.count == 1)
        let desc = T.target(try DocModel.Query(collectionGroup: "messages").order(by: T.field("i"), descending: true).limit(to: 2))
        #expect(try await store.query(desc, limit: 2).documents.map(\.key.description) == ["users/u/messages/m3", "rooms/r2/messages/m2"])
        #expect(try await store.query(T.target(DocModel.Query(document: T.key("rooms/r2"))), limit: nil).documents.count == 1)
    }

    @Test func outcomesArePrunedAfterRetention() async throws {
        let server = TestServer()
        let store = try server.tenantStore("acme")
        var v = try await store.state().lastVersion.microseconds
        for i in 0..<5 {
            v += 1
            _ = try await store.commit(CommitRequest(outcome: outcome("c", i, version: v, at: Int64(i) * 1_000), writes: []))
        }
        #expect(try await store.pruneOutcomes(recordedBefore: 2_500) == 3)
        for i in 0..<5 {
            let kept = try await store.outcome(of: BatchKey(clientID: "c", batchID: i)) != nil
            #expect(kept == (i >= 3), "batch \(i)")
        }
        #expect(try await store.pruneOutcomes(recordedBefore: 2_500) == 0)
    }

    @Test func changeLogPruningMovesTheFloor() async throws {
        let server = TestServer()
        let store = try server.tenantStore("acme")
        let start = try await store.state().lastVersion.microseconds
        for i in 1...4 {
            let v = start + Int64(i) * 10
            _ = try await store.commit(CommitRequest(outcome: outcome("c", i, version: v),
                                                     writes: [DocumentWrite(key: T.key("a/\(i)"), document: doc("a/\(i)", [:], version: v))]))
        }
        #expect(try await store.pruneChangeLog(before: SnapshotVersion(microseconds: start + 25)) == 2)
        #expect(try await store.state().changeLogFloor.microseconds == start + 24)
        guard case .unavailable = try await store.changes(after: SnapshotVersion(microseconds: start + 10), maxEntries: 100) else {
            Issue.record("a version below the floor must not resume")
            return
        }
        guard case .complete(let entries, _) = try await store.changes(after: SnapshotVersion(microseconds: start + 25), maxEntries: 100) else {
            Issue.record("a version above the floor resumes")
            return
        }
        #expect(entries.map(\.key.description) == ["a/3", "a/4"])
        guard case .unavailable = try await store.changes(after: SnapshotVersion(microseconds: start + 25), maxEntries: 1) else {
            Issue.record("more entries than allowed must not resume")
            return
        }
        guard case .unavailable = try await store.changes(after: SnapshotVersion(microseconds: start + 1_000), maxEntries: 100) else {
            Issue.record("a version from the future must not resume")
            return
        }
    }

    @Test func stateSurvivesReopening() async throws {
        let directory = TempDirectory()
        defer { directory.remove() }
        let clock = ManualClock()
        var store = try LevelDBServerStore.open(directory: directory.path, options: .init(syncWrites: true, clock: clock.serverClock))
        let tenant = try store.tenantStore(TenantID("acme"))
        let before = try await tenant.state()
        _ = try await tenant.commit(CommitRequest(outcome: outcome("c", 1, version: before.lastVersion.microseconds + 1),
                                                  writes: [DocumentWrite(key: T.key("a/1"), document: doc("a/1", ["x": 1], version: before.lastVersion.microseconds + 1))]))
        await store.close()
        await #expect(throws: DocError.self) { try await tenant.documents([T.key("a/1")]) }
        store = try LevelDBServerStore.open(directory: directory.path, options: .init(syncWrites: true, clock: clock.serverClock))
        let reopened = try store.tenantStore(TenantID("acme"))
        let after = try await reopened.state()
        #expect(after.incarnation == before.incarnation)
        #expect(after.lastVersion.microseconds == before.lastVersion.microseconds + 1)
        #expect(try await reopened.documents([T.key("a/1")]).documents.count == 1)
        #expect(try await reopened.outcome(of: BatchKey(clientID: "c", batchID: 1)) != nil)
        await store.close()
    }

    @Test func recordsRoundTrip() throws {
        let committed = BatchOutcome(batch: BatchKey(clientID: "ç", batchID: 9), uid: "u", digest: .max, recordedAt: -5,
                                     result: .committed(version: SnapshotVersion(microseconds: 3),
                                                        results: [MutationResult(version: SnapshotVersion(microseconds: 3), transformResults: [.double(2.0), .null])]))
        let back = try BatchOutcome(record: committed.record)
        #expect(back == committed)
        if case .committed(_, let results) = back.result {
            #expect(results[0].transformResults[0].isIdentical(to: .double(2.0)))
        }
        let rejected = BatchOutcome(batch: BatchKey(clientID: "c", batchID: 1), uid: "u", digest: 1, recordedAt: 1,
                                    result: .rejected(DocError(.alreadyExists, "exists", at: "a/b")))
        #expect(try BatchOutcome(record: rejected.record) == rejected)
        #expect(throws: DocError.self) { try BatchOutcome(record: [1, 2, 3]) }
        let state = TenantState(lastVersion: SnapshotVersion(microseconds: 5), incarnation: .max, changeLogFloor: SnapshotVersion(microseconds: 2))
        #expect(try TenantState(record: state.record) == state)
    }

    @Test func tokensRoundTrip() {
        let token = WatchToken(incarnation: 0xDEAD_BEEF_0102_0304, version: SnapshotVersion(microseconds: 1_714_557_600_000_000))
        #expect(token.bytes.count == 17)
        #expect(WatchToken(bytes: token.bytes) == token)
        #expect(WatchToken(bytes: Array(token.bytes.dropLast())) == nil)
        #expect(WatchToken(bytes: [2] + token.bytes.dropFirst()) == nil)
        #expect(WatchToken(bytes: []) == nil)
    }

    @Test func tenantNames() {
        #expect(throws: DocError.self) { try TenantID("") }
        #expect(throws: DocError.self) { try TenantID("a/b") }
        #expect(throws: DocError.self) { try TenantID("a\u{0}") }
        #expect(throws: DocError.self) { try TenantID(String(repeating: "x", count: 129)) }
        #expect(throws: Never.self) { try TenantID("acme-prod_1") }
    }
}

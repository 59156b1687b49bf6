import DocModel
import DocProtocol
import LevelDB
import Testing
@testable import DocServer

/// The embedded store's own layout: key prefixes, records, tokens, names. The store contract
/// (commits, duplicates, queries, pruning, reopening) runs against every store in
/// Tests/ServerStoreContractTests.
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
        // A version the next commit could not count on from is a damaged record.
        for bad: Int64 in [-5, .max] {
            let damaged = TenantState(lastVersion: SnapshotVersion(microseconds: bad), incarnation: 1, changeLogFloor: SnapshotVersion(microseconds: 0))
            let error = #expect(throws: DocError.self) { try TenantState(record: damaged.record) }
            #expect(error?.code == .dataLoss)
        }
    }

    @Test func tokensRoundTrip() {
        let token = WatchToken(incarnation: 0xDEAD_BEEF_0102_0304, version: SnapshotVersion(microseconds: 1_714_557_600_000_000))
        #expect(token.bytes.count == 17)
        #expect(WatchToken(bytes: token.bytes) == token)
        #expect(WatchToken(bytes: Array(token.bytes.dropLast())) == nil)
        #expect(WatchToken(bytes: [2] + token.bytes.dropFirst()) == nil)
        #expect(WatchToken(bytes: []) == nil)
        // A negative version (never issued) encodes without trapping, to bytes no one reads back.
        let negative = WatchToken(incarnation: 1, version: SnapshotVersion(microseconds: -1))
        #expect(negative.bytes.count == 17)
        #expect(WatchToken(bytes: negative.bytes) == nil)
    }

    @Test func tenantNames() {
        #expect(throws: DocError.self) { try TenantID("") }
        #expect(throws: DocError.self) { try TenantID("a/b") }
        #expect(throws: DocError.self) { try TenantID("a\u{0}") }
        #expect(throws: DocError.self) { try TenantID(String(repeating: "x", count: 129)) }
        #expect(throws: Never.self) { try TenantID("acme-prod_1") }
    }
}

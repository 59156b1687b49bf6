import DocModel
import DocProtocol
import Testing
@testable import DocServer

@Suite("Batch digests")
struct BatchDigestTests {
    static let batch: [Mutation] = [
        T.set("items/a", ["n": 1, "x": 1.5, "s": "é", "t": .timestamp(try! Timestamp(seconds: 7, nanos: 9)),
                          "m": ["k": [1, "two", .null, true]], "b": .bytes([0, 255]), "r": .reference(T.key("a/b"))]),
        .update(T.key("items/b"), fields: [T.field("p.q"): .geoPoint(try! GeoPoint(latitude: 1, longitude: -2))],
                transforms: [.increment(T.field("c"), by: 2), .serverTimestamp(T.field("at"))]),
        .delete(T.key("items/c"), precondition: .updateTime(SnapshotVersion(microseconds: 42))),
        .tombstone(T.key("items/d")),
        .verify(T.key("items/e"), .exists(true)),
    ]

    /// Digests are stored with every outcome: a change in how they are computed would make
    /// every batch re-sent after an upgrade look like another batch. These values were
    /// printed by the code that introduced each digest; they must never change.
    @Test func theDigestsAreStable() {
        #expect(BatchDigest.of(Self.batch) == 0x4CCE_D8D7_4689_BF8A)
        #expect(BatchDigest.jsonDigest(of: Self.batch) == 0xD036_0E82_CA55_D7EA)
    }

    @Test func theOrderOfAMapsMembersDoesNotMatter() {
        let keys = (0..<40).map { "field\($0)" }
        var forward: [String: Value] = [:]
        for (i, k) in keys.enumerated() { forward[k] = .map(["i": .integer(Int64(i)), "s": .string(k)]) }
        var backward = [String: Value](minimumCapacity: 200)
        for (i, k) in keys.enumerated().reversed() { backward[k] = .map(["s": .string(k), "i": .integer(Int64(i))]) }
        #expect(Array(forward.keys) != Array(backward.keys), "the two dictionaries list their keys in the same order")
        #expect(BatchDigest.of([T.set("a/b", forward)]) == BatchDigest.of([T.set("a/b", backward)]))
    }

    @Test func anyDifferenceChangesTheDigest() {
        let base = T.set("a/b", ["n": 1])
        let others: [Mutation] = [
            T.set("a/c", ["n": 1]), T.set("a/b", ["n": 1.0]), T.set("a/b", ["n": 2]), T.set("a/b", ["m": 1]),
            T.set("a/b", ["n": "1"]), T.set("a/b", ["n": [1]]), T.set("a/b", ["n": ["n": 1]]), T.set("a/b", [:]),
            T.set("a/b", ["n": 1, "o": .null]), T.set("a/b", ["n": .bytes([1])]),
            .setMerge(T.key("a/b"), T.data(["n": 1]), fields: [T.field("n")]),
            .update(T.key("a/b"), fields: [T.field("n"): 1]),
            .set(T.key("a/b"), T.data(["n": 1]), transforms: [.serverTimestamp(T.field("t"))]),
            .set(T.key("a/b"), T.data(["n": 1]), precondition: .exists(false)),
            .delete(T.key("a/b")), .tombstone(T.key("a/b")), .verify(T.key("a/b"), .exists(true)),
        ]
        var digests: Set<UInt64> = [BatchDigest.of([base])]
        for other in others {
            #expect(digests.insert(BatchDigest.of([other])).inserted, "\(other) has the digest of an earlier mutation")
        }
        // Values that print alike but are different.
        let pairs: [(Value, Value)] = [
            (0.0, -0.0), (.string("ab"), .array(["a", "b"])), (["a": ["b": 1]], ["a.b": 1]),
            ([1, 2], [2, 1]), (["a": "bc"], ["ab": "c"]), (.string(""), .bytes([])),
            (.timestamp(try! Timestamp(seconds: 1, nanos: 0)), .timestamp(try! Timestamp(seconds: 0, nanos: 1))),
        ]
        for (a, b) in pairs {
            #expect(BatchDigest.of([T.set("a/b", ["v": a])]) != BatchDigest.of([T.set("a/b", ["v": b])]), "\(a) vs \(b)")
        }
        // Batches: the order of the mutations, and where one batch ends.
        let m1 = T.set("a/1", ["n": 1]), m2 = T.set("a/2", ["n": 1])
        #expect(BatchDigest.of([m1, m2]) != BatchDigest.of([m2, m1]))
        #expect(BatchDigest.of([m1]) != BatchDigest.of([m1, m1]))
        // All NaNs are one value.
        let quiet = Double(nan: 1, signaling: false)
        #expect(BatchDigest.of([T.set("a/b", ["v": .double(.nan)])]) == BatchDigest.of([T.set("a/b", ["v": .double(quiet)])]))
    }

    /// An outcome stored with the JSON digest of earlier versions still answers the same
    /// batch re-sent, and still refuses other mutations under its ids.
    @Test func outcomesStoredWithTheJSONDigestStillMatch() async throws {
        let server = TestServer()
        let c = try await server.connect()
        let mine = [T.set("k/1", ["n": 1])]
        let planted = DocError(.notFound, "the answer stored by an earlier version")
        let outcome = BatchOutcome(batch: BatchKey(clientID: c.clientID, batchID: 1), uid: "u1",
                                   digest: BatchDigest.jsonDigest(of: mine), recordedAt: server.clock.micros,
                                   result: .rejected(planted))
        #expect(outcome.digest != BatchDigest.of(mine))
        _ = try await server.tenantStore("acme").commit(CommitRequest(outcome: outcome, writes: []))

        let again = try #require(await server.write(c, batch: 1, mine).writeError)
        #expect(again.error == planted)
        let other = try #require(await server.write(c, batch: 1, [T.set("k/1", ["n": 2])]).writeError)
        #expect(other.error.code == .failedPrecondition)
        #expect(other.error.message.contains("other mutations"))
        #expect(try await server.tenantStore("acme").documents([T.key("k/1")]).documents.isEmpty)
    }
}

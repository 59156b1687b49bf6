import DocModel
import Testing
@testable import DocCache
import DocTestTraits

@Suite(.cpuBound) struct FailedWriteStoreTests {
    /// A record reads back as written: mutations of every kind, the error with its location,
    /// server documents found, missing and unknown.
    @Test func recordsRoundTrip() throws {
        let a = try DocumentKey("notes/a"), b = try DocumentKey("notes/b"), c = try DocumentKey("notes/c")
        var update = Mutation.update(b, fields: [try FieldPath("n"): .integer(2)])
        update.precondition = .updateTime(SnapshotVersion(microseconds: 7))
        let batch = MutationBatch(batchID: 42, localWriteTime: Timestamp(microseconds: 1_700_000_000_000_001), mutations: [
            .set(a, ObjectValue(["text": .string("hi"), "m": .map(["x": .integer(1)])]), transforms: []),
            update,
            .tombstone(c),
            .delete(a),
        ])
        let record = FailedWriteRecord(
            batch: batch, rejectedAt: Timestamp(microseconds: 1_700_000_000_000_500),
            error: DocError(.failedPrecondition, "changed", at: "write 1: notes/b"), attempts: 3,
            serverDocuments: [(a, .document(Document(key: a, data: ObjectValue(["text": .string("old")]), version: SnapshotVersion(microseconds: 9)))),
                              (b, .noDocument(NoDocument(key: b, version: SnapshotVersion(microseconds: 5)))),
                              (c, nil)])
        let decoded = try FailedWriteRecord(decoding: record.encoded())
        #expect(decoded == record)
        #expect(decoded.batch.mutations == batch.mutations)
        #expect(decoded.error.location == "write 1: notes/b")
        #expect(decoded.serverDocuments.map(\.key) == [a, b, c])
        #expect(decoded.serverDocuments[2].document == nil)
        #expect(throws: DocError.self) { try FailedWriteRecord(decoding: Array(record.encoded().dropLast())) }
    }

    /// A resolution is conditioned on the server's version shown; without one (the document
    /// was never seen on the server) it is refused, and `.merged` takes one document only.
    @Test func resolutionsNeedTheServersVersion() throws {
        let a = try DocumentKey("notes/a"), b = try DocumentKey("notes/b")
        let batch = MutationBatch(batchID: 7, localWriteTime: Timestamp(microseconds: 1), mutations: [
            .set(a, ObjectValue(["x": .integer(1)]), transforms: []), .set(b, ObjectValue(["y": .integer(2)]), transforms: []),
        ])
        let v9 = SnapshotVersion(microseconds: 9)
        func failed(_ server: MaybeDocument?) -> FailedWrite {
            FailedWrite(FailedWriteRecord(batch: batch, rejectedAt: Timestamp(microseconds: 2), error: DocError(.aborted, "raced"),
                                          attempts: 1, serverDocuments: [(a, server), (b, .noDocument(NoDocument(key: b, version: v9)))]))
        }
        let unknown = failed(nil)
        #expect(unknown.conflicts.first?.serverVersionKnown == false)
        let refused = #expect(throws: DocError.self) { try unknown.mutations(resolving: .mine) }
        #expect(refused?.code == .failedPrecondition)
        #expect(refused?.message.contains("not known") == true)
        #expect(try unknown.mutations(resolving: .theirs) == nil, "keeping theirs needs no server version")

        let known = failed(.document(Document(key: a, data: ObjectValue(["x": .integer(0)]), version: v9)))
        let mine = try #require(try known.mutations(resolving: .mine))
        #expect(mine.map(\.precondition) == [.updateTime(v9), .exists(false)])
        #expect(try known.mutations(resolving: .theirs) == nil)
        let merged = #expect(throws: DocError.self) { try known.mutations(resolving: .merged(["x": 3])) }
        #expect(merged?.code == .invalidArgument, "a merged resolution replaces one document")
        #expect(known.conflicts.first?.changedFields.map(\.field) == ["x"])
        let nested = FailedWrite.changes(["m": .map(["a": .integer(1), "b": .map(["c": .null])]), "e": .map([:])], [:], prefix: [])
        #expect(nested.map(\.field) == ["e", "m.a", "m.b.c"], "a map on one side only is compared leaf by leaf")
    }
}

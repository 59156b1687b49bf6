import DocModel
import Testing
@testable import DocCache

@Suite struct FailedWriteStoreTests {
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
}

import DocTestSupport
import Testing
import DocModel
@testable import DocCache

@Suite("Write batch limits, checked when each write is added")
struct WriteBatchLimitTests {
    @Test("the 501st write is refused when it is added; the 500 before it commit")
    func fiveHundredAndOne() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        var batch = store.batch()
        for i in 0..<DocumentLimits.maxWritesPerBatch {
            if i % 2 == 0 {
                try batch.setData(["i": .value(.integer(Int64(i)))], for: try store.document("rooms/r\(i)"))
            } else {
                try batch.delete(try store.document("rooms/r\(i)"))
            }
        }
        let extra = try store.document("rooms/extra")
        do {
            try batch.setData(["x": 1], for: extra)
            Issue.record("the 501st write (a set) was accepted")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message == "a write batch may have at most 500 writes, this one has 501: split it into several batches")
        }
        do {
            try batch.purge(extra)
            Issue.record("the 501st write (a purge) was accepted")
        } catch {
            #expect(error.message.contains("at most 500 writes"))
        }
        #expect(batch.count == 500)
        try await batch.commit()
        #expect(await store.pendingWriteCount == 1)
        #expect(try await store.document("rooms/r498").getDocument(source: .cache).data()?["i"] == .integer(498))
        await store.close()
    }

    @Test("a write over the document limits is refused when it is added and leaves the batch as it was")
    func overLimitData() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        var batch = store.batch()
        try batch.setData(["ok": true], for: try store.document("rooms/a"))
        let big = String(repeating: "x", count: DocumentLimits.maxDocumentBytes)
        #expect(throws: DocError.self) { try batch.setData(["blob": .value(.string(big))], for: try store.document("rooms/b")) }
        var deep: Value = .integer(1)
        for _ in 0...DocumentLimits.maxDepth { deep = .map(["d": deep]) }
        #expect(throws: DocError.self) { try batch.updateData(["deep": .value(deep)], for: try store.document("rooms/a")) }
        #expect(batch.count == 1)
        try await batch.commit()
        #expect(await store.pendingWriteCount == 1)
        await store.close()
    }

    @Test("the local store itself refuses a batch of more than 500 writes (for callers that bypass WriteBatch)")
    func localStoreRefuses() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        var mutations: [Mutation] = []
        for i in 0...DocumentLimits.maxWritesPerBatch { mutations.append(.tombstone(try DocumentKey("rooms/r\(i)"))) }
        await #expect(throws: DocError.self) { try await store.write(mutations) }
        #expect(await store.pendingWriteCount == 0)
        await store.close()
    }
}

import DocTestSupport
import Synchronization
import Testing
import DocModel
@testable import DocCache

@Suite("Query builders shared by collections and queries: cursors from documents, snapshots in sync")
struct QueryBuilderTests {
    @Test("pages with start(afterDocument:) from a collection and from a query give the same, complete, ordered pages")
    func pagingWithDocumentCursors() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let rooms = try store.collection("rooms")
        // Equal sort values, so the key in the cursor decides the position.
        for i in 0..<25 { try await rooms.document("r\(100 + i)").setData(["floor": .value(.integer(Int64(i / 5)))]) }

        for base in [try rooms.order(by: "floor"), try rooms.baseQuery.order(by: "floor")] as [DocumentQuery] {
            var seen: [String] = []
            var page = try await base.limit(to: 7).getDocuments(source: .cache)
            while let last = page.documents.last {
                seen += page.documents.map(\.documentID)
                page = try await base.start(afterDocument: last).limit(to: 7).getDocuments(source: .cache)
            }
            #expect(seen == (0..<25).map { "r\(100 + $0)" })
        }
        // The collection's own builders: start(atDocument:) includes the document, end(beforeDocument:) excludes it.
        let r107 = try await rooms.document("r107").getDocument(source: .cache)
        let r112 = try await rooms.document("r112").getDocument(source: .cache)
        let between = try await rooms.order(by: "floor").start(atDocument: r107).end(beforeDocument: r112).getDocuments(source: .cache)
        #expect(between.documents.map(\.documentID) == ["r107", "r108", "r109", "r110", "r111"])
        let through = try await rooms.order(by: "floor").start(afterDocument: r107).end(atDocument: r112).getDocuments(source: .cache)
        #expect(through.documents.map(\.documentID) == ["r108", "r109", "r110", "r111", "r112"])

        let missing = try await rooms.document("nope").getDocument(source: .cache)
        #expect(throws: DocError.self) { try rooms.start(atDocument: missing) }
        await store.close()
    }

    @Test("a collection listens like a query (the shared builder), and its sequence throws DocError")
    func collectionListens() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let rooms = try store.collection("rooms")
        var iterator = try rooms.limit(to: 10).snapshots().makeAsyncIterator()
        #expect(try await iterator.next()?.documents.isEmpty == true)
        try await rooms.document("a").setData(["n": 1])
        #expect(try await iterator.next()?.documents.map(\.documentID) == ["a"])
        var unbounded = rooms.snapshots().makeAsyncIterator()
        do {
            _ = try await unbounded.next()
            Issue.record("an unbounded collection listener was accepted")
        } catch {
            #expect(error.code == .invalidArgument)
        }
        await store.close()
    }

    @Test("snapshots in sync: called at once, then after every listener has had the snapshot of a change")
    func snapshotsInSync() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let events = Mutex<[String]>([])
        let rooms = try store.collection("rooms")
        let a = try await rooms.limit(to: 10).addSnapshotListener { result in
            if case .success(let s) = result { events.withLock { $0.append("rooms:\(s.count)") } }
        }
        let b = try await rooms.document("r1").addSnapshotListener { result in
            if case .success(let s) = result { events.withLock { $0.append("r1:\(s.exists)") } }
        }
        let sync = try await store.addSnapshotsInSyncListener { events.withLock { $0.append("sync") } }
        await store.callbacksDelivered()
        #expect(events.withLock { $0.last } == "sync", "called once right away")
        events.withLock { $0.removeAll() }

        try await rooms.document("r1").setData(["n": 1])
        await store.callbacksDelivered()
        let afterWrite = events.withLock { $0 }
        #expect(Set(afterWrite.prefix(2)) == ["rooms:1", "r1:true"], "\(afterWrite)")
        #expect(afterWrite.last == "sync", "\(afterWrite)")

        sync.remove()
        events.withLock { $0.removeAll() }
        try await rooms.document("r1").setData(["n": 2])
        await store.callbacksDelivered()
        #expect(!events.withLock { $0 }.contains("sync"), "a removed in-sync listener is not called")
        a.remove()
        b.remove()

        var inSync = store.snapshotsInSync().makeAsyncIterator()
        #expect(await inSync.next() != nil, "the sequence starts with one element")
        await store.close()
        #expect(await inSync.next() == nil, "the sequence ends when the store closes")
        var onClosed = store.snapshotsInSync().makeAsyncIterator()
        #expect(await onClosed.next() == nil, "a sequence on a closed store ends at once")
    }
}

import DocTestSupport
import Testing
import DocModel
@testable import DocCache

@Suite("Bundles: loading into a store")
struct BundleLoadTests {
    static func v(_ micros: Int64) -> SnapshotVersion { SnapshotVersion(microseconds: micros) }

    static func document(_ path: String, _ data: [String: Value], version: Int64) throws -> Document {
        Document(key: try DocumentKey(path), data: ObjectValue(data), version: v(version))
    }

    /// A bundle `id` built at `createTime` with `documents` (all in the named query `rooms`
    /// when `named`) and `deleted` keys.
    static func bundle(_ id: String, createTime: Int64, documents: [Document], deleted: [String] = [],
                       named: Bool = true) throws -> [UInt8] {
        var writer = BundleWriter(id: id, createTime: v(createTime))
        if named {
            try writer.add(BundleNamedQuery(name: "rooms", query: try Query(collection: "rooms").order(by: "floor"),
                                            readTime: v(createTime)))
        }
        for document in documents { writer.add(document, readTime: v(createTime), queries: named ? ["rooms"] : []) }
        for path in deleted { writer.addDeleted(try DocumentKey(path), readTime: v(createTime), queries: named ? ["rooms"] : []) }
        return writer.bytes()
    }

    /// Every progress update of `task`, and its outcome.
    static func run(_ task: LoadBundleTask) async -> ([LoadBundleTaskProgress], Result<LoadBundleTaskProgress, DocError>) {
        var updates: [LoadBundleTaskProgress] = []
        for await progress in task.progressUpdates() { updates.append(progress) }
        do {
            return (updates, .success(try await task.value))
        } catch {
            return (updates, .failure(error))
        }
    }

    @Test func aBundleFillsTheCacheAndListenersSeeIt() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let listened = Recorder<QuerySnapshot>()
        let registration = try await store.collection("rooms").order(by: "floor").limit(to: 10)
            .addSnapshotListener { listened.record($0) }
        #expect(await eventually { listened.last?.isEmpty == true })

        let documents = try (1...250).map { i in
            try Self.document("rooms/r\(String(format: "%03d", i))", ["floor": .integer(Int64(i))], version: 100 + Int64(i))
        }
        let bytes = try Self.bundle("rooms-v1", createTime: 1_000, documents: documents, deleted: ["rooms/gone"])
        let (updates, outcome) = await Self.run(store.loadBundle(bytes))
        let final = try outcome.get()
        #expect(final == LoadBundleTaskProgress(documentsLoaded: 251, totalDocuments: 251, bytesLoaded: final.totalBytes,
                                                totalBytes: final.totalBytes, taskState: .success))
        // Monotonic, a first `running` with nothing loaded, a bounded number of updates, success last.
        #expect(updates.first == LoadBundleTaskProgress(documentsLoaded: 0, totalDocuments: 251, bytesLoaded: 0,
                                                        totalBytes: final.totalBytes, taskState: .running))
        #expect(updates.last == final)
        #expect(updates.dropLast().allSatisfy { $0.taskState == .running })
        #expect(zip(updates, updates.dropFirst()).allSatisfy { $0.documentsLoaded <= $1.documentsLoaded && $0.bytesLoaded <= $1.bytesLoaded })
        #expect(updates.count > 3 && updates.count <= 104, "\(updates.count) updates")

        // Listeners see the documents, from the cache.
        #expect(await eventually { listened.last?.count == 10 })
        let snapshot = try #require(listened.last)
        #expect(snapshot.metadata.isFromCache)
        #expect(snapshot.ids.first == "r001")
        let cached = try await store.document("rooms/r250").getDocument(source: .cache)
        #expect(cached.get("floor") == .integer(250))
        #expect(cached.version == Self.v(350))
        #expect(!(try await store.document("rooms/gone").getDocument(source: .cache)).exists)
        registration.remove()
        await store.close()
    }

    @Test func newerCachedDocumentsAreNotOverwritten() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        // The server's versions, as the cache got them.
        try await store.core.loadRemoteDocuments([
            try Self.document("rooms/new", ["v": "server"], version: 300),
            try Self.document("rooms/old", ["v": "server"], version: 100),
            try Self.document("rooms/deletedLater", ["v": "server"], version: 100),
            try Self.document("rooms/deletedEarlier", ["v": "server"], version: 300),
        ], version: Self.v(300))
        let bytes = try Self.bundle("b", createTime: 200, documents: [
            try Self.document("rooms/new", ["v": "bundle"], version: 200),
            try Self.document("rooms/old", ["v": "bundle"], version: 200),
        ], deleted: ["rooms/deletedLater", "rooms/deletedEarlier"])
        _ = try await store.loadBundle(bytes).value

        #expect(try await store.document("rooms/new").getDocument(source: .cache).get("v") == "server", "newer in the cache: kept")
        #expect(try await store.document("rooms/old").getDocument(source: .cache).get("v") == "bundle", "older in the cache: replaced")
        #expect(!(try await store.document("rooms/deletedLater").getDocument(source: .cache)).exists,
                "deleted at the bundle's read time, after the cached version")
        #expect(try await store.document("rooms/deletedEarlier").getDocument(source: .cache).get("v") == "server",
                "a deletion older than the cached version changes nothing")
        await store.close()
    }

    @Test func theSameBundleIsLoadedOnce() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let first = try Self.bundle("daily", createTime: 100, documents: [try Self.document("rooms/r1", ["n": 1], version: 100)])
        _ = try await store.loadBundle(first).value

        // Same id, same create time: skipped even though its document is newer; still a success.
        let again = try Self.bundle("daily", createTime: 100, documents: [try Self.document("rooms/r1", ["n": 2], version: 150)])
        let (updates, outcome) = await Self.run(store.loadBundle(again))
        let skipped = try outcome.get()
        #expect(skipped.taskState == .success && skipped.documentsLoaded == 1 && skipped.totalDocuments == 1)
        #expect(updates == [skipped], "a skipped bundle reports its end at once")
        #expect(try await store.document("rooms/r1").getDocument(source: .cache).get("n") == 1)

        // An older build of the same bundle: skipped too.
        let older = try Self.bundle("daily", createTime: 50, documents: [try Self.document("rooms/r1", ["n": 3], version: 160)])
        _ = try await store.loadBundle(older).value
        #expect(try await store.document("rooms/r1").getDocument(source: .cache).get("n") == 1)

        // A newer build: loaded. So is another bundle id.
        let newer = try Self.bundle("daily", createTime: 200, documents: [try Self.document("rooms/r1", ["n": 4], version: 170)])
        _ = try await store.loadBundle(newer).value
        #expect(try await store.document("rooms/r1").getDocument(source: .cache).get("n") == 4)

        // Across a reopen.
        await store.close()
        let reopened = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let stale = try Self.bundle("daily", createTime: 200, documents: [try Self.document("rooms/r1", ["n": 5], version: 180)])
        _ = try await reopened.loadBundle(stale).value
        #expect(try await reopened.document("rooms/r1").getDocument(source: .cache).get("n") == 4)
        await reopened.close()
    }

    @Test func aNamedQueryListsTheBundledDocuments() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        #expect(try await store.namedQuery("rooms") == nil)
        let bytes = try Self.bundle("b", createTime: 500, documents: [
            try Self.document("rooms/b", ["floor": 2], version: 400),
            try Self.document("rooms/a", ["floor": 1], version: 450),
        ])
        _ = try await store.loadBundle(bytes).value
        let named = try #require(try await store.namedQueryDetails("rooms"))
        #expect(named.name == "rooms")
        #expect(named.readTime == Self.v(500).timestamp)
        let snapshot = try await named.query.getDocuments(source: .cache)
        #expect(snapshot.ids == ["a", "b"])
        #expect(snapshot.metadata.isFromCache)

        // Kept across a reopen; listening to it works like any query.
        await store.close()
        let reopened = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let query = try #require(try await reopened.namedQuery("rooms"))
        let listened = Recorder<QuerySnapshot>()
        let registration = try await query.limit(to: 5).addSnapshotListener { listened.record($0) }
        #expect(await eventually { listened.last?.ids == ["a", "b"] })
        registration.remove()
        await reopened.close()
    }

    @Test func aBadBundleAppliesNothing() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let good = try Self.bundle("b", createTime: 500, documents: [
            try Self.document("rooms/a", ["floor": 1], version: 400),
            try Self.document("rooms/b", ["floor": 2], version: 400),
        ])
        // Cut inside the last element: the first document was read fine, but nothing is applied.
        let cut = Array(good.dropLast(10))
        let (updates, outcome) = await Self.run(store.loadBundle(cut))
        guard case .failure(let error) = outcome else {
            Issue.record("a truncated bundle was accepted")
            return
        }
        #expect(error.code == .invalidArgument)
        #expect(error.location?.hasPrefix("bundle element 6 at byte offset ") == true, "\(error)")
        #expect(error.message.contains("truncated"), "\(error)")
        #expect(updates.last?.taskState == .error)
        #expect(updates.last?.documentsLoaded == 1)
        #expect(!(try await store.document("rooms/a").getDocument(source: .cache)).exists)
        #expect(try await store.namedQuery("rooms") == nil)

        // The bundle was not recorded as loaded: the whole one loads afterwards.
        _ = try await store.loadBundle(good).value
        #expect(try await store.document("rooms/a").getDocument(source: .cache).exists)
        await store.close()
    }

    @Test func pendingWritesStayOnTop() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        try await store.document("rooms/a").setData(["floor": 9, "mine": true])
        // A merge touches one field: the bundle's document must show through beneath it (the
        // pending batch is rebased on the bundled document).
        try await store.document("rooms/b").setData(["mine": true], merge: true)
        _ = try await store.loadBundle(try Self.bundle("b", createTime: 500, documents: [
            try Self.document("rooms/a", ["floor": 1], version: 400),
            try Self.document("rooms/b", ["floor": 2], version: 400),
        ])).value
        let local = try await store.document("rooms/a").getDocument(source: .cache)
        #expect(local.get("floor") == 9)
        #expect(local.metadata.hasPendingWrites)
        let merged = try await store.document("rooms/b").getDocument(source: .cache)
        #expect(merged.get("floor") == 2)
        #expect(merged.get("mine") == true)
        #expect(merged.metadata.hasPendingWrites)
        #expect(await store.pendingWriteCount == 2)
        await store.close()
    }

    @Test func aClosedStoreFailsTheTask() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        await store.close()
        let bytes = try Self.bundle("b", createTime: 500, documents: [])
        await #expect(throws: DocError.self) { _ = try await store.loadBundle(bytes).value }
    }
}

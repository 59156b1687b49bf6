import DocTestSupport
import Testing
import DocModel
@testable import DocCache

@Suite("Store directories, isolation and garbage collection")
struct StoreIsolationTests {
    @Test func tenantsAndUsersNeverSeeEachOthersData() async throws {
        let dir = TemporaryDirectory()
        let acme = try await DocumentStore.open(directory: dir.path, tenant: "acme", user: "u1")
        let globex = try await DocumentStore.open(directory: dir.path, tenant: "globex", user: "u1")
        let acme2 = try await DocumentStore.open(directory: dir.path, tenant: "acme", user: "u2")
        try await acme.document("rooms/r1").setData(["owner": "acme"])
        #expect(try await acme.document("rooms/r1").getDocument(source: .cache).exists)
        #expect(try await globex.document("rooms/r1").getDocument(source: .cache).exists == false)
        #expect(try await acme2.document("rooms/r1").getDocument(source: .cache).exists == false)
        #expect(await globex.pendingWriteCount == 0)
        // Names that would collide as plain folder names stay distinct.
        let slash = try await DocumentStore.open(directory: dir.path, tenant: "a/b", user: "u")
        let dots = try await DocumentStore.open(directory: dir.path, tenant: "..", user: "u")
        try await slash.document("x/y").setData(["t": "slash"])
        #expect(try await dots.document("x/y").getDocument(source: .cache).exists == false)
        for store in [acme, globex, acme2, slash, dots] { await store.close() }
    }

    @Test func aStoreCannotBeOpenedTwiceOrClearedWhileOpen() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        try await store.document("rooms/r1").setData(["n": 1])
        do {
            _ = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
            Issue.record("a second open succeeded")
        } catch {
            #expect(error.message.contains("already open"))
        }
        #expect(throws: DocError.self) { try DocumentStore.clearPersistence(directory: dir.path, tenant: "t", user: "u") }
        await store.close()
        try DocumentStore.clearPersistence(directory: dir.path, tenant: "t", user: "u")
        let reopened = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        #expect(await reopened.pendingWriteCount == 0)
        #expect(try await reopened.document("rooms/r1").getDocument(source: .cache).exists == false)
        await reopened.close()
    }

    @Test func garbageCollectionKeepsPendingAndActiveDocuments() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u",
                                                 settings: StoreSettings(cacheSizeBytes: StoreSettings.minimumCacheSizeBytes))
        // About 6 MiB of server documents, well over the 1 MiB limit. The filler is random
        // (LevelDB compresses with Snappy: a repeated character would take almost no space).
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        func filler() -> String { String((0..<2_000).map { _ in alphabet.randomElement(using: &generator)! }) }
        var version: Int64 = 1_000
        for chunk in stride(from: 0, to: 3_000, by: 500) {
            let docs = (chunk..<chunk + 500).map { i in
                Document(key: try! DocumentKey("items/i\(i)"), data: ObjectValue(["i": .integer(Int64(i)), "pad": .string(filler())]),
                         version: SnapshotVersion(microseconds: version))
            }
            try await store.core.loadRemoteDocuments(docs, version: SnapshotVersion(microseconds: version))
            version += 1
        }
        try await store.document("items/i7").updateData(["edited": true])          // pending write
        let watched = Recorder<DocumentSnapshot>()
        let registration = try await store.document("items/i11").addSnapshotListener { watched.record($0) }  // active

        let (_, documents) = try await store.collectGarbage()
        #expect(documents > 0, "orphaned documents were collected")
        #expect(try await store.document("items/i7").getDocument(source: .cache).get("edited") == true)
        #expect(try await store.document("items/i7").getDocument(source: .cache).get("pad")?.stringValue?.count == 2_000,
                "the pending write's base document was kept")
        #expect(try await store.document("items/i11").getDocument(source: .cache).exists, "active listener's document was kept")
        let remaining = try await store.collection("items").getDocuments(source: .cache).count
        #expect(remaining < 3_000)
        registration.remove()
        await store.close()
    }
}

import Testing
import DocModel
@testable import DocCache

@Suite("Offline reads and writes")
struct OfflineCRUDTests {
    @Test func setGetUpdateDeletePurge() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let ref = try store.document("rooms/r1")

        let handle = try await ref.setData(["name": "Lobby", "seats": 4, "meta": ["floor": 1]])
        #expect(handle.batchID >= 1)
        #expect(!handle.isCommitted, "no server: the write stays pending")
        var snap = try await ref.getDocument(source: .cache)
        #expect(snap.exists)
        #expect(snap.metadata.hasPendingWrites)
        #expect(snap.metadata.isFromCache)
        #expect(snap.get("meta.floor") == .integer(1))

        try await ref.updateData(["seats": .increment(2), "meta.wing": "east", "updatedAt": .serverTimestamp()])
        snap = try await ref.getDocument(source: .cache)
        #expect(snap.get("seats") == .integer(6))
        #expect(snap.get("meta.floor") == .integer(1) && snap.get("meta.wing") == "east")
        #expect(snap.get("updatedAt") == .null, "pending server timestamp reads as null by default")
        #expect(snap.get("updatedAt", serverTimestamps: .estimate)?.timestampValue != nil)

        try await ref.setData(["name": "Hall"], merge: true)
        snap = try await ref.getDocument(source: .cache)
        #expect(snap.get("name") == "Hall" && snap.get("seats") == .integer(6))

        try await ref.delete()
        snap = try await ref.getDocument(source: .cache)
        #expect(!snap.exists, "a tombstone does not exist for the app")
        #expect(snap.isDeleted)
        #expect(snap.deletedAt != nil, "deletedAt is estimated while the delete is pending")
        #expect(snap.get("name") == "Hall", "a tombstone keeps its fields")

        try await ref.purge()
        snap = try await ref.getDocument(source: .cache)
        #expect(!snap.exists && !snap.isDeleted && snap.data() == nil)
        #expect(await store.pendingWriteCount == 5)
        await store.close()
    }

    @Test func serverReadsFailOfflineAndDefaultReadsUseTheCache() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let ref = try store.document("rooms/r1")
        try await ref.setData(["name": "Lobby"])
        await #expect(throws: DocError.self) { try await ref.getDocument(source: .server) }
        do {
            _ = try await ref.getDocument(source: .server)
        } catch {
            #expect(error.code == .unavailable)
        }
        let snap = try await ref.getDocument()
        #expect(snap.get("name") == "Lobby")
        let all = try await store.collection("rooms").getDocuments()
        #expect(all.ids == ["r1"])
        await store.close()
    }

    @Test func updateOfAMissingDocumentIsQueuedAndChangesNothingLocally() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let ref = try store.document("rooms/ghost")
        try await ref.updateData(["x": 1])
        let snap = try await ref.getDocument(source: .cache)
        #expect(!snap.exists, "an update never creates a document")
        #expect(await store.pendingWriteCount == 1, "the server decides (and will reject it)")
        await store.close()
    }

    @Test func addDocumentMakesTimeOrderedIDs() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let rooms = try store.collection("rooms")
        var ids: [String] = []
        for i in 0..<50 {
            let (ref, _) = try await rooms.addDocument(data: ["i": .value(.integer(Int64(i)))])
            ids.append(ref.documentID)
        }
        #expect(ids == ids.sorted(), "UUIDv7 ids sort by creation")
        #expect(Set(ids).count == 50)
        #expect(ids.allSatisfy { $0.count == 36 && $0[$0.index($0.startIndex, offsetBy: 14)] == "7" })
        await store.close()
    }

    @Test func badInputIsATypedErrorAndStoresNothing() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        #expect(throws: DocError.self) { try store.document("rooms") }
        #expect(throws: DocError.self) { try store.collection("rooms/r1") }
        #expect(throws: DocError.self) { try store.document("rooms//r1") }
        let ref = try store.document("rooms/r1")
        let big = String(repeating: "x", count: 1_100_000)
        do {
            try await ref.setData(["blob": .value(.string(big))])
            Issue.record("a document over 1 MiB was accepted")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("1 MiB"))
        }
        var deep: FieldValue = 1
        for _ in 0..<25 { deep = .map(["d": deep]) }
        await #expect(throws: DocError.self) { try await ref.setData(["deep": deep]) }
        await #expect(throws: DocError.self) { try await ref.setData(["x": .delete()]) }
        await #expect(throws: DocError.self) { try await ref.updateData(["a..b": 1]) }
        await #expect(throws: DocError.self) { try await ref.updateData([:]) }
        #expect(await store.pendingWriteCount == 0, "nothing was queued")
        #expect(try await ref.getDocument(source: .cache).exists == false)

        await store.close()
        do {
            try await ref.setData(["a": 1])
            Issue.record("a write to a closed store was accepted")
        } catch {
            #expect(error.code == .failedPrecondition)
            #expect(error.message.contains("closed"))
        }
        await #expect(throws: DocError.self) {
            _ = try await store.collection("rooms").limit(to: 5).addSnapshotListener { _ in }
        }
    }

    @Test func settingsAreValidated() async throws {
        let dir = TemporaryDirectory()
        await #expect(throws: DocError.self) {
            _ = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u",
                                             settings: StoreSettings(cacheSizeBytes: 1000))
        }
        await #expect(throws: DocError.self) {
            _ = try await DocumentStore.open(directory: dir.path, tenant: "", user: "u")
        }
        let unlimited = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u",
                                                     settings: StoreSettings(cacheSizeBytes: StoreSettings.unlimited))
        await unlimited.close()
    }
}

import DocTestSupport
import DocModel
import Testing
@testable import DocCache

@Suite("Live sync between two stores through the real server core")
struct LiveSyncTests {
    @Test func twoStoresSeeEachOthersWritesWithMetadataGoingFromPendingToSynced() async throws {
        try await SyncHarness.run { harness in
            let alice = try await harness.openStore(device: "alice-phone", user: "alice")
            let bob = try await harness.openStore(device: "bob-laptop", user: "bob")
            let aliceEvents = Recorder<QuerySnapshot>()
            let bobEvents = Recorder<QuerySnapshot>()
            let aliceRooms = try alice.collection("rooms").order(by: "name").limit(to: 50)
            let bobRooms = try bob.collection("rooms").order(by: "name").limit(to: 50)
            let aliceListener = try await aliceRooms.addSnapshotListener(includeMetadataChanges: true) { aliceEvents.record($0) }
            let bobListener = try await bobRooms.addSnapshotListener(includeMetadataChanges: true) { bobEvents.record($0) }
            defer { aliceListener.remove(); bobListener.remove() }

            // Both listens reach the server: an empty, synced snapshot.
            #expect(await eventually { aliceEvents.last?.metadata.isFromCache == false })
            #expect(await eventually { bobEvents.last?.metadata.isFromCache == false })
            #expect(await alice.onlineState == .online)

            // Alice writes: at once locally with pending writes, then acknowledged.
            let handle = try await alice.collection("rooms").document("lobby").setData(["name": "Lobby", "seats": 12])
            await alice.callbacksDelivered()
            let local = try #require(aliceEvents.last)
            #expect(local.ids == ["lobby"])
            #expect(local.metadata.hasPendingWrites, "the local write shows with hasPendingWrites before the server answers")
            let version = try await handle.committed
            #expect(version > .none)
            #expect(await eventually { aliceEvents.last?.metadata.hasPendingWrites == false })
            #expect(aliceEvents.last?.documents.first?.version == version, "the acknowledged document carries the commit version")

            // Bob sees it live, from the server.
            #expect(await eventually { bobEvents.last?.ids == ["lobby"] })
            let seen = try #require(bobEvents.last)
            #expect(seen.metadata == SnapshotMetadata(hasPendingWrites: false, isFromCache: false))
            #expect(seen.documents.first?.get("seats") == .integer(12))

            // And the other way round, with a server timestamp resolved by the server.
            let reply = try await bob.collection("rooms").document("annex").setData(["name": "Annex", "at": .serverTimestamp()])
            _ = try await reply.committed
            #expect(await eventually { aliceEvents.last?.ids == ["annex", "lobby"] })
            let annex = try #require(aliceEvents.last?.documents.first)
            #expect(annex.get("at")?.timestampValue != nil, "the server's timestamp arrives as a timestamp")
            #expect(annex.metadata.hasPendingWrites == false)

            // A document-level listener on the new document goes from cache to server.
            let docEvents = Recorder<DocumentSnapshot>()
            let docListener = try await alice.document("rooms/annex").addSnapshotListener(includeMetadataChanges: true) {
                docEvents.record($0)
            }
            defer { docListener.remove() }
            #expect(await eventually { docEvents.last?.metadata.isFromCache == false })
            #expect(docEvents.last?.exists == true)
        }
    }

    @Test func getDocumentFromTheServerReadsAFreshServerSnapshotAndFailsOffline() async throws {
        try await SyncHarness.run { harness in
            let writer = try await harness.openStore(device: "writer")
            let reader = try await harness.openStore(device: "reader")
            let committed = try await writer.document("config/rates").setData(["vat": 25]).committed

            // Nothing cached and nothing listened to: the read goes to the server and waits.
            #expect(try await reader.document("config/rates").getDocument(source: .cache).exists == false)
            let fresh = try await reader.document("config/rates").getDocument(source: .server)
            #expect(fresh.exists)
            #expect(fresh.metadata.isFromCache == false)
            #expect(fresh.version == committed)
            #expect(fresh.get("vat") == .integer(25))
            let query = try await reader.collection("config").limit(to: 10).getDocuments(source: .server)
            #expect(query.ids == ["rates"])
            #expect(query.metadata.isFromCache == false)
            let unbounded = await #expect(throws: DocError.self) {
                _ = try await reader.collection("config").getDocuments(source: .server)
            }
            #expect(unbounded?.code == .invalidArgument, "server reads are listens: they need a limit")

            // The server's newer value wins over what the reader had cached.
            _ = try await writer.document("config/rates").updateData(["vat": 24]).committed
            #expect(try await reader.document("config/rates").getDocument(source: .server).get("vat") == .integer(24))

            // Offline: the server cannot be asked.
            try await reader.disableNetwork()
            #expect(await reader.onlineState == .offline)
            let offlineError = await #expect(throws: DocError.self) {
                _ = try await reader.document("config/rates").getDocument(source: .server)
            }
            #expect(offlineError?.code == .unavailable)
            let cached = try await reader.document("config/rates").getDocument()
            #expect(cached.metadata.isFromCache, "the default source falls back to the cache offline")
            #expect(cached.get("vat") == .integer(24))
        }
    }

    @Test func aTargetTheServerRefusesEndsItsListenerWithTheServersError() async throws {
        try await SyncHarness.run { harness in
            // The store allows bigger listens than the server (1,000): the server refuses.
            let store = try await harness.openStore(device: "d", settings: StoreSettings(maxListenLimit: 5_000))
            let refused = Recorder<QuerySnapshot>()
            _ = try await store.collection("logs").limit(to: 2_000).addSnapshotListener { refused.record($0) }
            let fine = Recorder<QuerySnapshot>()
            let listener = try await store.collection("logs").limit(to: 10).addSnapshotListener(includeMetadataChanges: true) {
                fine.record($0)
            }
            defer { listener.remove() }
            #expect(await eventually { !refused.errors.isEmpty })
            #expect(refused.errors.first?.code == .invalidArgument)
            #expect(refused.errors.first?.message.contains("1000") == true, "the server's reason: \(refused.errors.first?.message ?? "")")
            #expect(await eventually { fine.last?.metadata.isFromCache == false }, "other targets keep listening")
            #expect(await store.lastSyncError == nil, "a refused target is not a connection failure")
        }
    }
}

extension QuerySnapshot {
    var ids: [String] { documents.map(\.documentID) }
}

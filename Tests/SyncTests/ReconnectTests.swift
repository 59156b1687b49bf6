import DocTestSupport
import DocModel
import DocServer
import Synchronization
import Testing
@testable import DocCache

@Suite("Reconnects: server restarts and tokens")
struct ReconnectTests {
    @Test func aRestartedServerIsReconnectedWithBackoffAndTheListenResumesFromItsToken() async throws {
        try await SyncHarness.run { harness in
            let writer = try await harness.openStore(device: "writer")
            var last: WriteHandle?
            for i in 0..<40 {
                last = try await writer.document("items/i\(i)").setData(["n": .value(.integer(Int64(i)))])
            }
            _ = try await #require(last).committed

            let listenerTransport = InProcessTransport(host: harness.host)
            let reader = try await harness.openStore(device: "reader", transport: listenerTransport)
            let events = Recorder<QuerySnapshot>()
            let listener = try await reader.collection("items").order(by: "n").limit(to: 100).addSnapshotListener(
                includeMetadataChanges: true) { events.record($0) }
            defer { listener.remove() }
            #expect(await eventually { events.last?.count == 40 && events.last?.metadata.isFromCache == false })
            let fullFetch = listenerTransport.received("documentChange")
            #expect(fullFetch >= 40)
            #expect(listenerTransport.stats.freshListens == 1)

            // The server goes away: every connection gets a fatal `unavailable`.
            await harness.host.stopServer()
            #expect(await eventually { await reader.lastSyncError?.code == .unavailable })
            #expect(await eventually { events.last?.metadata.isFromCache == true }, "listeners fall back to the cache")
            #expect(events.last?.count == 40, "the cached results stay")

            // It comes back on the same data; a document changes meanwhile.
            try harness.host.startServer()
            _ = try await writer.document("items/i7").updateData(["n": 1_000]).committed
            #expect(await eventually { events.last?.documents.last?.documentID == "i7" && events.last?.metadata.isFromCache == false })
            #expect(await reader.onlineState == .online)
            #expect(await reader.lastSyncError == nil)
            #expect(listenerTransport.stats.refused + listenerTransport.stats.connections >= 2, "the reader reconnected")
            #expect(listenerTransport.stats.resumedListens >= 1, "the listen was resumed with its resume token")
            let sinceRestart = listenerTransport.received("documentChange") - fullFetch
            #expect(sinceRestart >= 1, "the changed document arrived")
            #expect(sinceRestart < 40, "a resumed listen gets what changed, not a full refetch (\(sinceRestart) documents)")
        }
    }

    @Test func anUnauthenticatedTokenClosesTheStreamsUntilTheProviderReturnsAValidOne() async throws {
        try await SyncHarness.run { harness in
            // A token signed with another secret: well-formed, but the server refuses it.
            let stranger = try await TokenMinter(secret: (0..<32).map { _ in 7 })
            let forged = try await stranger.mint(tenant: "acme", uid: "mallory")
            let valid = try await harness.host.token(uid: "u1")
            let useValid = Mutex(false)
            let calls = Mutex(0)
            let store = try await harness.openStore(device: "tablet") {
                calls.withLock { $0 += 1 }
                return useValid.withLock { $0 } ? valid : forged
            }
            let states = store.onlineStateUpdates()
            let sawOffline = Task { () -> Bool in
                for await state in states where state == .offline { return true }
                return false
            }

            let events = Recorder<QuerySnapshot>()
            let listener = try await store.collection("notes").limit(to: 10).addSnapshotListener(includeMetadataChanges: true) {
                events.record($0)
            }
            defer { listener.remove() }
            let handle = try await store.document("notes/n1").setData(["text": "written while refused"])

            #expect(await eventually { await store.onlineState == .offline })
            #expect(await sawOffline.value, "onlineStateUpdates() reported offline")
            let error = await store.lastSyncError
            #expect(error?.code == .unauthenticated)
            await store.callbacksDelivered()
            #expect(events.last?.metadata.isFromCache == true)
            #expect(events.last?.documents.first?.metadata.hasPendingWrites == true)
            #expect(await store.pendingWriteCount == 1)
            #expect(harness.transport.stats.writesSent.isEmpty, "nothing is written without a valid token")

            // The provider is asked again on every reconnect; a valid token lets everything through.
            let callsBefore = calls.withLock { $0 }
            useValid.withLock { $0 = true }
            let version = try await handle.committed
            #expect(version > .none)
            #expect(calls.withLock { $0 } > callsBefore, "a fresh token was fetched for the reconnect")
            #expect(await eventually { await store.onlineState == .online })
            #expect(await eventually { events.last?.metadata == SnapshotMetadata(hasPendingWrites: false, isFromCache: false) })
            #expect(await eventually { await store.lastSyncError == nil })
        }
    }

    @Test func disableAndEnableNetworkStopAndResumeSync() async throws {
        try await SyncHarness.run { harness in
            let alice = try await harness.openStore(device: "alice")
            let bob = try await harness.openStore(device: "bob")
            let events = Recorder<QuerySnapshot>()
            let listener = try await bob.collection("tasks").limit(to: 10).addSnapshotListener(includeMetadataChanges: true) {
                events.record($0)
            }
            defer { listener.remove() }
            #expect(await eventually { events.last?.metadata.isFromCache == false })

            try await bob.disableNetwork()
            #expect(await bob.onlineState == .offline)
            #expect(await eventually { events.last?.metadata.isFromCache == true })
            _ = try await alice.document("tasks/t1").setData(["done": false]).committed
            let offlineWrite = try await bob.document("tasks/t2").setData(["done": true])
            await bob.callbacksDelivered()
            #expect(events.last?.ids == ["t2"], "offline, Bob sees only his own write")

            try await bob.enableNetwork()
            _ = try await offlineWrite.committed
            #expect(await eventually {
                events.last?.ids == ["t1", "t2"]
                    && events.last?.metadata == SnapshotMetadata(hasPendingWrites: false, isFromCache: false)
            }, "Bob's write is confirmed by the server and Alice's has arrived")
            #expect(await bob.onlineState == .online)
        }
    }
}

import DocModel
import DocServer
import Foundation
import Testing
@testable import DocCache

@Suite("The real WebSocket transport on loopback")
struct WebSocketTransportTests {
    @Test func storesOpenedWithAServerEndpointSyncOverWebSocket() async throws {
        let host = try await TestServerHost.start()
        let server = try await WebSocketTestServer.start(host: host)
        let directory = NSTemporaryDirectory() + "doccache-ws-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let endpoint = { (uid: String) throws -> ServerEndpoint in
            try ServerEndpoint(url: server.url) { try await host.token(uid: uid) }
        }
        let alice = try await DocumentStore.open(directory: directory + "/a", tenant: "acme", user: "alice", server: endpoint("alice"))
        let bob = try await DocumentStore.open(directory: directory + "/b", tenant: "acme", user: "bob", server: endpoint("bob"))
        let events = Recorder<QuerySnapshot>()
        let listener = try await bob.collection("files").limit(to: 10).addSnapshotListener(includeMetadataChanges: true) {
            events.record($0)
        }
        #expect(await eventually { events.last?.metadata.isFromCache == false })
        #expect(await bob.onlineState == .online)

        // A document near the 1 MiB limit: its frames are far above WebSocket's 16 KiB default.
        let big = String(repeating: "x", count: 900_000)
        let version = try await alice.document("files/f1").setData(["body": .value(.string(big))]).committed
        #expect(version > .none)
        #expect(await eventually { events.last?.ids == ["f1"] && events.last?.metadata.hasPendingWrites == false })
        #expect(events.last?.documents.first?.get("body") == .string(big))
        #expect(try await bob.document("files/f1").getDocument(source: .server).version == version)
        #expect(await alice.lastSyncError == nil)

        // A refused token over WebSocket: the fatal error frame closes the stream.
        let stranger = try await DocumentStore.open(
            directory: directory + "/c", tenant: "acme", user: "carol",
            server: try ServerEndpoint(url: server.url) { "not-a-jwt" })
        _ = try await stranger.collection("files").limit(to: 1).addSnapshotListener { _ in }
        #expect(await eventually { await stranger.lastSyncError?.code == .unauthenticated })
        #expect(await stranger.onlineState == .offline)

        listener.remove()
        await alice.close()
        await bob.close()
        await stranger.close()
        await server.stop()
        await host.remove()
    }
}

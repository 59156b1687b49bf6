import DocTestSupport
import DocModel
import DocProtocol
import Foundation
import Testing
@testable import DocCache

@Suite("Server endpoints and the WebSocket transport")
struct EndpointTests {
    @Test(arguments: [
        ("http://localhost:8080", "ws://localhost:8080/listen"),
        ("https://sync.example.com", "wss://sync.example.com/listen"),
        ("HTTPS://Sync.Example.com:443/", "wss://Sync.Example.com:443/listen"),
        ("http://127.0.0.1:9", "ws://127.0.0.1:9/listen"),
        ("http://[::1]:8080", "ws://[::1]:8080/listen"),
    ])
    func validURLsMapToTheListenEndpoint(url: String, listen: String) throws {
        let endpoint = try ServerEndpoint(url: url) { "token" }
        #expect(endpoint.url == url)
        #expect(endpoint.serverURL.listenURL == listen)
    }

    @Test(arguments: [
        "", "localhost:8080", "ws://localhost:8080", "ftp://host", "http://", "http://:8080",
        "http://host:0", "http://host:65536", "http://host:80x", "http://host/listen", "http://host?x=1",
        "http://user@host", "http://ho st", "http://[::1", "http://[zz]:80",
    ])
    func invalidURLsAreRefusedWithInvalidArgument(url: String) {
        let error = #expect(throws: DocError.self) { _ = try ServerEndpoint(url: url) { "token" } }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("http") == true, "the message says what is expected: \(error?.message ?? "")")
    }

    @Test func aRefusedWebSocketConnectionIsUnavailable() async throws {
        // Port 9 (discard) on loopback: nothing listens there on these machines.
        let transport = try WebSocketTransport(url: "http://127.0.0.1:9")
        let error = await #expect(throws: DocError.self) { _ = try await transport.connect() }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("ws://127.0.0.1:9/listen") == true)
    }

    @Test func aStoreWhoseServerCannotBeReachedWorksOfflineAndSaysWhy() async throws {
        let directory = NSTemporaryDirectory() + "doccache-endpoint-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try ServerEndpoint(url: "http://127.0.0.1:9") { "a-token" }
        let store = try await DocumentStore.open(directory: directory, tenant: "acme", user: "u1", server: server)
        let events = Recorder<QuerySnapshot>()
        let listener = try await store.collection("rooms").limit(to: 5).addSnapshotListener { events.record($0) }
        _ = try await store.document("rooms/r1").setData(["name": "Lobby"])
        #expect(await eventually { await store.onlineState == .offline })
        #expect(await store.lastSyncError?.code == .unavailable)
        await store.callbacksDelivered()
        #expect(events.last?.ids == ["r1"], "the write shows locally")
        #expect(await store.pendingWriteCount == 1)
        listener.remove()
        await store.close()
    }

    @Test func aStoreWithoutAServerRefusesEnableNetwork() async throws {
        let directory = NSTemporaryDirectory() + "doccache-endpoint-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try await DocumentStore.open(directory: directory, tenant: "acme", user: "u1")
        #expect(await store.onlineState == .offline)
        let error = await #expect(throws: DocError.self) { try await store.enableNetwork() }
        #expect(error?.code == .failedPrecondition)
        try await store.disableNetwork()
        #expect(await store.lastSyncError == nil)
        let serverRead = await #expect(throws: DocError.self) { _ = try await store.document("a/b").getDocument(source: .server) }
        #expect(serverRead?.code == .unavailable)
        await store.close()
    }
}

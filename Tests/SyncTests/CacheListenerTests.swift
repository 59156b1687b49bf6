import DocModel
import DocTestSupport
import Testing
@testable import DocCache

/// `source: .cache` listeners never ask the server: no target reaches it, and they still see
/// local writes and what other listeners bring into the cache.
@Suite("Cache-only listeners")
struct CacheListenerTests {
    @Test func aCacheListenerSendsNoTargetAndSeesWhatTheCacheGets() async throws {
        try await SyncHarness.run { harness in
            let writer = try await harness.openStore(device: "writer")
            _ = try await writer.document("rooms/r1").setData(["n": 1]).committed
            let reader = try await harness.openStore(device: "reader")
            let targetsBefore = harness.transport.received("→addTarget")

            var cacheOnly = try reader.collection("rooms").limit(to: 10).snapshots(source: .cache).makeAsyncIterator()
            let first = try #require(try await cacheOnly.next())
            #expect(first.documents.isEmpty, "the reader's cache has nothing yet")
            #expect(first.metadata.isFromCache)
            try await reader.document("rooms/local").setData(["n": 2])
            #expect(try await cacheOnly.next()?.documents.map(\.documentID) == ["local"])
            #expect(harness.transport.received("→addTarget") == targetsBefore, "a cache listener sends no target")

            // A default listener on the same query brings the server's document into the
            // cache: the cache listener sees it too (sharing that query's view, as in Firestore).
            var synced = try reader.collection("rooms").limit(to: 10).snapshots().makeAsyncIterator()
            _ = try await synced.next()
            #expect(await eventually { harness.transport.received("→addTarget") > targetsBefore })
            var seen: QuerySnapshot?
            while let next = try await cacheOnly.next() {
                seen = next
                if next.documents.count == 2 { break }
            }
            #expect(seen?.documents.map(\.documentID).sorted() == ["local", "r1"])
        }
    }
}

import DocModel
import DocTestSupport
import Foundation
import Testing
@testable import DocCache

/// The store indexes the overlays of local writes by itself (``ClientCore``'s overlay-indexing
/// steps), after a burst of writes and after opening a store that holds unindexed ones.
@Suite("Overlay indexing")
struct OverlayIndexingTests {
    @Test func aBurstOfWritesIsIndexedAfterItAndAFewWritesAreNot() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let items = try store.collection("items")
        let few = ClientCore.overlayIndexingAfterWrites - 1
        for i in 0..<few { try await items.document("a\(i)").setData(["n": .value(.integer(Int64(i)))]) }
        try await Task.sleep(for: ClientCore.overlayIndexingDelay * 2)
        #expect(await store.core.overlayIndexingSteps == 0, "fewer writes than the threshold are read directly")
        #expect(try await store.core.unindexedOverlayBatches(upTo: 1_000) == few)

        for i in 0..<40 { try await items.document("b\(i)").setData(["n": .value(.integer(Int64(100 + i)))]) }
        #expect(await eventually { await store.core.overlayIndexingSteps > 0 })
        #expect(await eventually { (try? await store.core.unindexedOverlayBatches(upTo: 1_000)) == 0 })
        // The query sees every one of them (OverlayIndexTests shows which rows it reads).
        let top = try await items.order(by: "n", descending: true).limit(to: 3).getDocuments()
        #expect(top.documents.map(\.documentID) == ["b39", "b38", "b37"])
        await store.close()
    }

    @Test func declaringOtherIndexesIndexesTheOverlaysAgain() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        for i in 0..<5 { try await store.collection("items").document("a\(i)").setData(["n": .value(.integer(Int64(i)))]) }
        try await store.core.indexOverlaysNow()
        #expect(try await store.core.unindexedOverlayBatches(upTo: 100) == 0)
        try await store.setIndexConfiguration([
            try CompositeIndex(collectionGroup: "items", fields: [try .init("n"), try .init("m", .descending)]),
        ])
        #expect(try await store.core.unindexedOverlayBatches(upTo: 100) == 5, "every overlay is unindexed after the change")
        #expect(await eventually { (try? await store.core.unindexedOverlayBatches(upTo: 100)) == 0 })
        await store.close()
    }

    @Test func aStoreOpenedWithUnindexedOverlaysIndexesThem() async throws {
        let dir = TemporaryDirectory()
        do {
            let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
            for i in 0..<5 { try await store.collection("items").document("a\(i)").setData(["n": .value(.integer(Int64(i)))]) }
            await store.close()
        }
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        #expect(try await store.core.unindexedOverlayBatches(upTo: 100) == 5)
        #expect(await eventually { (try? await store.core.unindexedOverlayBatches(upTo: 100)) == 0 })
        #expect(await store.core.overlayIndexingSteps == 1)
        await store.close()
    }
}

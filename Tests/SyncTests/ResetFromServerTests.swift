import DocTestSupport
import DocModel
import Testing
@testable import DocCache

@Suite("resetFromServer")
struct ResetFromServerTests {
    @Test func discardsPendingWritesAndRelistensFromScratch() async throws {
        try await SyncHarness.run { harness in
            let office = try await harness.openStore(device: "office")
            _ = try await office.document("notes/n1").setData(["text": "original"]).committed
            _ = try await office.document("notes/n2").setData(["text": "second"]).committed

            let deviceTransport = InProcessTransport(host: harness.host)
            let device = try await harness.openStore(device: "device", transport: deviceTransport)
            let events = Recorder<QuerySnapshot>()
            let listener = try await device.collection("notes").limit(to: 10).addSnapshotListener(includeMetadataChanges: true) {
                events.record($0)
            }
            defer { listener.remove() }
            #expect(await eventually { events.last?.ids == ["n1", "n2"] && events.last?.metadata.isFromCache == false })

            // Offline edits the user will throw away.
            try await device.disableNetwork()
            let edit = try await device.document("notes/n1").updateData(["text": "local edit"])
            let create = try await device.document("notes/n3").setData(["text": "local only"])
            await device.callbacksDelivered()
            #expect(events.last?.ids == ["n1", "n2", "n3"])
            #expect(await device.pendingWriteCount == 2)

            try await device.resetFromServer()
            let cancelledEdit = await #expect(throws: DocError.self) { _ = try await edit.committed }
            #expect(cancelledEdit?.code == .cancelled)
            let cancelledCreate = await #expect(throws: DocError.self) { _ = try await create.committed }
            #expect(cancelledCreate?.code == .cancelled)
            #expect(await device.pendingWriteCount == 0)
            #expect(try await device.pendingWrites().isEmpty)
            await device.callbacksDelivered()
            #expect(events.last?.ids == ["n1", "n2"], "the local changes are undone at once, even offline")
            #expect(events.last?.documents.first?.get("text") == .string("original"))

            // Online again: the target is listened to without a resume token and refetched whole.
            let fetchedBefore = deviceTransport.received("documentChange")
            let freshBefore = deviceTransport.stats.freshListens
            try await device.enableNetwork()
            #expect(await eventually { events.last?.metadata == SnapshotMetadata(hasPendingWrites: false, isFromCache: false) })
            #expect(await eventually { deviceTransport.received("documentChange") - fetchedBefore >= 2 }, "a full refetch")
            #expect(deviceTransport.stats.freshListens > freshBefore, "the listen started over without a resume token")
            #expect(events.last?.ids == ["n1", "n2"])
            #expect(deviceTransport.stats.writesSent.isEmpty, "discarded writes are never sent")
            #expect(try await office.document("notes/n3").getDocument(source: .server).exists == false)
            #expect(try await office.document("notes/n1").getDocument(source: .server).get("text") == .string("original"))

            // The store keeps working normally afterwards.
            let after = try await device.document("notes/n4").setData(["text": "after reset"])
            _ = try await after.committed
            #expect(await eventually { events.last?.ids == ["n1", "n2", "n4"] })
        }
    }

    @Test func resetWhileOnlineReplacesTheCachedStateOfActiveTargets() async throws {
        try await SyncHarness.run { harness in
            let office = try await harness.openStore(device: "office")
            _ = try await office.document("notes/a").setData(["v": 1]).committed
            let deviceTransport = InProcessTransport(host: harness.host)
            let device = try await harness.openStore(device: "device", transport: deviceTransport)
            let events = Recorder<QuerySnapshot>()
            let listener = try await device.collection("notes").limit(to: 10).addSnapshotListener(includeMetadataChanges: true) {
                events.record($0)
            }
            defer { listener.remove() }
            #expect(await eventually { events.last?.ids == ["a"] && events.last?.metadata.isFromCache == false })
            let pending = try await device.document("notes/a").updateData(["v": 2])
            let freshBefore = deviceTransport.stats.freshListens

            try await device.resetFromServer()
            let error = await #expect(throws: DocError.self) { _ = try await pending.committed }
            #expect(error?.code == .cancelled)
            #expect(await eventually { deviceTransport.stats.freshListens > freshBefore })
            #expect(await eventually { events.last?.metadata.isFromCache == false && events.last?.metadata.hasPendingWrites == false })
            #expect(events.last?.ids == ["a"])
            _ = try await office.document("notes/b").setData(["v": 3]).committed
            #expect(await eventually { events.last?.ids == ["a", "b"] }, "the re-listened target stays live")
        }
    }
}

import DocModel
import DocTestSupport
import Foundation
import Testing
@testable import DocCache

/// Storage failures are never swallowed: one met by a caller's call fails that call; one met
/// where no caller can hear it (the server's answers, the write queue read for the network,
/// scheduled garbage collection) stops the store, which then reports it everywhere, and a
/// reopened store goes on from its disk without losing or doubling a write. Failures come
/// from the persistence's fault seam (`StorageFaults`).
@Suite("Storage failures", .timeLimit(.minutes(2)))
struct StorageFailureTests {
    /// Expects `body` to throw the stopped store's failure.
    static func expectStopped(_ what: String, _ body: () async throws -> Void) async {
        do {
            try await body()
            Issue.record("\(what) succeeded on a stopped store")
        } catch let error as DocError {
            #expect(error.code == .internal, "\(what): \(error)")
            #expect(error.message.contains("stopped after a storage failure"), "\(what): \(error)")
        } catch {
            Issue.record("\(what): \(error)")
        }
    }

    @Test func aReadFailureFailsWaitForPendingWritesAndTheStoreGoesOn() async throws {
        try await SyncHarness.run { harness in
            let device = try await harness.openStore(device: "phone")
            try await device.disableNetwork()
            _ = try await device.document("notes/a").setData(["n": 1])
            let faults = StorageFaults()
            await device.core.injectStorageFaults(faults)
            faults.fail(.read, in: "Highest unacknowledged batch")
            // Before: the read error became "no batch pending" and this returned at once.
            let error = await #expect(throws: DocError.self) { try await device.waitForPendingWrites() }
            #expect(error?.code == .internal && error?.message.contains("injected fault") == true, "\(String(describing: error))")
            #expect(faults.injected == 1)
            // The failure belonged to that call: the store works.
            #expect(await device.lastSyncError == nil)
            _ = try await device.document("notes/b").setData(["n": 2])
            #expect(try await device.pendingWrites().count == 2)
        }
    }

    @Test func aFailedAcknowledgementStopsTheStoreAndAReopenSyncsExactlyOnce() async throws {
        try await SyncHarness.run { harness in
            var device = try await harness.openStore(device: "van")
            try await device.disableNetwork()
            let handle = try await device.document("stock/bolts").setData(["count": .increment(1)], merge: true)
            let events = Recorder<DocumentSnapshot>()
            let listener = try await device.document("stock/bolts").addSnapshotListener { events.record($0) }
            defer { listener.remove() }
            let faults = StorageFaults()
            await device.core.injectStorageFaults(faults)
            faults.fail(.commit, in: "Acknowledge batch", count: Int.max)

            try await device.enableNetwork()
            #expect(await eventually { await device.lastSyncError != nil })
            #expect(faults.injected == 1, "one acknowledgement met the failure")
            let failure = try #require(await device.lastSyncError)
            #expect(failure.code == .internal)
            #expect(failure.message.contains("acknowledgement of write batch \(handle.batchID)"), "\(failure)")
            #expect(failure.message.contains("injected fault"), "LevelDB's message is kept: \(failure)")
            #expect(await device.syncStatus.phase == .error)
            #expect(await eventually { events.errors.count == 1 }, "the listener hears the failure once")
            // The server did commit it, and the write's handle says so.
            _ = try await handle.committed
            await Self.expectStopped("a write") { _ = try await device.document("stock/nuts").setData(["count": 1]) }
            await Self.expectStopped("a read") { _ = try await device.document("stock/bolts").getDocument(source: .cache) }
            await Self.expectStopped("pendingWrites") { _ = try await device.pendingWrites() }

            // Reopened (the disk works again): the batch was never recorded as acknowledged, so it
            // is sent again and the server answers it from its outcome table: applied once.
            await device.close()
            device = try await harness.openStore(device: "van")
            try await device.waitForPendingWrites()
            #expect(try await device.pendingWrites().isEmpty)
            let other = try await harness.openStore(device: "office", user: "u1")
            let server = try await other.document("stock/bolts").getDocument(source: .server)
            #expect(server.int("count") == 1, "the increment was applied exactly once")
        }
    }

    @Test func aFailedRejectionStopsTheStoreAndAReopenKeepsTheFailedWrite() async throws {
        try await SyncHarness.run { harness in
            var device = try await harness.openStore(device: "tablet")
            try await device.disableNetwork()
            // An update of a document that does not exist: the server rejects it (notFound).
            let handle = try await device.document("stock/missing").updateData(["count": 2])
            let faults = StorageFaults()
            await device.core.injectStorageFaults(faults)
            faults.fail(.commit, in: "Reject batch", count: Int.max)
            try await device.enableNetwork()
            #expect(await eventually { await device.lastSyncError != nil })
            let failure = try #require(await device.lastSyncError)
            #expect(failure.message.contains("rejected write batch \(handle.batchID)"), "\(failure)")
            // The rejection was not recorded: the batch is still queued on disk.
            await device.close()
            device = try await harness.openStore(device: "tablet")
            #expect(await eventually { (try? await device.failedWrites().map(\.id)) == [handle.batchID] },
                    "sent again, answered with the remembered rejection, kept as a failed write")
            #expect(try await device.failedWrites().first?.error.code == .notFound)
            #expect(try await device.pendingWrites().isEmpty)
        }
    }

    @Test func aFailureReadingTheWriteQueueForTheNetworkStopsTheStore() async throws {
        try await SyncHarness.run { harness in
            let device = try await harness.openStore(device: "kiosk")
            try await device.disableNetwork()
            _ = try await device.document("notes/a").setData(["n": 1])
            let faults = StorageFaults()
            await device.core.injectStorageFaults(faults)
            faults.fail(.read, in: "Next mutation batches", count: Int.max)
            try await device.enableNetwork()
            // Before: the remote store saw an empty queue and the store looked synced.
            #expect(await eventually { await device.lastSyncError != nil })
            let failure = try #require(await device.lastSyncError)
            #expect(failure.message.contains("reading the write queue"), "\(failure)")
            #expect(await device.syncStatus.phase == .error)
            await Self.expectStopped("waitForPendingWrites") { try await device.waitForPendingWrites() }
        }
    }

    @Test func aFailedScheduledGarbageCollectionStopsTheStore() async throws {
        try await SyncHarness.run { harness in
            let device = try await harness.openStore(device: "watch", settings: StoreSettings(cacheSizeBytes: 1 << 20))
            try await device.disableNetwork()
            _ = try await device.document("notes/a").setData(["n": 1])
            #expect(await device.core.collectScheduledGarbage())
            let faults = StorageFaults()
            await device.core.injectStorageFaults(faults)
            faults.fail(.read, count: Int.max)
            // Before: the failure was dropped and the next run tried again, silently.
            #expect(await device.core.collectScheduledGarbage() == false)
            let failure = try #require(await device.lastSyncError)
            #expect(failure.message.contains("collecting garbage"), "\(failure)")
            await Self.expectStopped("a write") { _ = try await device.document("notes/b").setData(["n": 2]) }
        }
    }
}

import DocModel
import DocTestSupport
import Foundation
import Testing
@testable import DocCache

/// What an outbox screen shows: each queued batch's state (pending, sending, waiting and why),
/// its attempts and last error across restarts, and the store-wide sync status.
@Suite("Outbox state", .timeLimit(.minutes(2)))
struct OutboxStateTests {
    @Test func attemptsAndLastErrorSurviveAReopenAndTheBatchSaysWhyItWaits() async throws {
        try await SyncHarness.run { harness in
            let transport = InProcessTransport(host: harness.host)
            var device = try await harness.openStore(device: "van-7", transport: transport)
            try await device.disableNetwork()
            let handle = try await device.document("stock/bolts").setData(["count": 5])
            #expect(try await device.pendingWrites().map(\.state) == [.waiting(.networkDisabled)])
            #expect(await device.syncStatus.phase == .offline)
            #expect(await device.syncStatus.pendingBatches == 1)

            // Sent once, committed, then the connection drops and no new one is accepted.
            transport.dropAfterNextCommit(thenRefuse: true)
            try await device.enableNetwork()
            try #require(await eventually { transport.stats.refused > 0 }, "the connection dropped after the commit and the next was refused")
            let waiting = try #require(try await device.pendingWrites().first)
            #expect(waiting.attempts == 1)
            #expect(waiting.lastAttemptAt != nil)
            #expect(waiting.lastError?.code == .unavailable)
            guard case .waiting(.connectionFailed(let error)) = waiting.state else {
                Issue.record("expected waiting for the connection, got \(waiting.state)")
                return
            }
            #expect(error.code == .unavailable)
            let offline = await device.syncStatus
            #expect(offline.phase == .offline)
            #expect(offline.error?.code == .unavailable)
            #expect(offline.lastSyncedAt == nil, "nothing was ever acknowledged")

            // Closed and opened again: the attempts and the error are still there.
            await device.close()
            device = try await harness.openStore(device: "van-7", transport: transport)
            try await device.disableNetwork()
            let reopened = try #require(try await device.pendingWrites().first)
            #expect(reopened.batchID == handle.batchID)
            #expect(reopened.attempts == 1)
            #expect(reopened.lastError?.code == .unavailable)
            #expect(reopened.lastAttemptAt == waiting.lastAttemptAt)

            // Back online: sent a second time, answered from the stored outcome, synced.
            transport.acceptConnections()
            try await device.enableNetwork()
            try await device.waitForPendingWrites()
            #expect(transport.stats.writesSent[handle.batchID] == 2)
            #expect(await eventually { await device.syncStatus.phase == .synced })
            let synced = await device.syncStatus
            let syncedAt = try #require(synced.lastSyncedAt)
            #expect(synced.totalBatches == 0 && synced.completedBatches == 0)
            #expect(try await device.pendingWrites().isEmpty)

            // lastSyncedAt is kept too; a new batch starts with no attempts.
            await device.close()
            device = try await harness.openStore(device: "van-7", transport: transport)
            try await device.disableNetwork()
            #expect(await device.syncStatus.lastSyncedAt == syncedAt)
            _ = try await device.document("stock/nuts").setData(["count": 1])
            let fresh = try #require(try await device.pendingWrites().first)
            #expect(fresh.attempts == 0 && fresh.lastError == nil && fresh.lastAttemptAt == nil,
                    "the acknowledged batch's record left with it")
        }
    }

    @Test func aBatchOnItsWayIsSendingAndTheStatusCountsTheRun() async throws {
        try await SyncHarness.run { harness in
            let transport = InProcessTransport(host: harness.host)
            let device = try await harness.openStore(device: "tablet", transport: transport)
            try await device.disableNetwork()
            for i in 0..<3 { _ = try await device.document("notes/n\(i)").setData(["i": .value(.integer(Int64(i)))]) }

            let statuses = StatusRecorder(device.syncStatusUpdates())
            transport.holdWrites()
            try await device.enableNetwork()
            #expect(await eventually { (try? await device.pendingWrites().map(\.state))?.contains(.sending) == true })
            let held = try await device.pendingWrites()
            #expect(held.first?.state == .sending, "the oldest batch is on its way")
            #expect(held.allSatisfy { $0.state == .sending || $0.state == .pending })
            let during = await device.syncStatus
            #expect(during.phase == .syncing)
            #expect(during.completedBatches == 0 && during.totalBatches == 3)

            transport.releaseWrites()
            try await device.waitForPendingWrites()
            #expect(await eventually { statuses.all.last?.phase == .synced })
            let seen = statuses.all
            // The run went 0 of 3 → 1 of 3 → 2 of 3 → synced, in that order.
            let progress = seen.filter { $0.phase == .syncing }.map(\.completedBatches)
            #expect(progress == progress.sorted(), "\(seen)")
            #expect(progress.contains(0) && progress.contains(2), "\(seen)")
            #expect(seen.filter { $0.phase == .syncing }.allSatisfy { $0.totalBatches == 3 }, "\(seen)")
            #expect(seen.last?.lastSyncedAt != nil)
            #expect(seen.first?.phase == .offline, "it began offline (network disabled)")
        }
    }

    @Test func aLongRunIsFollowedByOneCompactionOfTheQueueAndAShortOneIsNot() async throws {
        try await SyncHarness.run { harness in
            let transport = InProcessTransport(host: harness.host)
            let device = try await harness.openStore(device: "field-laptop", transport: transport)
            // A short run: its few deletion markers are not worth a compaction.
            try await device.disableNetwork()
            for i in 0..<3 { _ = try await device.document("notes/short\(i)").setData(["i": .value(.integer(Int64(i)))]) }
            try await device.enableNetwork()
            try await device.waitForPendingWrites()
            // The compaction is asked for in the same turn that counts the last batch out.
            #expect(await eventually { await device.core.pendingWriteCount == 0 })
            #expect(await device.core.backgroundCompactions.requested == 0)

            // A long run: the queue's tables are compacted once the last batch is answered.
            try await device.disableNetwork()
            let count = ClientCore.compactionAfterAnsweredBatches
            for i in 0..<count { _ = try await device.document("notes/long\(i)").setData(["i": .value(.integer(Int64(i)))]) }
            try await device.enableNetwork()
            try await device.waitForPendingWrites()
            #expect(await eventually { await device.core.pendingWriteCount == 0 })
            #expect(await device.core.backgroundCompactions.requested == 1)
            #expect(await eventually { await device.core.backgroundCompactions.completed == 1 })
            // Nothing was lost to it: every write is in the cache and none is pending.
            #expect(try await device.pendingWrites().isEmpty)
            let notes = try await device.collection("notes").getDocuments(source: .cache)
            #expect(notes.count == count + 3)
            #expect(notes.documents.allSatisfy { !$0.metadata.hasPendingWrites })
        }
    }

    @Test func aStoreWithoutAServerSaysSo() async throws {
        let directory = NSTemporaryDirectory() + "doccache-outbox-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try await DocumentStore.open(directory: directory, tenant: "acme", user: "u1")
        _ = try await store.document("notes/a").setData(["x": 1])
        #expect(try await store.pendingWrites().map(\.state) == [.waiting(.noServer)])
        let status = await store.syncStatus
        #expect(status.phase == .offline)
        #expect(status.pendingBatches == 1)
        #expect(status.description.hasPrefix("offline, 1 pending"))
        await store.close()
    }
}

/// Collects a status stream's values in the background.
private final class StatusRecorder: Sendable {
    private let recorder = Recorder<SyncStatus>()
    private let task: Task<Void, Never>

    init(_ stream: AsyncStream<SyncStatus>) {
        let recorder = recorder
        task = Task { for await status in stream { recorder.record(.success(status)) } }
    }

    var all: [SyncStatus] { recorder.values }

    deinit { task.cancel() }
}

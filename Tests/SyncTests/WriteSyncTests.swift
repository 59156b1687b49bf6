import DocTestSupport
import DocModel
import Testing
@testable import DocCache

@Suite("Writes reach the server in order, exactly once")
struct WriteSyncTests {
    @Test func offlineWritesAllArriveAfterEnableNetworkInOrderExactlyOnce() async throws {
        try await SyncHarness.run { harness in
            let device = try await harness.openStore(device: "field-tablet")
            try await device.disableNetwork()
            #expect(await device.onlineState == .offline)

            let count = 2_000
            var last: WriteHandle?
            for i in 1...count {
                var batch = device.batch()
                try batch.setData(["n": .increment(1)], for: device.document("counters/visits"), merge: true)
                try batch.setData(["seq": .value(.integer(Int64(i)))], for: device.document("counters/last"))
                last = try await batch.commit()
            }
            #expect(await device.pendingWriteCount == count)
            #expect(harness.transport.stats.writesSent.isEmpty, "nothing is sent while the network is disabled")
            #expect(try await device.document("counters/visits").getDocument(source: .cache).int("n") == Int64(count),
                    "the local view already shows every increment")

            try await device.enableNetwork()
            try await device.waitForPendingWrites()
            #expect(await device.pendingWriteCount == 0)
            let lastVersion = try await #require(last).committed
            #expect(lastVersion > .none)

            // Exactly once, in order, as the server sees it.
            let stats = harness.transport.stats
            #expect(stats.writesSent.count == count)
            #expect(stats.writesSent.values.allSatisfy { $0 == 1 }, "no batch was sent twice on a healthy connection")
            #expect(stats.writeOrder == stats.writeOrder.sorted(), "batches are sent in queue order")
            let reader = try await harness.openStore(device: "office-pc")
            let visits = try await reader.document("counters/visits").getDocument(source: .server)
            #expect(visits.int("n") == Int64(count), "2,000 increments = 2,000 on the server")
            #expect(try await reader.document("counters/last").getDocument(source: .server).int("seq") == Int64(count),
                    "the last write in queue order is the last applied")
        }
    }

    @Test func aStalePreconditionIsRejectedRevertedLocallyAndReported() async throws {
        try await SyncHarness.run { harness in
            let alice = try await harness.openStore(device: "alice", user: "alice")
            let bob = try await harness.openStore(device: "bob", user: "bob")
            let v1 = try await alice.document("accounts/a1").setData(["balance": 100]).committed

            // Bob reads version 1 from the server and keeps a listener on it.
            let seen = try await bob.document("accounts/a1").getDocument(source: .server)
            #expect(seen.version == v1)
            let bobEvents = Recorder<DocumentSnapshot>()
            let listener = try await bob.document("accounts/a1").addSnapshotListener(includeMetadataChanges: true) {
                bobEvents.record($0)
            }
            defer { listener.remove() }
            #expect(await eventually { bobEvents.last?.metadata.isFromCache == false })
            let errors = bob.writeErrors()
            let firstError = Task { () -> WriteError? in
                for await error in errors { return error }
                return nil
            }

            // Alice commits version 2; Bob, not yet aware, writes on top of version 1.
            try await bob.disableNetwork()
            let v2 = try await alice.document("accounts/a1").updateData(["balance": 90]).committed
            #expect(v2 > v1)
            let stale = try await bob.document("accounts/a1").updateData(["balance": 50, "note": "bob"], ifVersion: v1)
            await bob.callbacksDelivered()
            #expect(bobEvents.last?.int("balance") == 50, "the write shows locally at once")
            #expect(bobEvents.last?.metadata.hasPendingWrites == true)
            try await bob.enableNetwork()

            let rejection = await #expect(throws: DocError.self) { _ = try await stale.committed }
            #expect(rejection?.code == .failedPrecondition)
            let reported = await firstError.value
            #expect(reported?.batchID == stale.batchID)
            #expect(reported?.paths == ["accounts/a1"])
            #expect(reported?.error.code == .failedPrecondition)

            // Reverted: Bob ends up with the server's document, without his change.
            #expect(await eventually { bobEvents.last?.int("balance") == 90 && bobEvents.last?.metadata.hasPendingWrites == false })
            #expect(bobEvents.last?.get("note") == nil)
            #expect(await bob.pendingWriteCount == 0)
            #expect(await bob.lastSyncError == nil, "a rejected write is not a sync error")
            let server = try await alice.document("accounts/a1").getDocument(source: .server)
            #expect(server.int("balance") == 90)
            #expect(server.get("note") == nil, "nothing of the rejected batch was stored")
        }
    }

    @Test func aConnectionDroppedAfterTheCommitDoesNotApplyTheResentBatchTwice() async throws {
        try await SyncHarness.run { harness in
            let deviceTransport = InProcessTransport(host: harness.host)
            let device = try await harness.openStore(device: "van-7", transport: deviceTransport)
            let reader = try await harness.openStore(device: "office")

            // The server commits the batch, then the connection drops before the client reads
            // the result, and the client cannot reconnect for a while.
            try await device.disableNetwork()
            let handle = try await device.document("stock/bolts").setData(["count": .increment(5)], merge: true)
            deviceTransport.dropAfterNextCommit(thenRefuse: true)
            try await device.enableNetwork()
            try #require(await eventually { deviceTransport.stats.refused > 0 }, "the connection dropped after the commit and the next was refused")
            #expect(await eventually { (try? await reader.document("stock/bolts").getDocument(source: .server).int("count")) == 5 },
                    "the server committed the batch")
            #expect(!handle.isCommitted, "the client never read the result")
            let pending = try await device.pendingWrites()
            #expect(pending.map(\.batchID) == [handle.batchID])
            #expect(pending.first?.attempts == 1)
            #expect(pending.first?.lastError?.code == .unavailable, "the dropped connection is the batch's last error")
            #expect(await device.lastSyncError?.code == .unavailable)

            // Reconnected, the client sends the batch again and gets the stored result.
            deviceTransport.acceptConnections()
            let version = try await handle.committed
            #expect(version > .none)
            #expect(deviceTransport.stats.writesSent[handle.batchID] == 2, "the batch was sent twice")
            #expect(try await reader.document("stock/bolts").getDocument(source: .server).int("count") == 5,
                    "and applied once")
            #expect(await device.lastSyncError == nil, "the write stream works again")

            // Many batches, several drops: every increment counts exactly once.
            for _ in 0..<3 { deviceTransport.dropAfterNextCommit() }
            var last: WriteHandle?
            for _ in 0..<40 {
                last = try await device.document("stock/bolts").setData(["count": .increment(1)], merge: true)
            }
            _ = try await #require(last).committed
            try await device.waitForPendingWrites()
            let sends = deviceTransport.stats.writesSent.values.reduce(0, +)
            #expect(sends - deviceTransport.stats.writesSent.count >= 4, "every dropped batch was sent again")
            #expect(try await reader.document("stock/bolts").getDocument(source: .server).int("count") == 45)
            #expect(try await device.document("stock/bolts").getDocument(source: .cache).int("count") == 45)
        }
    }

    @Test func noBatchLeavesOnAStreamWhoseFrameOfAnswersReportedAFailure() async throws {
        try await SyncHarness.run { harness in
            let deviceTransport = InProcessTransport(host: harness.host)
            let device = try await harness.openStore(device: "device", transport: deviceTransport)
            try await device.disableNetwork()
            for i in 1...12 { _ = try await device.document("notes/n\(i)").setData(["n": .value(.integer(Int64(i)))]) }
            // The first frame's answers come back with all but the first failed (transiently):
            // the client acknowledges the first and must not send the two batches it has left
            // before the failed ones are sent again, or they could commit before them.
            deviceTransport.failAnswersOfNextWriteResults()
            try await device.enableNetwork()
            try await device.waitForPendingWrites()
            let stats = deviceTransport.stats
            let firstFrame = Array(stats.writeOrder.prefix(10))
            #expect(firstFrame.dropFirst().allSatisfy { stats.writesSent[$0] == 2 }, "the failed batches were sent again: \(stats.writeOrder)")
            #expect(stats.writesAfterFailedAnswers.isEmpty, "sent on the failing stream: \(stats.writesAfterFailedAnswers)")
            #expect(stats.writesSent.count == 12)
        }
    }

    /// A device on a transport of its own, the office, and `accounts/a1`, which the office
    /// moved past version `v1` (an update `ifVersion: v1` is stale).
    static func staleAccount(_ harness: SyncHarness) async throws
        -> (device: DocumentStore, deviceTransport: InProcessTransport, office: DocumentStore, v1: SnapshotVersion) {
        let deviceTransport = InProcessTransport(host: harness.host)
        let device = try await harness.openStore(device: "device", transport: deviceTransport)
        let office = try await harness.openStore(device: "office")
        let v1 = try await office.document("accounts/a1").setData(["balance": 100]).committed
        _ = try await office.document("accounts/a1").updateData(["balance": 90]).committed
        return (device, deviceTransport, office, v1)
    }

    @Test func aRejectedBatchLeavesTheBatchesAfterItToBeAnsweredOnTheSameStream() async throws {
        try await SyncHarness.run { harness in
            let (device, deviceTransport, office, v1) = try await Self.staleAccount(harness)

            // Offline: one frame of seven batches, the fourth stale.
            try await device.disableNetwork()
            var handles: [WriteHandle] = []
            for i in 1...3 { handles.append(try await device.document("notes/n\(i)").setData(["n": .value(.integer(Int64(i)))])) }
            let stale = try await device.document("accounts/a1").updateData(["balance": 50], ifVersion: v1)
            for i in 4...6 { handles.append(try await device.document("notes/n\(i)").setData(["n": .value(.integer(Int64(i)))])) }
            try await device.enableNetwork()
            let rejection = await #expect(throws: DocError.self) { _ = try await stale.committed }
            #expect(rejection?.code == .failedPrecondition)
            for handle in handles { _ = try await handle.committed }

            // Online: a stale batch on its own (`write`, answered by `writeError`), the next sent
            // before its answer.
            let staleAgain = try await device.document("accounts/a1").updateData(["balance": 40], ifVersion: v1)
            let after = try await device.document("notes/n7").setData(["n": 7])
            let secondRejection = await #expect(throws: DocError.self) { _ = try await staleAgain.committed }
            #expect(secondRejection?.code == .failedPrecondition)
            _ = try await after.committed
            try await device.waitForPendingWrites()

            let stats = deviceTransport.stats
            #expect(stats.writesSent.count == 9)
            #expect(stats.writesSent.values.allSatisfy { $0 == 1 }, "a batch was sent again after a rejection: \(stats.writesSent)")
            #expect(stats.frames["→writeHandshake"] == 1, "a rejection ended the write stream")
            #expect(try await device.failedWrites().map(\.id) == [stale.batchID, staleAgain.batchID])
            #expect(try await office.document("accounts/a1").getDocument(source: .server).int("balance") == 90)
            #expect(try await office.document("notes/n6").getDocument(source: .server).int("n") == 6)
        }
    }

    @Test func aFrameWithARejectionAndThenAFailureSendsNoRefillBeforeTheFailedBatches() async throws {
        try await SyncHarness.run { harness in
            let (device, deviceTransport, _, v1) = try await Self.staleAccount(harness)
            try await device.disableNetwork()
            let first = try await device.document("notes/n1").setData(["n": 1])
            let stale = try await device.document("accounts/a1").updateData(["balance": 50], ifVersion: v1)
            var rest: [WriteHandle] = []
            for i in 3...12 { rest.append(try await device.document("notes/n\(i)").setData(["n": .value(.integer(Int64(i)))])) }
            // The first frame (ten batches) answers: committed, rejected, committed, committed,
            // then six transient failures. The acknowledgements and the rejection free room in
            // the pipeline, but nothing may leave on that stream before the failed batches are
            // sent again.
            deviceTransport.failAnswersOfNextWriteResults(after: 4)
            try await device.enableNetwork()
            try await device.waitForPendingWrites()

            _ = try await first.committed
            let rejection = await #expect(throws: DocError.self) { _ = try await stale.committed }
            #expect(rejection?.code == .failedPrecondition)
            for handle in rest { _ = try await handle.committed }
            let stats = deviceTransport.stats
            #expect(stats.writesAfterFailedAnswers.isEmpty, "sent on the failing stream: \(stats.writesAfterFailedAnswers)")
            let firstFrame = Array(stats.writeOrder.prefix(10))
            #expect(firstFrame.prefix(4).allSatisfy { stats.writesSent[$0] == 1 }, "an answered batch was sent again: \(stats.writeOrder)")
            #expect(firstFrame.dropFirst(4).allSatisfy { stats.writesSent[$0] == 2 }, "the failed batches were sent again: \(stats.writeOrder)")
            #expect(stats.writesSent.count == 12)
            #expect(try await device.failedWrites().map(\.id) == [stale.batchID])
        }
    }

    @Test func revertingABatchInFlightIgnoresTheServersLateAnswer() async throws {
        try await SyncHarness.run { harness in
            let deviceTransport = InProcessTransport(host: harness.host)
            let device = try await harness.openStore(device: "device", transport: deviceTransport)
            let events = Recorder<QuerySnapshot>()
            let listener = try await device.collection("drafts").limit(to: 10).addSnapshotListener(includeMetadataChanges: true) {
                events.record($0)
            }
            defer { listener.remove() }

            // The batch reaches the server, but its answer is lost and the device stays cut off.
            try await device.disableNetwork()
            let handle = try await device.document("drafts/d1").setData(["text": "sent, then reverted"])
            deviceTransport.dropAfterNextCommit(thenRefuse: true)
            try await device.enableNetwork()
            try #require(await eventually { deviceTransport.stats.refused > 0 }, "the connection dropped after the commit and the next was refused")

            try await device.revert(handle.batchID)
            let reverted = await #expect(throws: DocError.self) { _ = try await handle.committed }
            #expect(reverted?.code == .cancelled)
            // The local write is gone at once (the listener shows the cache's server state: nothing,
            // or the committed document if watch delivered it already).
            await device.callbacksDelivered()
            #expect(events.last?.metadata.hasPendingWrites == false)
            #expect(await device.pendingWriteCount == 0)

            // Reconnected, the batch still in flight is answered; the answer is ignored, and the
            // server's document (it did commit the batch) arrives through the listener.
            deviceTransport.acceptConnections()
            #expect(await eventually { events.last?.ids == ["d1"] })
            #expect(await device.pendingWriteCount == 0)
            try await device.waitForPendingWrites()
            let next = try await device.document("drafts/d2").setData(["text": "later"])
            _ = try await next.committed
            #expect(await eventually { events.last?.ids == ["d1", "d2"] })
            // d2's answer comes after the late answer for the reverted batch (answers are in order).
            #expect(deviceTransport.stats.writesSent[handle.batchID] == 2, "the reverted batch was in flight and answered again")
            #expect(events.errors.isEmpty, "the late answer for a reverted batch is ignored, not an error: \(events.errors)")
        }
    }
}

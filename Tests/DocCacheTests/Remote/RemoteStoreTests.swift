import Testing
@testable import DocCache
import DocModel
import DocTestTraits

private typealias F = RemoteFixtures

/// A remote store over the fake datastore, with a fake local store and syncer.
private final class Harness {
    let scheduler = ManualScheduler()
    let datastore: FakeDatastore
    let localStore = FakeRemoteStoreDataSource()
    let syncer: FakeRemoteSyncer
    let remoteStore: RemoteStore

    init(start: Bool = true) {
        datastore = FakeDatastore(scheduler: scheduler)
        syncer = FakeRemoteSyncer(localStore: localStore)
        remoteStore = RemoteStore(localStore: localStore, datastore: datastore, scheduler: scheduler, backoffRandom: { 0.5 })
        remoteStore.syncer = syncer
        if start { remoteStore.start() }
    }

    var watch: FakeWatchStream { datastore.watchStream! }
    var write: FakeWriteStream { datastore.writeStream! }

    /// Listens to `targetID` and has the server acknowledge it.
    func listenAndAck(_ targetData: TargetData) {
        remoteStore.listen(targetData)
        datastore.watchAck([targetData.targetID])
    }

    /// Queues `count` batches in the local store and fills the pipeline.
    func addWrites(_ count: Int) {
        for i in 0..<count { localStore.addSetBatch("docs/\(i)") }
        remoteStore.fillWritePipeline()
    }

    var sentBatchIDs: [BatchID] { datastore.sentWrites.map(\.batchID) }
}

@Suite("Remote store: watch", .cpuBound)
struct RemoteStoreWatchTests {
    @Test func startsNoStreamWithoutTargetsOrWrites() {
        let h = Harness()
        #expect(h.remoteStore.canUseNetwork)
        #expect(h.watch.startCount == 0)
        #expect(h.write.startCount == 0)
        #expect(h.remoteStore.onlineState == .unknown)
    }

    @Test func listenStartsTheStreamAndSendsTheTarget() {
        let h = Harness()
        h.remoteStore.listen(F.queryTarget(2))
        #expect(h.watch.startCount == 1)
        #expect(h.datastore.activeTargets.keys.sorted() == [2])
        #expect(h.datastore.watchStreamRequestCount == 1)
        #expect(h.scheduler.isPending(.onlineStateTimeout), "a stream start arms the online state timeout")

        h.remoteStore.listen(F.queryTarget(2))
        #expect(h.datastore.watchStreamRequestCount == 1, "listening twice sends nothing")

        h.remoteStore.listen(F.queryTarget(4, collection: "other"))
        #expect(h.watch.startCount == 1)
        #expect(h.datastore.activeTargets.keys.sorted() == [2, 4])
        #expect(h.remoteStore.listenTargets.keys.sorted() == [2, 4])
    }

    @Test func targetsListenedWhileConnectingAreSentOnOpen() {
        let h = Harness()
        h.datastore.opensStreamsOnStart = false
        h.remoteStore.listen(F.queryTarget(4))
        h.remoteStore.listen(F.queryTarget(2, collection: "b"))
        #expect(h.watch.startCount == 1)
        #expect(h.watch.requests.isEmpty)

        h.watch.open()
        #expect(h.watch.requests.map { request -> TargetID in
            guard case .watch(let data) = request else { return -1 }
            return data.targetID
        } == [2, 4])
    }

    @Test func globalSnapshotRaisesARemoteEvent() {
        let h = Harness()
        let document = F.doc("coll/a", 1_000)
        h.listenAndAck(F.queryTarget(2))
        h.datastore.watchEntity(document, targets: [2])
        h.datastore.watchCurrent([2], resumeToken: F.token("resume-1000"))
        #expect(h.syncer.remoteEvents.isEmpty, "no event before a global snapshot")

        h.datastore.watchSnapshot(version: F.version(1_000), targetIDs: [2])
        #expect(h.syncer.remoteEvents.isEmpty, "a snapshot for some targets only is not global")

        h.datastore.watchSnapshot(version: F.version(1_000))
        #expect(h.syncer.remoteEvents.count == 1)
        let event = h.syncer.remoteEvents[0]
        #expect(event.snapshotVersion == F.version(1_000))
        #expect(event.documentUpdates == [document.key: document])
        #expect(
            event.targetChanges[2]
                == TargetChange(resumeToken: F.token("resume-1000"), current: true, addedDocuments: [document.key]))
        #expect(h.remoteStore.listenTargets[2]?.resumeToken == F.token("resume-1000"))
        #expect(h.remoteStore.listenTargets[2]?.snapshotVersion == F.version(1_000))
        #expect(h.remoteStore.onlineState == .online)
        #expect(h.syncer.onlineStates == [.online])
    }

    @Test func onlyANoChangeForAllTargetsIsAGlobalSnapshot() {
        let h = Harness()
        h.listenAndAck(F.queryTarget(2))
        // A version on any other message is not a consistent point.
        h.datastore.sendWatch(.target(.init(state: .current, targetIDs: [])), snapshotVersion: F.version(9))
        h.datastore.sendWatch(.existenceFilter(targetID: 2, count: 0), snapshotVersion: F.version(9))
        #expect(h.syncer.remoteEvents.isEmpty)
        h.datastore.sendWatch(.target(.init(state: .noChange, targetIDs: [])), snapshotVersion: F.version(9))
        #expect(h.syncer.remoteEvents.map(\.snapshotVersion) == [F.version(9)])
        #expect(h.syncer.remoteEvents[0].targetChanges[2]?.current == true)
    }

    @Test func snapshotsOlderThanTheLastAppliedOneAreNotRaised() {
        let h = Harness()
        h.localStore.lastRemoteSnapshotVersion = F.version(2_000)
        h.listenAndAck(F.queryTarget(2))
        h.datastore.watchSnapshot(version: F.version(1_000))
        #expect(h.syncer.remoteEvents.isEmpty)
        h.datastore.watchSnapshot(version: F.version(2_000))
        #expect(h.syncer.remoteEvents.count == 1)
    }

    @Test func reconnectResendsTargetsWithResumeTokens() {
        let h = Harness()
        h.listenAndAck(F.queryTarget(2))
        h.remoteStore.listen(F.queryTarget(4, collection: "fresh"))
        h.datastore.watchAck([4])
        h.datastore.watchCurrent([2], resumeToken: F.token("resume-1000"))
        h.datastore.watchSnapshot(version: F.version(1_000))
        h.syncer.remoteKeysByTarget[2] = [F.key("coll/a"), F.key("coll/b")]

        h.datastore.watchStreamClose(error: DocError(.unavailable, "gone"))
        #expect(!h.watch.isStarted, "the restart waits for the backoff timer")
        #expect(h.scheduler.delay(of: .listenStreamConnectionBackoff) == .zero, "the first retry is immediate")

        #expect(h.scheduler.runTimer(named: "listen_stream_connection_backoff"))
        #expect(h.watch.startCount == 2)
        #expect(h.datastore.activeTargets[2]?.resumeToken == F.token("resume-1000"))
        #expect(h.datastore.activeTargets[2]?.expectedCount == 2, "resumed targets carry the client's count")
        #expect(h.datastore.activeTargets[4]?.resumeToken == [])
        #expect(h.datastore.activeTargets[4]?.expectedCount == nil)
        #expect(h.datastore.watchStreamRequestCount == 4)
    }

    @Test func changesOfTheOldStreamAreForgottenOnReconnect() {
        let h = Harness()
        h.listenAndAck(F.queryTarget(2))
        h.datastore.watchEntity(F.doc("coll/a", 1), targets: [2])
        h.datastore.watchStreamClose(error: DocError(.unavailable, "gone"))
        h.scheduler.runTimer(named: "listen_stream_connection_backoff")
        h.datastore.watchAck([2])
        h.datastore.watchSnapshot(version: F.version(5))
        #expect(h.syncer.remoteEvents.count == 1)
        #expect(h.syncer.remoteEvents[0].documentUpdates.isEmpty)
    }

    @Test func targetRemovalWithACauseRejectsTheListen() {
        let h = Harness()
        h.listenAndAck(F.queryTarget(2))
        h.listenAndAck(F.queryTarget(4, collection: "other"))
        let denied = DocError(.permissionDenied, "no access")
        h.datastore.watchRemove([2], cause: denied)

        #expect(h.syncer.rejectedListens.map(\.targetID) == [2])
        #expect(h.syncer.rejectedListens.first?.error == denied)
        #expect(h.remoteStore.listenTargets.keys.sorted() == [4])
        #expect(h.syncer.remoteEvents.isEmpty, "rejected at once, not at the next snapshot")

        h.datastore.watchEntity(F.doc("coll/x", 3), targets: [2])
        h.datastore.watchSnapshot(version: F.version(3))
        #expect(h.syncer.remoteEvents.count == 1)
        #expect(h.syncer.remoteEvents[0].targetChanges[2] == nil)
        #expect(h.syncer.remoteEvents[0].documentUpdates.isEmpty)
    }

    @Test func stopListeningUnwatchesAndMarksTheStreamIdle() {
        let h = Harness()
        h.listenAndAck(F.queryTarget(2))
        h.remoteStore.stopListening(2)
        #expect(h.watch.requests.last == .unwatch(2))
        #expect(h.datastore.activeTargets.isEmpty)
        #expect(h.remoteStore.listenTargets.isEmpty)
        #expect(h.watch.markIdleCount == 1)

        // The server's confirmation of the removal is not a rejection.
        h.datastore.watchRemove([2])
        #expect(h.syncer.rejectedListens.isEmpty)

        #expect(h.scheduler.runTimer(named: "listen_stream_idle"))
        #expect(!h.watch.isStarted)
        #expect(h.remoteStore.onlineState == .unknown)
        #expect(h.scheduler.pending.isEmpty, "no restart without targets")

        h.remoteStore.listen(F.queryTarget(6))
        #expect(h.watch.startCount == 2)
    }

    @Test func stopListeningToAnUnknownTargetDoesNothing() {
        let h = Harness()
        h.listenAndAck(F.queryTarget(2))
        h.remoteStore.stopListening(8)
        #expect(h.watch.requests.count == 1)
        #expect(h.watch.markIdleCount == 0)
    }

    @Test func existenceFilterMismatchRelistensWithoutResumeToken() {
        let h = Harness()
        h.listenAndAck(F.queryTarget(2, resumeToken: F.token("old")))
        h.syncer.remoteKeysByTarget[2] = [F.key("coll/a"), F.key("coll/b")]
        h.datastore.watchFilter(targetID: 2, count: 1)
        h.datastore.watchSnapshot(version: F.version(2_000))

        #expect(h.syncer.remoteEvents.first?.targetMismatches == [2: .existenceFilterMismatch])
        #expect(h.syncer.remoteEvents.first?.targetChanges[2]?.removedDocuments == [F.key("coll/a"), F.key("coll/b")])
        let lastTwo = Array(h.watch.requests.suffix(2))
        #expect(lastTwo.first == .unwatch(2))
        guard case .watch(let relisten)? = lastTwo.last else {
            Issue.record("expected a re-watch, got \(lastTwo)")
            return
        }
        #expect(relisten.resumeToken.isEmpty)
        #expect(relisten.purpose == .existenceFilterMismatch)
        #expect(h.remoteStore.listenTargets[2]?.purpose == .listen, "only the request carries the mismatch purpose")
        #expect(h.remoteStore.listenTargets[2]?.resumeToken.isEmpty == true)
    }

    @Test func cleanCloseWhileListeningIsRetriedWithBackoff() {
        let h = Harness()
        h.listenAndAck(F.queryTarget(2))
        // The server hangs up without an error although a target is listened to.
        h.watch.closeCleanly()
        #expect(!h.watch.isStarted)
        #expect(h.remoteStore.onlineState == .unknown)
        #expect(h.scheduler.runTimer(named: "listen_stream_connection_backoff"))
        #expect(h.watch.startCount == 2)
        #expect(h.datastore.activeTargets.keys.sorted() == [2])
    }
}

@Suite("Remote store: online state", .cpuBound)
struct RemoteStoreOnlineStateTests {
    @Test func failuresAndRecovery() {
        let h = Harness()
        h.listenAndAck(F.queryTarget(2))
        #expect(h.remoteStore.onlineState == .online)

        let error = DocError(.unavailable, "Simulated Backend Error")
        h.datastore.watchStreamClose(error: error)
        #expect(h.remoteStore.onlineState == .unknown, "one failure after being online")
        h.scheduler.runTimer(named: "listen_stream_connection_backoff")
        h.datastore.watchStreamClose(error: error)
        #expect(h.remoteStore.onlineState == .offline)
        #expect(h.remoteStore.lastOfflineReason?.contains("Simulated Backend Error") == true)

        h.scheduler.runTimer(named: "listen_stream_connection_backoff")
        #expect(h.remoteStore.onlineState == .offline, "still offline while reconnecting")
        h.datastore.watchAck([2])
        #expect(h.remoteStore.onlineState == .online)
        #expect(h.syncer.onlineStates == [.online, .unknown, .offline, .online])
    }

    @Test func timeoutMakesTheClientOffline() {
        let h = Harness()
        h.remoteStore.listen(F.queryTarget(2))
        #expect(h.scheduler.runTimer(named: "online_state_timeout"))
        #expect(h.remoteStore.onlineState == .offline)
        h.datastore.watchAck([2])
        #expect(h.remoteStore.onlineState == .online)
    }

    @Test func backoffGrowsWithRepeatedFailures() {
        let h = Harness()
        h.remoteStore.listen(F.queryTarget(2))
        let error = DocError(.unavailable, "down")
        var delays: [Duration?] = []
        for _ in 0..<3 {
            h.datastore.watchStreamClose(error: error)
            delays.append(h.scheduler.delay(of: .listenStreamConnectionBackoff))
            h.scheduler.runTimer(named: "listen_stream_connection_backoff")
        }
        #expect(delays == [.zero, .seconds(1), .milliseconds(1_500)])

        // A message from the server resets the backoff.
        h.datastore.watchAck([2])
        h.datastore.watchStreamClose(error: error)
        #expect(h.scheduler.delay(of: .listenStreamConnectionBackoff) == .zero)
    }

    @Test func resourceExhaustedBacksOffTheMaximum() {
        let h = Harness()
        h.remoteStore.listen(F.queryTarget(2))
        h.datastore.watchStreamClose(error: DocError(.resourceExhausted, "quota"))
        #expect(h.scheduler.delay(of: .listenStreamConnectionBackoff) == .seconds(60))
    }

    @Test func disableAndEnableNetwork() {
        let h = Harness()
        h.listenAndAck(F.queryTarget(2))
        h.datastore.watchCurrent([2], resumeToken: F.token("resume-1000"))
        h.datastore.watchSnapshot(version: F.version(1_000))
        h.addWrites(2)
        #expect(h.remoteStore.outstandingWrites == 2)

        h.remoteStore.disableNetwork()
        #expect(!h.remoteStore.canUseNetwork)
        #expect(h.remoteStore.onlineState == .offline)
        #expect(!h.watch.isStarted && !h.write.isStarted)
        #expect(h.datastore.activeTargets.isEmpty)
        #expect(h.remoteStore.outstandingWrites == 0, "in-flight writes are dropped from the pipeline")
        #expect(h.remoteStore.listenTargets.keys.sorted() == [2], "targets are kept for the reconnect")

        // Nothing is sent while disabled.
        h.remoteStore.listen(F.queryTarget(4, collection: "later"))
        h.localStore.addSetBatch("docs/late")
        h.remoteStore.fillWritePipeline()
        #expect(h.watch.startCount == 1 && h.write.startCount == 1)
        #expect(h.remoteStore.outstandingWrites == 0)

        h.remoteStore.enableNetwork()
        #expect(h.remoteStore.onlineState == .unknown)
        #expect(h.watch.startCount == 2)
        #expect(h.datastore.activeTargets[2]?.resumeToken == F.token("resume-1000"))
        #expect(h.datastore.activeTargets[4] != nil)
        #expect(h.remoteStore.outstandingWrites == 3)
        #expect(h.sentBatchIDs == [1, 2, 1, 2, 3], "unacknowledged batches are sent again, in order")
        #expect(h.syncer.onlineStates == [.online, .offline, .unknown])
    }

    @Test func stopListeningWhileDisconnectedRevertsToUnknown() {
        let h = Harness()
        h.datastore.opensStreamsOnStart = false
        h.remoteStore.listen(F.queryTarget(2))
        h.scheduler.runTimer(named: "online_state_timeout")
        #expect(h.remoteStore.onlineState == .offline)
        h.remoteStore.stopListening(2)
        #expect(h.remoteStore.onlineState == .unknown)
    }

    @Test func shutdownStopsEverything() {
        let h = Harness()
        h.listenAndAck(F.queryTarget(2))
        h.addWrites(1)
        h.remoteStore.shutdown()
        #expect(!h.remoteStore.canUseNetwork)
        #expect(!h.watch.isStarted && !h.write.isStarted)
        #expect(h.remoteStore.onlineState == .unknown, "unknown, not offline: no cache fallback events")
        h.scheduler.runAll()
        #expect(h.watch.startCount == 1 && h.write.startCount == 1)
    }

    @Test func credentialChangeRestartsBothStreams() {
        let h = Harness()
        h.listenAndAck(F.queryTarget(2))
        h.addWrites(2)
        h.datastore.watchStreamClose(error: DocError(.unavailable, "x"))  // a backoff is pending

        // The new user's queue has one other batch.
        h.localStore.removeAllBatches()
        let other = h.localStore.addSetBatch("users/new")
        h.remoteStore.handleCredentialChange()

        #expect(h.watch.startCount == 2, "restarted at once, without waiting for the backoff")
        #expect(h.datastore.activeTargets.keys.sorted() == [2])
        #expect(h.write.startCount == 2)
        #expect(h.remoteStore.writePipeline.map(\.batchID) == [other.batchID])
        #expect(h.sentBatchIDs.last == other.batchID)
        #expect(h.remoteStore.onlineState == .unknown)
        h.scheduler.runAll()
        #expect(h.watch.startCount == 2, "the old backoff was cancelled")
    }

    @Test func credentialChangeWhileDisabledDoesNothing() {
        let h = Harness()
        h.remoteStore.listen(F.queryTarget(2))
        h.remoteStore.disableNetwork()
        h.remoteStore.handleCredentialChange()
        #expect(!h.remoteStore.canUseNetwork)
        #expect(h.watch.startCount == 1)
    }
}

@Suite("Remote store: write pipeline", .cpuBound)
struct RemoteStoreWriteTests {
    @Test func atMostTenBatchesInFlightInOrder() {
        let h = Harness()
        h.addWrites(15)
        #expect(h.remoteStore.outstandingWrites == RemoteStore.maxPendingWrites)
        #expect(h.sentBatchIDs == Array(1...10))
        #expect(h.write.handshakes.count == 1)
        #expect(h.datastore.writeStreamRequestCount == 11)

        h.remoteStore.fillWritePipeline()
        #expect(h.sentBatchIDs == Array(1...10), "a full pipeline takes nothing more")
    }

    @Test func acknowledgementsPopInOrderAndRefill() {
        let h = Harness()
        h.addWrites(12)
        h.datastore.writeAck(version: F.version(100))
        #expect(h.syncer.acknowledgedBatchIDs == [1])
        #expect(h.sentBatchIDs.last == 11, "the freed slot is refilled")
        #expect(h.remoteStore.outstandingWrites == 10)

        for v in 101...111 { h.datastore.writeAck(version: F.version(Int64(v))) }
        #expect(h.syncer.acknowledgedBatchIDs == Array(1...12))
        // The acknowledged batches are still queued while the pipeline is refilled: none of
        // them is sent again, even when the pipeline is empty.
        #expect(h.sentBatchIDs == Array(1...12))
        #expect(h.remoteStore.outstandingWrites == 0)
        #expect(h.write.markIdleCount >= 1, "an empty pipeline marks the stream idle")
        #expect(h.scheduler.runTimer(named: "write_stream_idle"))
        #expect(!h.write.isStarted)
        #expect(h.scheduler.pending.isEmpty, "an idle close with nothing to write is not retried")
    }

    @Test func theNextBatchesLeaveBeforeTheAcknowledgementIsStored() {
        let h = Harness()
        h.addWrites(12)
        var sentWhenAcknowledging: [[BatchID]] = []
        h.syncer.onSuccessfulWrites = { _ in sentWhenAcknowledging.append(h.sentBatchIDs) }
        h.datastore.writeAck(version: F.version(100))
        #expect(sentWhenAcknowledging == [Array(1...11)], "batch 11 left before batch 1's acknowledgement was stored")
    }

    @Test func acknowledgementCarriesResultsAndStreamToken() {
        let h = Harness()
        h.localStore.addBatch([.set(F.key("docs/a"), ObjectValue(["v": 1])), .delete(F.key("docs/b"))])
        h.remoteStore.fillWritePipeline()
        h.datastore.writeAck(
            version: F.version(500), results: [MutationResult(version: F.version(500)), MutationResult(version: .none)],
            streamToken: F.token("after-1"))

        let result = try! #require(h.syncer.acknowledgedWrites.first)
        #expect(result.commitVersion == F.version(500))
        #expect(result.mutationResults.count == 2)
        #expect(result.streamToken == F.token("after-1"))
        #expect(result.docVersions == [F.key("docs/a"): F.version(500), F.key("docs/b"): F.version(500)])
        #expect(h.localStore.lastStreamToken == F.token("after-1"))
    }

    @Test func handshakeStoresTheStreamTokenAndPrecedesWrites() {
        let h = Harness(start: false)
        h.datastore.completesHandshakes = false
        h.localStore.setLastStreamToken(F.token("saved"))
        h.localStore.addSetBatch("docs/a")
        h.remoteStore.start()

        #expect(h.write.handshakes == [F.token("saved")], "the saved token is sent with the handshake")
        #expect(h.datastore.sentWrites.isEmpty, "no write before the handshake completes")
        h.localStore.addSetBatch("docs/b")
        h.remoteStore.fillWritePipeline()
        #expect(h.datastore.sentWrites.isEmpty)

        h.write.completeHandshake(streamToken: F.token("fresh"))
        #expect(h.localStore.lastStreamToken == F.token("fresh"))
        #expect(h.sentBatchIDs == [1, 2])
    }

    @Test func permanentErrorRejectsTheHeadBatchAndContinues() {
        let h = Harness()
        h.addWrites(3)
        let denied = DocError(.permissionDenied, "no")
        h.datastore.failWrite(error: denied)

        #expect(h.syncer.rejectedBatchIDs == [1])
        #expect(h.syncer.rejectedWrites.first?.error == denied)
        #expect(h.write.startCount == 2, "restarted at once: a bad request is no reason to back off")
        #expect(h.sentBatchIDs == [1, 2, 3, 2, 3])
        h.datastore.writeAck(version: F.version(10))
        #expect(h.syncer.acknowledgedBatchIDs == [2])
    }

    @Test func transientErrorRetriesTheSameBatchAfterBackoff() {
        let h = Harness()
        h.addWrites(2)
        h.datastore.failWrite(error: DocError(.unavailable, "down"))

        #expect(h.syncer.rejectedWrites.isEmpty)
        #expect(h.remoteStore.outstandingWrites == 2)
        #expect(!h.write.isStarted, "waits for the backoff")
        #expect(h.scheduler.delay(of: .writeStreamConnectionBackoff) == .zero)
        #expect(h.scheduler.runTimer(named: "write_stream_connection_backoff"))
        #expect(h.write.startCount == 2)
        #expect(h.sentBatchIDs == [1, 2, 1, 2], "both batches are sent again; the server dedupes by batch id")

        h.datastore.failWrite(error: DocError(.unavailable, "down"))
        #expect(h.scheduler.delay(of: .writeStreamConnectionBackoff) == .seconds(1), "the second retry waits longer")
        h.scheduler.runTimer(named: "write_stream_connection_backoff")
        h.datastore.writeAck(version: F.version(7))
        #expect(h.syncer.acknowledgedBatchIDs == [1])
    }

    @Test(arguments: [
        DocError.Code.aborted, .cancelled, .unknown, .deadlineExceeded, .resourceExhausted, .internal, .unavailable,
        .unauthenticated,
    ])
    func transientCodesAreRetried(code: DocError.Code) {
        let h = Harness()
        h.addWrites(1)
        h.datastore.failWrite(error: DocError(code, "retry me"))
        #expect(h.syncer.rejectedWrites.isEmpty)
        #expect(h.remoteStore.outstandingWrites == 1)
        h.scheduler.runTimer(named: "write_stream_connection_backoff")
        #expect(h.sentBatchIDs == [1, 1])
    }

    @Test(arguments: [
        DocError.Code.invalidArgument, .notFound, .alreadyExists, .permissionDenied, .failedPrecondition, .outOfRange,
        .unimplemented, .dataLoss,
    ])
    func permanentCodesAreRejected(code: DocError.Code) {
        let h = Harness()
        h.addWrites(1)
        h.datastore.failWrite(error: DocError(code, "rejected"))
        #expect(h.syncer.rejectedBatchIDs == [1])
        #expect(h.remoteStore.outstandingWrites == 0)
    }

    @Test func ackAfterAPermanentErrorIsNotMisattributed() {
        let h = Harness()
        h.addWrites(2)
        h.datastore.failWrite(error: DocError(.failedPrecondition, "stale"))
        h.datastore.writeAck(version: F.version(3))
        #expect(h.syncer.rejectedBatchIDs == [1])
        #expect(h.syncer.acknowledgedBatchIDs == [2])
        #expect(h.localStore.queue.isEmpty)
    }

    @Test func permanentHandshakeErrorClearsTheStreamToken() {
        let h = Harness(start: false)
        h.datastore.completesHandshakes = false
        h.localStore.setLastStreamToken(F.token("too-old"))
        h.localStore.addSetBatch("docs/a")
        h.remoteStore.start()
        h.datastore.failWrite(error: DocError(.invalidArgument, "bad token"))

        #expect(h.localStore.lastStreamToken.isEmpty)
        #expect(h.syncer.rejectedWrites.isEmpty, "a handshake failure rejects no write")
        h.scheduler.runTimer(named: "write_stream_connection_backoff")
        #expect(h.write.handshakes == [F.token("too-old"), []])
    }

    @Test(arguments: [DocError.Code.unavailable, .aborted])
    func handshakeErrorsAndTheStreamToken(code: DocError.Code) {
        let h = Harness(start: false)
        h.datastore.completesHandshakes = false
        h.localStore.setLastStreamToken(F.token("kept?"))
        h.localStore.addSetBatch("docs/a")
        h.remoteStore.start()
        h.datastore.failWrite(error: DocError(code, "x"))
        // `aborted` is retried for writes but is permanent for the handshake.
        #expect(h.localStore.lastStreamToken.isEmpty == (code == .aborted))
    }

    @Test func invalidWriteResultIsRetriedNotAcknowledged() {
        let h = Harness()
        h.addWrites(1)
        h.datastore.writeAck(version: F.version(5), results: [])
        #expect(h.syncer.acknowledgedWrites.isEmpty)
        #expect(h.syncer.rejectedWrites.isEmpty)
        #expect(h.remoteStore.outstandingWrites == 1)
        h.scheduler.runTimer(named: "write_stream_connection_backoff")
        #expect(h.sentBatchIDs == [1, 1])
        h.datastore.writeAck(version: F.version(5))
        #expect(h.syncer.acknowledgedBatchIDs == [1])
    }

    @Test func writeStreamRequestCountsMatchTheSpecTests() {
        // write_spec_test "Writes are resent after network disconnect".
        let h = Harness()
        h.addWrites(1)
        #expect(h.datastore.writeStreamRequestCount == 2)
        h.remoteStore.disableNetwork()
        #expect(h.datastore.writeStreamRequestCount == 3)
        h.remoteStore.enableNetwork()
        #expect(h.datastore.writeStreamRequestCount == 5)
        #expect(h.remoteStore.outstandingWrites == 1)

        // "Writes are not re-sent after disable/enable network".
        h.datastore.writeAck(version: F.version(1_000))
        h.remoteStore.disableNetwork()
        #expect(h.datastore.writeStreamRequestCount == 6)
        h.remoteStore.enableNetwork()
        #expect(h.datastore.writeStreamRequestCount == 6)
    }
}

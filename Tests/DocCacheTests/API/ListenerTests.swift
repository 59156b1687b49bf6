import DocTestSupport
import Testing
import DocModel
@testable import DocCache

@Suite("Listeners")
struct ListenerTests {
    @Test func limitedQueryEventsWithIndexesAndAPendingWritePushingADocumentOut() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let rooms = try store.collection("rooms")
        let recorder = Recorder<QuerySnapshot>()
        let registration = try await rooms.order(by: "n").limit(to: 2).addSnapshotListener { recorder.record($0) }

        await store.callbacksDelivered()
        #expect(recorder.count == 1, "the cached (empty) snapshot is queued for the callback before addSnapshotListener returns")
        #expect(recorder.last?.isEmpty == true)
        #expect(recorder.last?.metadata.isFromCache == true)

        try await rooms.document("b").setData(["n": 2])
        await store.callbacksDelivered()
        #expect(recorder.last?.changeSummary == ["added b -1->0"])
        #expect(recorder.last?.metadata.hasPendingWrites == true)
        try await rooms.document("c").setData(["n": 3])
        await store.callbacksDelivered()
        #expect(recorder.last?.ids == ["b", "c"])
        #expect(recorder.last?.changeSummary == ["added c -1->1"])

        let before = recorder.count
        try await rooms.document("d").setData(["n": 4])
        await store.callbacksDelivered()
        #expect(recorder.count == before, "a document outside the window raises no event")

        try await rooms.document("a").setData(["n": 1])
        await store.callbacksDelivered()
        #expect(recorder.last?.ids == ["a", "b"])
        #expect(Set(recorder.last?.changeSummary ?? []) == ["removed c 1->-1", "added a -1->0"])

        try await rooms.document("a").setData(["n": 10])
        await store.callbacksDelivered()
        #expect(recorder.last?.ids == ["b", "c"], "moving a out of the window refills it from the cache")

        try await rooms.document("b").updateData(["label": "x"])
        await store.callbacksDelivered()
        #expect(recorder.last?.changeSummary == ["modified b 0->0"])
        registration.remove()
        let count = recorder.count
        try await rooms.document("b").updateData(["label": "y"])
        await store.callbacksDelivered()
        #expect(recorder.count == count, "no delivery after remove()")
        await store.close()
    }

    @Test func limitToLastKeepsTheEndOfTheOrder() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let rooms = try store.collection("rooms")
        for n in 1...5 { try await rooms.document("r\(n)").setData(["n": .value(.integer(Int64(n)))]) }
        let recorder = Recorder<QuerySnapshot>()
        let registration = try await rooms.order(by: "n").limit(toLast: 2).addSnapshotListener { recorder.record($0) }
        await store.callbacksDelivered()
        #expect(recorder.last?.ids == ["r4", "r5"])
        try await rooms.document("r6").setData(["n": 6])
        await store.callbacksDelivered()
        #expect(recorder.last?.ids == ["r5", "r6"])
        registration.remove()
        await store.close()
    }

    @Test func tombstonesAreRemovedUnlessTheQueryIncludesDeleted() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let rooms = try store.collection("rooms")
        try await rooms.document("a").setData(["n": 1])
        try await rooms.document("b").setData(["n": 2])
        let live = Recorder<QuerySnapshot>(), all = Recorder<QuerySnapshot>()
        let r1 = try await rooms.order(by: "n").limit(to: 10).addSnapshotListener { live.record($0) }
        let r2 = try await rooms.includeDeleted().order(by: "n").limit(to: 10).addSnapshotListener { all.record($0) }
        try await rooms.document("a").delete()
        await store.callbacksDelivered()
        #expect(live.last?.changeSummary == ["removed a 0->-1"])
        #expect(live.last?.ids == ["b"])
        #expect(all.last?.ids == ["a", "b"])
        #expect(all.last?.documents.first?.isDeleted == true)
        let docRecorder = Recorder<DocumentSnapshot>()
        let r3 = try await rooms.document("a").addSnapshotListener { docRecorder.record($0) }
        await store.callbacksDelivered()
        #expect(docRecorder.last?.exists == false && docRecorder.last?.isDeleted == true)
        r1.remove(); r2.remove(); r3.remove()
        await store.close()
    }

    @Test func unboundedListenersAreRefused() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u",
                                                 settings: StoreSettings(maxListenLimit: 100))
        let rooms = try store.collection("rooms")
        do {
            _ = try await rooms.query.addSnapshotListener { _ in }
            Issue.record("an unbounded listener was accepted")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("unbounded"))
        }
        do {
            _ = try await rooms.limit(to: 101).addSnapshotListener { _ in }
            Issue.record("a listener above the cap was accepted")
        } catch {
            #expect(error.message.contains("maxListenLimit"))
        }
        var failed = false
        do {
            for try await _ in rooms.query.snapshots() {}
        } catch {
            // The sequence throws DocError itself (typed), no cast needed.
            failed = error.code == .invalidArgument
        }
        #expect(failed, "the async sequence fails with the same error")
        let registration = try await rooms.document("r1").addSnapshotListener { _ in }
        registration.remove()
        #expect(await store.core.liveListenerCount <= 1)
        await store.close()
    }

    @Test func scopeDetachAndReattachDeliversTheCachedSnapshotFirst() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let rooms = try store.collection("rooms")
        let scope = store.makeListenerScope()
        let recorder = Recorder<QuerySnapshot>()
        _ = try await rooms.limit(to: 10).addSnapshotListener(scope: scope) { recorder.record($0) }
        try await rooms.document("a").setData(["n": 1])
        await store.callbacksDelivered()
        #expect(recorder.count == 2)
        await scope.detach()
        try await rooms.document("b").setData(["n": 2])
        await store.callbacksDelivered()
        #expect(recorder.count == 2, "a detached scope delivers nothing")
        try await scope.reattach()
        await store.callbacksDelivered()
        #expect(recorder.count == 3)
        #expect(recorder.last?.ids == ["a", "b"])
        #expect(recorder.last?.metadata.isFromCache == true)
        #expect(recorder.last?.changeSummary == ["added a -1->0", "added b -1->1"], "a fresh first snapshot")
        await scope.removeAll()
        #expect(await store.core.liveListenerCount == 0)
        await store.close()
    }

    @Test func cancellingAnAsyncSequenceRemovesItsListener() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let query = try store.collection("rooms").limit(to: 10)
        var tasks: [Task<Int, Never>] = []
        for _ in 0..<20 {
            tasks.append(Task {
                var seen = 0
                do { for try await _ in query.snapshots() { seen += 1 } } catch {}
                return seen
            })
        }
        #expect(await eventually { await store.core.liveListenerCount == 20 })
        for task in tasks { task.cancel() }
        for task in tasks { #expect(await task.value >= 0) }
        #expect(await eventually { await store.core.liveListenerCount == 0 }, "no listener leaks after cancellation")
        await store.close()
    }

    @Test func documentSequenceYieldsEveryChange() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let ref = try store.document("rooms/a")
        let stream = ref.snapshots()
        var iterator = stream.makeAsyncIterator()
        let first = try await iterator.next()
        #expect(first?.exists == false)
        try await ref.setData(["n": 1])
        let second = try await iterator.next()
        #expect(second?.get("n") == .integer(1))
        #expect(second?.metadata.hasPendingWrites == true)
        await store.close()
        await #expect(throws: (any Error).self) { _ = try await iterator.next() }
    }
}

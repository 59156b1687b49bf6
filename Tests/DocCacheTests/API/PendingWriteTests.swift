import DocTestSupport
import Testing
import DocModel
@testable import DocCache

@Suite("Pending writes")
struct PendingWriteTests {
    @Test func countListAndRevert() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let counts = Recorder<Int>()
        let observer = Task { for await c in store.pendingWriteCountUpdates() { counts.record(.success(c)) } }
        #expect(await eventually { counts.values == [0] })

        let a = try store.document("rooms/a")
        try await a.setData(["n": 1])
        let second = try await a.updateData(["n": 2])
        var batch = store.batch()
        try batch.delete(try store.document("rooms/b"))
        try batch.setData(["x": true], for: try store.document("rooms/c"), merge: true)
        try await batch.commit()

        #expect(await store.pendingWriteCount == 3)
        let pending = try await store.pendingWrites()
        #expect(pending.map(\.paths) == [["rooms/a"], ["rooms/a"], ["rooms/b", "rooms/c"]])
        #expect(pending.map(\.kinds) == [[.set], [.update], [.delete, .merge]])
        #expect(pending.map(\.batchID) == pending.map(\.batchID).sorted())

        let recorder = Recorder<DocumentSnapshot>()
        let registration = try await a.addSnapshotListener { recorder.record($0) }
        await store.callbacksDelivered()
        #expect(recorder.last?.get("n") == .integer(2))
        try await store.revert(second.batchID)
        await store.callbacksDelivered()
        #expect(recorder.last?.get("n") == .integer(1), "revert restores the local view and listeners update")
        do {
            _ = try await second.committed
            Issue.record("a reverted write reported a commit")
        } catch {
            #expect(error.code == .cancelled)
        }
        #expect(await store.pendingWriteCount == 2)
        #expect(await eventually { counts.values == [0, 1, 2, 3, 2] }, "counts: \(counts.values)")
        await #expect(throws: DocError.self) { try await store.revert(9999) }
        registration.remove()
        observer.cancel()
        await store.close()
    }

    /// A store without a server never answers: a task that awaits `committed` or
    /// `waitForPendingWrites()` ends when it is cancelled, and the write stays queued.
    @Test func aCancelledWaitEndsAndTheWriteStaysQueued() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let handle = try await store.document("rooms/a").setData(["n": 1])

        let commit = Task { try await handle.committed }
        let pending = Task { try await store.waitForPendingWrites() }
        // Both are waiting (or about to); either way cancelling ends them.
        commit.cancel()
        pending.cancel()
        let commitError = await #expect(throws: DocError.self) { _ = try await commit.value }
        #expect(commitError?.code == .cancelled)
        #expect(commitError?.message.contains("stays queued") == true, "\(String(describing: commitError))")
        let pendingError = await #expect(throws: DocError.self) { try await pending.value }
        #expect(pendingError?.code == .cancelled)

        // Waiting first, then cancelled.
        let waiting = Task { try await handle.committed }
        let waitingForAll = Task { try await store.waitForPendingWrites() }
        try await Task.sleep(for: .milliseconds(50))
        waiting.cancel()
        waitingForAll.cancel()
        await #expect(throws: DocError.self) { _ = try await waiting.value }
        await #expect(throws: DocError.self) { try await waitingForAll.value }

        #expect(!handle.isCommitted)
        #expect(try await store.pendingWrites().map(\.batchID) == [handle.batchID], "the write is still queued")
        // Another task still waits on the same write: cancelling one waiter ends only that one.
        let other = Task { try await handle.committed }
        try await Task.sleep(for: .milliseconds(50))
        let stillWaiting = Task { try await handle.committed }
        stillWaiting.cancel()
        await #expect(throws: DocError.self) { _ = try await stillWaiting.value }
        try await store.revert(handle.batchID)
        let reverted = await #expect(throws: DocError.self) { _ = try await other.value }
        #expect(reverted?.message.contains("stays queued") == false, "the other waiter got the revert, not a cancellation")
        await store.close()
    }

    @Test func pendingWritesSurviveReopenInOrder() async throws {
        let dir = TemporaryDirectory()
        var store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        for i in 0..<30 {
            try await store.document("notes/n\(i)").setData(["i": .value(.integer(Int64(i)))])
        }
        let before = try await store.pendingWrites()
        await store.close()
        store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let after = try await store.pendingWrites()
        #expect(after == before)
        let snap = try await store.collection("notes").getDocuments(source: .cache)
        #expect(snap.count == 30)
        #expect(snap.documents.allSatisfy { $0.metadata.hasPendingWrites })
        let next = try await store.document("notes/next").setData(["i": 30])
        #expect(next.batchID > after.last!.batchID, "batch ids keep increasing across restarts")
        await store.close()
    }
}

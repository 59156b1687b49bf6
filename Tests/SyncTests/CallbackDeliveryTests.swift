import DocModel
import DocTestSupport
import Foundation
import Synchronization
import Testing
@testable import DocCache

/// Listener callbacks run on the store's callback queue, never inside the engine: a slow
/// callback does not hold writes or sync up, and a removed listener gets nothing more, not
/// even events already queued for it.
@Suite("Callback delivery", .timeLimit(.minutes(2)))
struct CallbackDeliveryTests {
    @Test func aCallbackSleeping200msDoesNotHoldUpAThousandWritesOrTheirSync() async throws {
        try await SyncHarness.run { harness in
            let device = try await harness.openStore(device: "phone")
            let started = Mutex(0)
            let registration = try await device.collection("events").limit(to: 5).addSnapshotListener { _ in
                started.withLock { $0 += 1 }
                Thread.sleep(forTimeInterval: 0.2)
            }
            defer { registration.remove() }
            var handles: [WriteHandle] = []
            for i in 0..<1_000 {
                handles.append(try await device.document("events/e\(i)").setData(["i": .value(.integer(Int64(i)))]))
            }
            try await device.waitForPendingWrites()
            for handle in handles.suffix(3) { _ = try await handle.committed }
            // Every write was accepted and acknowledged; had the engine waited for the callback
            // (200 ms per snapshot, one snapshot per write), that alone would have taken over 200 s
            // and the callback would have run once per write by now.
            let ran = started.withLock { $0 }
            #expect(ran >= 1, "the listener is live")
            #expect(ran < 100, "the callback ran \(ran) times while 1,000 writes were accepted and synced")
            #expect(await device.pendingWriteCount == 0)
        }
    }

    @Test func aRemovedListenerGetsNoEventAlreadyQueuedForIt() async throws {
        let directory = NSTemporaryDirectory() + "doccache-callbacks-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try await DocumentStore.open(directory: directory, tenant: "acme", user: "u1")
        let calls = Mutex(0)
        let firstCallRunning = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let registration = try await store.document("notes/a").addSnapshotListener { _ in
            let n = calls.withLock { $0 += 1; return $0 }
            if n == 1 {
                firstCallRunning.signal()
                release.wait()
            }
        }
        // The first callback holds the callback queue; three more events queue up behind it.
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async { firstCallRunning.wait(); c.resume() }
        }
        for n in 1...3 { _ = try await store.document("notes/a").setData(["n": .value(.integer(Int64(n)))]) }
        registration.remove()
        release.signal()
        await store.callbacksDelivered()
        #expect(calls.withLock { $0 } == 1, "the three queued events were dropped")
        await store.close()
    }

    @Test func callbacksRunOnTheQueueTheAppChose() async throws {
        let directory = NSTemporaryDirectory() + "doccache-callbacks-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let queue = DispatchQueue(label: "app.ui")
        let key = DispatchSpecificKey<String>()
        queue.setSpecific(key: key, value: "app.ui")
        let store = try await DocumentStore.open(directory: directory, tenant: "acme", user: "u1", callbackQueue: queue)
        #expect(store.callbackQueue === queue)
        let seen = Mutex<[String?]>([])
        let registration = try await store.document("notes/a").addSnapshotListener { _ in
            seen.withLock { $0.append(DispatchQueue.getSpecific(key: key)) }
        }
        _ = try await store.document("notes/a").setData(["n": 1])
        await store.callbacksDelivered()
        #expect(seen.withLock { $0 } == ["app.ui", "app.ui"])
        registration.remove()
        await store.close()
    }
}

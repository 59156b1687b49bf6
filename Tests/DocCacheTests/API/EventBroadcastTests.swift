@testable import DocCache
import DocTestSupport
import Testing

@Suite("EventBroadcast")
struct EventBroadcastTests {
    @Test func anEventYieldedRightAfterAskingForTheStreamIsInIt() async {
        let broadcast = EventBroadcast<Int>()
        let first = broadcast.stream()
        broadcast.yield(1)
        let second = broadcast.stream()
        broadcast.yield(2)
        broadcast.finish()
        var seenByFirst: [Int] = []
        for await event in first { seenByFirst.append(event) }
        var seenBySecond: [Int] = []
        for await event in second { seenBySecond.append(event) }
        #expect(seenByFirst == [1, 2])
        #expect(seenBySecond == [2], "an observer sees the events after it registered, not before")
    }

    @Test func aStreamAskedForAfterFinishEndsAtOnce() async {
        let broadcast = EventBroadcast<Int>()
        broadcast.finish()
        let late = broadcast.stream()
        broadcast.yield(3)
        var seen: [Int] = []
        for await event in late { seen.append(event) }
        #expect(seen.isEmpty)
        #expect(broadcast.observerCount == 0)
    }

    @Test func anObserverThatStopsListeningIsRemoved() async {
        let broadcast = EventBroadcast<Int>()
        let task = Task {
            for await _ in broadcast.stream() {}
        }
        #expect(await eventually { broadcast.observerCount == 1 })
        task.cancel()
        #expect(await eventually { broadcast.observerCount == 0 }, "a cancelled observer's continuation is still registered")
        _ = await task.value
    }

    @Test func aStoresErrorStreamEndsWhenTheStoreCloses() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let errors = store.writeErrors()
        let reader = Task { () -> Int in
            var count = 0
            for await _ in errors { count += 1 }
            return count
        }
        _ = try await store.document("rooms/a").setData(["n": 1])
        await store.close()
        #expect(await reader.value == 0, "no write was rejected")
        var late = 0
        for await _ in store.writeErrors() { late += 1 }
        #expect(late == 0, "a stream asked for after close ends at once")
    }
}

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

    @Test func aReplayingBroadcastStartsEveryStreamWithTheLatestValue() async {
        let broadcast = EventBroadcast(replayingLatest: 0)
        let first = broadcast.stream()
        broadcast.yield(1)
        broadcast.yield(2)
        let second = broadcast.stream()
        broadcast.yield(3)
        broadcast.finish()
        broadcast.yield(4)
        let late = broadcast.stream()
        var seen: [[Int]] = []
        for stream in [first, second, late] {
            var values: [Int] = []
            for await value in stream { values.append(value) }
            seen.append(values)
        }
        #expect(seen == [[0, 1, 2, 3], [2, 3], [3]], "a stream starts with the state as it is, then every change; nothing after finish")
        #expect(broadcast.observerCount == 0)
    }

    @Test func aStoresStateStreamsStartWithTheStateWhenAskedFor() async throws {
        let dir = TemporaryDirectory()
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        // Asked for right before a write: the stream holds the count before and after it
        // (with an asynchronous registration the first value could already be 1).
        let counts = store.pendingWriteCountUpdates()
        let states = store.onlineStateUpdates()
        _ = try await store.document("rooms/a").setData(["n": 1])
        _ = try await store.document("rooms/b").setData(["n": 2])
        await store.close()
        var seenCounts: [Int] = []
        for await count in counts { seenCounts.append(count) }
        #expect(seenCounts == [0, 1, 2])
        var seenStates: [OnlineState] = []
        for await state in states { seenStates.append(state) }
        // Offline from the start (no server); closing shuts the remote store down (unknown).
        #expect(seenStates == [.offline, .unknown])
        var late: [Int] = []
        for await count in store.pendingWriteCountUpdates() { late.append(count) }
        #expect(late == [2], "after close: the last count, then the end")
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

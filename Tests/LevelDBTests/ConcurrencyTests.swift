import LevelDB
import Synchronization
import Testing

@Suite("Concurrent use")
struct ConcurrencyTests {
    @Test("many tasks read and write the same database at once")
    func concurrentReadersAndWriters() async throws {
        try await withTemporaryDatabase { db, _ in
            let writers = 8
            let keysPerWriter = 250
            // Shared data that readers check throughout.
            for index in 0..<100 { try db.put("shared-\(index)", "value-\(index)") }

            let readErrors = try await withThrowingTaskGroup(of: Int.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        for index in 0..<keysPerWriter {
                            let key = "w\(writer)-\(index)"
                            if index % 10 == 0 {
                                var batch = WriteBatch()
                                batch.put(key, "v\(index)")
                                batch.put(key + "-batch", "b\(index)")
                                try db.write(batch)
                            } else {
                                try db.put(key, "v\(index)")
                            }
                            // Each writer reads its own writes back.
                            guard try db.get(key) == "v\(index)" else { return 1 }
                            if index % 50 == 49 { try db.delete("w\(writer)-\(index - 1)") }
                        }
                        return 0
                    }
                }
                for reader in 0..<8 {
                    group.addTask {
                        var errors = 0
                        for round in 0..<300 {
                            let index = (round * 7 + reader) % 100
                            if try db.get("shared-\(index)") != "value-\(index)" { errors += 1 }
                            if round % 50 == 0 {
                                let snapshot = try db.snapshot()
                                let shared = try db.entries(withPrefix: bytes("shared-"), options: ReadOptions(snapshot: snapshot)).collect()
                                if shared.count != 100 { errors += 1 }
                            }
                        }
                        return errors
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(readErrors == 0)

            for writer in 0..<writers {
                for index in 0..<keysPerWriter {
                    let key = "w\(writer)-\(index)"
                    let deleted = index % 50 == 48
                    #expect(try db.get(key) == (deleted ? nil : "v\(index)"), "\(key)")
                    if index % 10 == 0 { #expect(try db.get(key + "-batch") == "b\(index)") }
                }
            }
            let expectedCount = 100 + writers * (keysPerWriter - keysPerWriter / 50 + keysPerWriter / 10)
            #expect(try db.entries().collect().count == expectedCount)
        }
    }

    @Test("closing while other tasks are using the database: each call succeeds or throws .closed")
    func closeDuringUse() async throws {
        try await withTemporaryPath { path in
            let db = try Database.open(path: path)
            for index in 0..<200 { try db.put("key-\(index)", "value-\(index)") }
            let started = Counter()
            let outcomes = await withTaskGroup(of: (ok: Int, closed: Int, other: Int).self) { group in
                for worker in 0..<6 {
                    group.addTask {
                        var ok = 0, closed = 0, other = 0
                        started.value.add(1, ordering: .relaxed)
                        // Runs until the close is observed (bounded, should the close never come).
                        let giveUp = ContinuousClock.now + .seconds(120)
                        var round = 0
                        while ContinuousClock.now < giveUp {
                            round += 1
                            // Let the other tasks (and the closer) run on the small thread pool.
                            if round % 32 == 0 { await Task.yield() }
                            do {
                                switch round % 4 {
                                case 0: _ = try db.get("key-\(round % 200)")
                                case 1: try db.put("w\(worker)-\(round)", "x")
                                case 2:
                                    let cursor = try db.cursor()
                                    try cursor.seekToFirst()
                                    _ = try cursor.entry()
                                    try cursor.next()
                                default: _ = try db.entries(withPrefix: bytes("key-1")).collect().count
                                }
                                ok += 1
                            } catch let error as LevelDBError where error.code == .closed {
                                closed += 1
                                break
                            } catch {
                                other += 1
                            }
                        }
                        return (ok, closed, other)
                    }
                }
                group.addTask {
                    while started.value.load(ordering: .relaxed) < 6 { await Task.yield() }
                    try? await Task.sleep(for: .milliseconds(50))
                    db.close()
                    return (0, 0, 0)
                }
                var total = (ok: 0, closed: 0, other: 0)
                for await outcome in group {
                    total.ok += outcome.ok
                    total.closed += outcome.closed
                    total.other += outcome.other
                }
                return total
            }
            #expect(outcomes.other == 0)
            #expect(outcomes.ok > 0)
            // Every worker ran into the close.
            #expect(outcomes.closed == 6)
            #expect(db.isClosed)
            // Everything that was written before the close is readable after reopening.
            let reopened = try Database.open(path: path)
            defer { reopened.close() }
            #expect(try reopened.get("key-199") == "value-199")
        }
    }
}

/// A counter shared by tasks.
private final class Counter: Sendable {
    let value = Atomic<Int>(0)
}

import Testing
@testable import DocCache
import DocModel
import LevelDB
import DocTestTraits

@Suite("Persistence transactions", .cpuBound)
struct TransactionTests {
    typealias F = PersistenceFixtures

    /// Keys in a private test table (tag 0xE0, unused by the schema).
    static func k(_ s: String) -> [UInt8] { [0xE0] + Array(s.utf8) }

    @Test func throwingBodyWritesNothing() throws {
        try F.withStore { p, _ in
            try p.run("seed") { txn throws(DocError) in txn.put(Self.k("kept"), [1]) }
            #expect(throws: DocError.self) {
                try p.run("fails") { txn throws(DocError) in
                    txn.put(Self.k("a"), [1])
                    txn.delete(Self.k("kept"))
                    txn.put(Self.k("b"), [2])
                    throw DocError(.aborted, "boom")
                }
            }
            try p.run("check") { txn throws(DocError) in
                #expect(try txn.get(Self.k("a")) == nil)
                #expect(try txn.get(Self.k("b")) == nil)
                #expect(try txn.get(Self.k("kept")) == [1])
            }
        }
    }

    @Test func committedBodyWritesEverythingDurably() throws {
        try F.withDirectory { dir in
            do {
                let p = try Persistence.open(directory: dir)
                try p.run("write", sync: true) { txn throws(DocError) in
                    for i in 0..<50 { txn.put(Self.k("key\(i)"), [UInt8(i)]) }
                    txn.delete(Self.k("key7"))
                }
                p.close()
            }
            let p = try Persistence.open(directory: dir)
            defer { p.close() }
            let values = try p.run("read") { txn throws(DocError) in
                try (0..<50).map { i throws(DocError) in try txn.get(Self.k("key\(i)")) }
            }
            for i in 0..<50 {
                #expect(values[i] == (i == 7 ? nil : [UInt8(i)]))
            }
        }
    }

    @Test func readsSeeOwnWrites() throws {
        try F.withStore { p, _ in
            try p.run("seed") { txn throws(DocError) in txn.put(Self.k("x"), [1]) }
            try p.run("rw") { txn throws(DocError) in
                #expect(try txn.get(Self.k("x")) == [1])
                txn.put(Self.k("x"), [2])
                #expect(try txn.get(Self.k("x")) == [2])
                txn.delete(Self.k("x"))
                #expect(try txn.get(Self.k("x")) == nil)
                txn.put(Self.k("y"), [])
                #expect(try txn.get(Self.k("y")) == [])
                #expect(txn.containsKey(withPrefix: Self.k("y")))
                #expect(!txn.containsKey(withPrefix: Self.k("x")))
            }
        }
    }

    @Test func writesNeverReadCommitInOrderTheLastWriteOfAKeyWinning() throws {
        try F.withStore { p, _ in
            try p.run("seed") { txn throws(DocError) in
                txn.put(Self.k("gone"), [9])
                txn.put(Self.k("twice"), [9])
            }
            // Only writes (the local-write path): the commit takes them in the order made.
            try p.run("writes only") { txn throws(DocError) in
                txn.put(Self.k("twice"), [1])
                txn.delete(Self.k("gone"))
                txn.put(Self.k("twice"), [2])
                txn.put(Self.k("back"), [1])
                txn.delete(Self.k("back"))
                txn.put(Self.k("back"), [3])
                txn.put(Self.k("dropped"), [4])
                txn.delete(Self.k("dropped"))
            }
            try p.run("check") { txn throws(DocError) in
                #expect(try txn.get(Self.k("twice")) == [2])
                #expect(try txn.get(Self.k("gone")) == nil)
                #expect(try txn.get(Self.k("back")) == [3])
                #expect(try txn.get(Self.k("dropped")) == nil)
            }
            // Writes, a read, more writes: both kinds end in the commit.
            try p.run("mixed") { txn throws(DocError) in
                txn.put(Self.k("m1"), [1])
                #expect(txn.bufferedWriteCount == 1)
                txn.put(Self.k("m2"), [2])
                txn.put(Self.k("m1"), [3])
                #expect(try txn.get(Self.k("m1")) == [3])
                txn.delete(Self.k("m2"))
                #expect(txn.bufferedWriteCount == 2)
            }
            try p.run("check mixed") { txn throws(DocError) in
                #expect(try txn.get(Self.k("m1")) == [3])
                #expect(try txn.get(Self.k("m2")) == nil)
            }
        }
    }

    @Test func mergedScansForwardAndReverse() throws {
        try F.withStore { p, _ in
            try p.run("seed") { txn throws(DocError) in
                for s in ["b", "d", "f", "h"] { txn.put(Self.k(s), F.bytes("old-" + s)) }
            }
            try p.run("merge") { txn throws(DocError) in
                txn.put(Self.k("a"), F.bytes("new-a"))   // before every stored key
                txn.put(Self.k("d"), F.bytes("new-d"))   // overwrites
                txn.delete(Self.k("f"))                  // hides a stored key
                txn.put(Self.k("g"), F.bytes("new-g"))   // between stored keys
                txn.delete(Self.k("z"))                  // deletes nothing
                txn.put(Self.k("i"), F.bytes("new-i"))   // after every stored key
                let expected = ["a": "new-a", "b": "old-b", "d": "new-d", "g": "new-g", "h": "old-h", "i": "new-i"]
                let forward = txn.scan(prefix: [0xE0]).map { String(decoding: $0.key.dropFirst(), as: UTF8.self) }
                #expect(forward == ["a", "b", "d", "g", "h", "i"])
                for entry in txn.scan(prefix: [0xE0]) {
                    let name = String(decoding: entry.key.dropFirst(), as: UTF8.self)
                    #expect(String(decoding: entry.value, as: UTF8.self) == expected[name])
                }
                let reverse = txn.scan(prefix: [0xE0], reverse: true).map { String(decoding: $0.key.dropFirst(), as: UTF8.self) }
                #expect(reverse == ["i", "h", "g", "d", "b", "a"])
                // Bounded ranges, both directions.
                let range = KeyRange(from: Self.k("b"), upTo: Self.k("h"))
                #expect(txn.scan(range).map(\.key) == ["b", "d", "g"].map(Self.k))
                #expect(txn.scan(range, reverse: true).map(\.key) == ["g", "d", "b"].map(Self.k))
                let closed = KeyRange(from: Self.k("c"), through: Self.k("h"))
                #expect(txn.scan(closed).map(\.key) == ["d", "g", "h"].map(Self.k))
                #expect(txn.scan(closed, reverse: true).map(\.key) == ["h", "g", "d"].map(Self.k))
                // Stopping early.
                #expect(Array(txn.scan(prefix: [0xE0]).prefix(2)).map(\.key) == ["a", "b"].map(Self.k))
            }
        }
    }

    /// A key under prefix 0xE0 made of `parts` pieces that sort close together (0x00, 0xFF, a
    /// key and its extensions).
    static func randomKey(_ rng: inout PersistenceRNG, parts: Range<Int>) -> [UInt8] {
        let alphabet: [[UInt8]] = [[0], [1], [0x7F], [0xFF], [0, 0], [1, 0xFF], [0xFF, 0xFF], [2, 3], [0x80]]
        return [0xE0] + (0..<rng.int(parts)).flatMap { _ in rng.pick(alphabet) }
    }

    /// Deletes `key` (with `deleteChance`) or puts a random one-byte value, in `txn` and in
    /// `model` alike.
    static func randomWrite(
        _ key: [UInt8], deleteChance: Double, _ rng: inout PersistenceRNG, _ txn: PersistenceTransaction,
        _ model: inout [[UInt8]: [UInt8]]
    ) {
        if rng.chance(deleteChance) {
            txn.delete(key)
            model[key] = nil
        } else {
            let value = [UInt8(rng.int(0..<256))]
            txn.put(key, value)
            model[key] = value
        }
    }

    /// The model's keys from `lo` up to `hi` (`hi` too when `inclusive`), ascending.
    static func keys(of model: [[UInt8]: [UInt8]], from lo: [UInt8], to hi: [UInt8], inclusive: Bool) -> [[UInt8]] {
        model.keys.filter { k in
            compareKeys(k, lo) >= 0 && (inclusive ? compareKeys(k, hi) <= 0 : compareKeys(k, hi) < 0)
        }.sorted { compareKeys($0, $1) < 0 }
    }

    /// Random stored keys and random buffered puts and deletes: every merged scan and every
    /// point read equals the model dictionary's.
    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func mergedScansMatchModel(seed: UInt64) throws {
        var rng = PersistenceRNG(seed: seed)
        func randomKey(_ rng: inout PersistenceRNG) -> [UInt8] { Self.randomKey(&rng, parts: 0..<3) }
        try F.withStore { p, _ in
            var model: [[UInt8]: [UInt8]] = [:]
            try p.run("seed") { txn throws(DocError) in
                for _ in 0..<30 {
                    let key = randomKey(&rng)
                    let value = [UInt8(rng.int(0..<256))]
                    txn.put(key, value)
                    model[key] = value
                }
            }
            try p.run("ops") { txn throws(DocError) in
                for round in 0..<40 {
                    let key = randomKey(&rng)
                    Self.randomWrite(key, deleteChance: 0.4, &rng, txn, &model)
                    // Point reads between the writes see the latest write of a key, whichever
                    // sorted run of the buffer holds it, or the stored value.
                    if rng.chance(0.5) {
                        let probe = rng.chance(0.5) ? key : randomKey(&rng)
                        #expect(try txn.get(probe) == model[probe], "seed \(seed) round \(round)")
                    }
                    guard round % 5 == 0 else { continue }
                    let a = randomKey(&rng), b = randomKey(&rng)
                    let (lo, hi) = compareKeys(a, b) <= 0 ? (a, b) : (b, a)
                    for (range, inclusive) in [(KeyRange(from: lo, upTo: hi), false), (KeyRange(from: lo, through: hi), true)] {
                        let expected = Self.keys(of: model, from: lo, to: hi, inclusive: inclusive)
                        let forward = Array(txn.scan(range))
                        #expect(forward.map(\.key) == expected, "seed \(seed) round \(round)")
                        #expect(forward.map(\.value) == expected.map { model[$0]! }, "seed \(seed) round \(round)")
                        #expect(txn.scan(range, reverse: true).map(\.key) == expected.reversed(), "seed \(seed) round \(round)")
                    }
                    let all = model.keys.sorted { compareKeys($0, $1) < 0 }
                    #expect(txn.scan(prefix: [0xE0]).map(\.key) == all, "seed \(seed) round \(round)")
                }
            }
            // What was committed is the model.
            let committed = try p.run("read") { txn throws(DocError) in Array(txn.scan(prefix: [0xE0])) }
            #expect(committed.map(\.key) == model.keys.sorted { compareKeys($0, $1) < 0 })
        }
    }

    /// Bursts of 1–40 buffered writes between reads, over ~800 keys and ~500 writes in one
    /// transaction (the buffer's sorted runs are made and merged many times over): every
    /// point read and range scan equals the model dictionary's.
    @Test(arguments: [11, 12, 13] as [UInt64])
    func readsAfterBurstsOfWritesMatchModel(seed: UInt64) throws {
        var rng = PersistenceRNG(seed: seed)
        func randomKey(_ rng: inout PersistenceRNG) -> [UInt8] { Self.randomKey(&rng, parts: 0..<4) }
        try F.withStore { p, _ in
            var model: [[UInt8]: [UInt8]] = [:]
            try p.run("stored") { txn throws(DocError) in
                for _ in 0..<50 {
                    let key = randomKey(&rng)
                    txn.put(key, [1])
                    model[key] = [1]
                }
            }
            try p.run("bursts") { txn throws(DocError) in
                for round in 0..<60 {
                    for _ in 0..<(rng.chance(0.7) ? rng.int(1..<4) : rng.int(4..<41)) {
                        Self.randomWrite(randomKey(&rng), deleteChance: 0.3, &rng, txn, &model)
                    }
                    let probe = randomKey(&rng)
                    #expect(try txn.get(probe) == model[probe], "seed \(seed) round \(round)")
                    let a = randomKey(&rng), b = randomKey(&rng)
                    let (lo, hi) = compareKeys(a, b) <= 0 ? (a, b) : (b, a)
                    let expected = Self.keys(of: model, from: lo, to: hi, inclusive: false)
                    let scanned = Array(txn.scan(KeyRange(from: lo, upTo: hi)))
                    #expect(scanned.map(\.key) == expected, "seed \(seed) round \(round)")
                    #expect(scanned.map(\.value) == expected.map { model[$0]! }, "seed \(seed) round \(round)")
                }
            }
            let committed = try p.run("read") { txn throws(DocError) in Array(txn.scan(prefix: [0xE0])) }
            #expect(committed.map(\.key) == model.keys.sorted { compareKeys($0, $1) < 0 })
            #expect(committed.map(\.value) == model.keys.sorted { compareKeys($0, $1) < 0 }.map { model[$0]! })
        }
    }

    @Test func scanDoesNotSeeWritesMadeAfterItStarted() throws {
        try F.withStore { p, _ in
            try p.run("seed") { txn throws(DocError) in for s in ["a", "b", "c"] { txn.put(Self.k(s), [1]) } }
            try p.run("iterate and write") { txn throws(DocError) in
                var seen: [[UInt8]] = []
                for entry in txn.scan(prefix: [0xE0]) {
                    seen.append(entry.key)
                    txn.delete(entry.key)
                    txn.put(Self.k("z" + String(seen.count)), [2])
                }
                #expect(seen == ["a", "b", "c"].map(Self.k))
                #expect(txn.scan(prefix: [0xE0]).map(\.key) == ["z1", "z2", "z3"].map(Self.k))
            }
        }
    }

    @Test func corruptRowMetByALazyScanFailsTheTransaction() throws {
        try F.withStore { p, _ in
            let collection = F.path("rooms")
            // A field-index key whose value component is garbage.
            let prefix = KeySchema.fieldPrefix(.fieldIndex, collection, F.field("n"))
            try p.run("corrupt") { txn throws(DocError) in txn.put(prefix + [0xEE, 0x01], []) }
            let error = #expect(throws: DocError.self) {
                try p.run("scan") { txn throws(DocError) in
                    txn.put(Self.k("must not be written"), [1])
                    let keys = Array(p.remoteDocuments.scanIndex(
                        collection: collection, field: F.field("n"), lower: nil, upper: nil, descending: false, in: txn))
                    #expect(keys.isEmpty)
                }
            }
            #expect(error?.code == .dataLoss)
            try p.run("check") { txn throws(DocError) in
                #expect(try txn.get(Self.k("must not be written")) == nil)
            }
        }
    }

    @Test func nestedTransactionsAndClosedStoresAreRefused() throws {
        try F.withStore { p, _ in
            let nested = #expect(throws: DocError.self) {
                try p.run("outer") { _ throws(DocError) in
                    try p.run("inner") { _ throws(DocError) in }
                }
            }
            #expect(nested?.code == .failedPrecondition)
            #expect(nested?.message.contains("do not nest") == true)
            // The outer failure left the store usable.
            try p.run("after") { txn throws(DocError) in txn.put(Self.k("ok"), [1]) }
            p.close()
            let closed = #expect(throws: DocError.self) {
                try p.run("closed") { _ throws(DocError) in }
            }
            #expect(closed?.code == .failedPrecondition)
            #expect(closed?.message.contains("closed") == true)
        }
    }

    @Test func sequenceNumbersIncreaseAcrossTransactionsAndRestarts() throws {
        try F.withDirectory { dir in
            var seen: [ListenSequenceNumber] = []
            do {
                let p = try Persistence.open(directory: dir)
                for _ in 0..<3 {
                    seen.append(try p.run("use") { txn throws(DocError) in
                        let n = txn.sequenceNumber
                        #expect(txn.sequenceNumber == n)  // one per transaction
                        return n
                    })
                }
                p.close()
            }
            let p = try Persistence.open(directory: dir)
            defer { p.close() }
            seen.append(try p.run("use") { txn throws(DocError) in txn.sequenceNumber })
            #expect(seen == seen.sorted() && Set(seen).count == seen.count)
            #expect(seen.last! > seen[2])
        }
    }
}

@testable import LevelDB
import Testing

@Suite("Iteration order and bounds")
struct IterationTests {
    @Test("entries come in bytewise order, a key before its extensions")
    func bytewiseOrder() async throws {
        try await withTemporaryDatabase { db, _ in
            let keys: [[UInt8]] = [[0xFF], [0x61, 0x00], [0x61], [], [0x00], [0x62], [0x61, 0xFF], [0x7F], [0x80]]
            try db.putKeys(keys)
            let expected: [[UInt8]] = [[], [0x00], [0x61], [0x61, 0x00], [0x61, 0xFF], [0x62], [0x7F], [0x80], [0xFF]]
            #expect(try db.entries().collect().map(\.key) == expected)
            #expect(try db.entries(reverse: true).collect().map(\.key) == expected.reversed())
            // The value comes with its key.
            #expect(try db.entries().collect().allSatisfy { $0.key == $0.value })
            // The plain for-in loop gives the same.
            var looped: [[UInt8]] = []
            for entry in try db.entries() { looped.append(entry.key) }
            #expect(looped == expected)
        }
    }

    @Test("bounded ranges: lower inclusive, upper exclusive or inclusive")
    func boundedRanges() async throws {
        try await withTemporaryDatabase { db, _ in
            try db.putKeys(["a", "b", "c", "d", "e"])
            #expect(try keyStrings(db.entries(in: KeyRange(from: bytes("b"), upTo: bytes("d"))).collect()) == ["b", "c"])
            #expect(try keyStrings(db.entries(in: KeyRange(from: bytes("b"), through: bytes("d"))).collect()) == ["b", "c", "d"])
            // Bounds between keys.
            #expect(try keyStrings(db.entries(in: KeyRange(from: bytes("bb"), upTo: bytes("dd"))).collect()) == ["c", "d"])
            #expect(try keyStrings(db.entries(in: KeyRange(from: bytes("bb"), through: bytes("dd"))).collect()) == ["c", "d"])
            // One-sided.
            #expect(try keyStrings(db.entries(in: KeyRange(from: bytes("d"))).collect()) == ["d", "e"])
            #expect(try keyStrings(db.entries(in: KeyRange(upTo: bytes("b"))).collect()) == ["a"])
            #expect(try keyStrings(db.entries(in: KeyRange(through: bytes("b"))).collect()) == ["a", "b"])
            // Bounds beyond the keys.
            #expect(try keyStrings(db.entries(in: KeyRange(from: bytes("0"), upTo: bytes("z"))).collect()) == ["a", "b", "c", "d", "e"])
        }
    }

    @Test("reverse iteration honours both bounds")
    func reverseRanges() async throws {
        try await withTemporaryDatabase { db, _ in
            try db.putKeys(["a", "b", "c", "d", "e"])
            func reversed(_ range: KeyRange) throws -> [String] {
                try keyStrings(db.entries(in: range, reverse: true).collect())
            }
            // Exclusive upper bound on an existing key: it is skipped.
            #expect(try reversed(KeyRange(from: bytes("b"), upTo: bytes("d"))) == ["c", "b"])
            // Exclusive upper bound between keys.
            #expect(try reversed(KeyRange(from: bytes("b"), upTo: bytes("cc"))) == ["c", "b"])
            // Inclusive upper bound on an existing key and between keys.
            #expect(try reversed(KeyRange(from: bytes("b"), through: bytes("d"))) == ["d", "c", "b"])
            #expect(try reversed(KeyRange(from: bytes("b"), through: bytes("dd"))) == ["d", "c", "b"])
            // Upper bound past the last key: starts from the last key.
            #expect(try reversed(KeyRange(from: bytes("c"), upTo: bytes("z"))) == ["e", "d", "c"])
            #expect(try reversed(KeyRange(from: bytes("c"), through: bytes("z"))) == ["e", "d", "c"])
            // Lower bound between keys; no upper bound.
            #expect(try reversed(KeyRange(from: bytes("bb"))) == ["e", "d", "c"])
            // Upper bound at or below the first key.
            #expect(try reversed(KeyRange(upTo: bytes("a"))) == [])
            #expect(try reversed(KeyRange(through: bytes("a"))) == ["a"])
            #expect(try reversed(.all) == ["e", "d", "c", "b", "a"])
        }
    }

    @Test("empty ranges yield nothing")
    func emptyRanges() async throws {
        try await withTemporaryDatabase { db, _ in
            #expect(try db.entries().collect().isEmpty)
            #expect(try db.entries(reverse: true).collect().isEmpty)
            #expect(try db.entries(withPrefix: bytes("a")).collect().isEmpty)
            try db.putKeys(["a", "b", "c"])
            let empties = [
                KeyRange(from: bytes("b"), upTo: bytes("b")),  // lower == exclusive upper
                KeyRange(from: bytes("c"), upTo: bytes("a")),  // inverted
                KeyRange(from: bytes("c"), through: bytes("a")),
                KeyRange(from: bytes("bb"), upTo: bytes("bc")),  // no key inside
                KeyRange(from: bytes("d")),  // above every key
            ]
            for range in empties {
                #expect(try db.entries(in: range).collect().isEmpty, "\(range)")
                #expect(try db.entries(in: range, reverse: true).collect().isEmpty, "\(range)")
            }
            #expect(try db.entries(withPrefix: bytes("ab")).collect().isEmpty)
        }
    }

    @Test("prefix scans, including prefixes ending in 0xFF")
    func prefixScans() async throws {
        try await withTemporaryDatabase { db, _ in
            let keys: [[UInt8]] = [
                [0x61], [0x61, 0x00], [0x61, 0x62], [0x61, 0xFF], [0x61, 0xFF, 0x00], [0x61, 0xFF, 0xFF],
                [0x62], [0x62, 0x00], [0xFF], [0xFF, 0x01], [0xFF, 0xFF], [0xFF, 0xFF, 0xFF, 0x05],
            ]
            try db.putKeys(keys)
            func scan(_ prefix: [UInt8], reverse: Bool = false) throws -> [[UInt8]] {
                try db.entries(withPrefix: prefix, reverse: reverse).collect().map(\.key)
            }
            let a: [[UInt8]] = [[0x61], [0x61, 0x00], [0x61, 0x62], [0x61, 0xFF], [0x61, 0xFF, 0x00], [0x61, 0xFF, 0xFF]]
            #expect(try scan([0x61]) == a)
            #expect(try scan([0x61], reverse: true) == a.reversed())
            let aFF: [[UInt8]] = [[0x61, 0xFF], [0x61, 0xFF, 0x00], [0x61, 0xFF, 0xFF]]
            #expect(try scan([0x61, 0xFF]) == aFF)
            #expect(try scan([0x61, 0xFF], reverse: true) == aFF.reversed())
            #expect(try scan([0x61, 0xFF, 0xFF]) == [[0x61, 0xFF, 0xFF]])
            let ff: [[UInt8]] = [[0xFF], [0xFF, 0x01], [0xFF, 0xFF], [0xFF, 0xFF, 0xFF, 0x05]]
            #expect(try scan([0xFF]) == ff)
            #expect(try scan([0xFF], reverse: true) == ff.reversed())
            #expect(try scan([0xFF, 0xFF]) == [[0xFF, 0xFF], [0xFF, 0xFF, 0xFF, 0x05]])
            #expect(try scan([0x62]) == [[0x62], [0x62, 0x00]])
            #expect(try scan([]) == keys)
        }
    }

    @Test("prefix upper bounds: trailing 0xFF bytes are dropped, all-0xFF means unbounded")
    func prefixUpperBound() {
        #expect(KeyRange.prefixUpperBound([0x61]) == [0x62])
        #expect(KeyRange.prefixUpperBound([0x61, 0xFF]) == [0x62])
        #expect(KeyRange.prefixUpperBound([0x61, 0xFF, 0xFF]) == [0x62])
        #expect(KeyRange.prefixUpperBound([0x61, 0xFE]) == [0x61, 0xFF])
        #expect(KeyRange.prefixUpperBound([0x00]) == [0x01])
        #expect(KeyRange.prefixUpperBound([0xFF]) == nil)
        #expect(KeyRange.prefixUpperBound([0xFF, 0xFF]) == nil)
        #expect(KeyRange.prefixUpperBound([]) == nil)
        let range = KeyRange.prefix([0x61, 0xFF])
        #expect(range.contains([0x61, 0xFF]))
        #expect(range.contains([0x61, 0xFF, 0xFF, 0xFF]))
        #expect(!range.contains([0x62]))
        #expect(!range.contains([0x61, 0xFE, 0xFF]))
    }

    @Test("cursor: seek, step both ways, read, and refuse to step when not positioned")
    func cursor() async throws {
        try await withTemporaryDatabase { db, _ in
            try db.putKeys(["a", "c", "e"])
            let cursor = try db.cursor()
            #expect(!cursor.isValid)
            #expect(try cursor.entry() == nil)
            #expect(throws: LevelDBError.self) { try cursor.key() }
            let notPositioned = #expect(throws: LevelDBError.self) { try cursor.next() }
            #expect(notPositioned?.code == .invalidArgument)

            try cursor.seek(to: bytes("b"))
            #expect(cursor.isValid)
            #expect(try cursor.key() == bytes("c"))
            #expect(try cursor.value() == bytes("c"))
            try cursor.previous()
            #expect(try cursor.key() == bytes("a"))
            try cursor.previous()
            #expect(!cursor.isValid)
            try cursor.seekToLast()
            #expect(try cursor.key() == bytes("e"))
            try cursor.next()
            #expect(!cursor.isValid)
            try cursor.seek(to: bytes("f"))
            #expect(!cursor.isValid)
            try cursor.seekToFirst()
            #expect(try cursor.entry() == Entry(key: bytes("a"), value: bytes("a")))
            try cursor.checkError()
        }
    }

    @Test("a cursor reads the database as it was when it was made")
    func cursorIsConsistent() async throws {
        try await withTemporaryDatabase { db, _ in
            try db.putKeys(["a", "b"])
            let cursor = try db.cursor()
            try db.put("c", "new")
            try db.delete("a")
            try cursor.seekToFirst()
            var keys: [[UInt8]] = []
            while cursor.isValid {
                keys.append(try cursor.key())
                try cursor.next()
            }
            #expect(keys == [bytes("a"), bytes("b")])
        }
    }

    @Test("an entry sequence can be iterated several times and sees the latest data each time")
    func multiPass() async throws {
        try await withTemporaryDatabase { db, _ in
            try db.putKeys(["a", "b"])
            let entries = try db.entries()
            #expect(keyStrings(Array(entries)) == ["a", "b"])
            try db.put("c", "c")
            #expect(keyStrings(Array(entries)) == ["a", "b", "c"])
            var iterator = entries.makeIterator()
            #expect(try iterator.nextEntry()?.key == bytes("a"))
            #expect(iterator.next()?.key == bytes("b"))
            #expect(iterator.next()?.key == bytes("c"))
            #expect(iterator.next() == nil)
            #expect(try iterator.nextEntry() == nil)
            #expect(iterator.error == nil)
        }
    }
}

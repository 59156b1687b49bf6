import LevelDB
import Testing

@Suite("Sizes, compaction and properties")
struct MaintenanceTests {
    /// Writes `count` keys `<prefix>-00000…` with 1 KiB values that do not compress.
    private func fill(_ db: Database, prefix: String, count: Int) throws {
        var generator = SystemRandomNumberGenerator()
        var batch = WriteBatch()
        for index in 0..<count {
            let value = (0..<1024).map { _ in UInt8.random(in: 0...255, using: &generator) }
            batch.put(bytes(prefix + "-" + String(100_000 + index)), value)
        }
        try db.write(batch)
    }

    @Test("approximate sizes are nonzero for written and compacted ranges, zero elsewhere")
    func approximateSizes() async throws {
        try await withTemporaryDatabase { db, _ in
            try fill(db, prefix: "b", count: 1_000)
            try db.compact()
            let sizes = try db.approximateSizes(of: [
                KeyRange.prefix(bytes("b")),
                KeyRange(from: bytes("x"), upTo: bytes("y")),
                KeyRange(from: bytes("a"), upTo: bytes("a")),
                .all,
                KeyRange(from: bytes("b-100500")),
                KeyRange(from: bytes("c"), upTo: bytes("a")),
            ])
            #expect(sizes.count == 6)
            // About 1 MiB of incompressible data.
            #expect(sizes[0] > 500_000)
            #expect(sizes[1] == 0)
            #expect(sizes[2] == 0)
            #expect(sizes[3] >= sizes[0])
            #expect(sizes[4] > 0 && sizes[4] < sizes[0])
            #expect(sizes[5] == 0)
            #expect(try db.approximateSize(from: bytes("b"), to: bytes("c")) == sizes[0])
            #expect(try db.approximateSizes(of: []) == [])
        }
    }

    @Test("compacting a range discards deleted data and keeps the rest")
    func compactRange() async throws {
        try await withTemporaryDatabase { db, _ in
            try fill(db, prefix: "d", count: 1_000)
            try fill(db, prefix: "k", count: 200)
            try db.compact()
            let before = try db.approximateSize(from: bytes("d"), to: bytes("e"))
            #expect(before > 500_000)
            var batch = WriteBatch()
            for index in 0..<1_000 { batch.delete(bytes("d-" + String(100_000 + index))) }
            try db.write(batch)
            try db.compact(from: bytes("d"), to: bytes("e"))
            let after = try db.approximateSize(from: bytes("d"), to: bytes("e"))
            #expect(after < before / 10)
            #expect(try db.entries(withPrefix: bytes("d")).collect().isEmpty)
            #expect(try db.entries(withPrefix: bytes("k")).collect().count == 200)
        }
    }

    @Test("properties: known names have values, unknown names are nil")
    func properties() async throws {
        try await withTemporaryDatabase { db, _ in
            try fill(db, prefix: "p", count: 100)
            let stats = try #require(try db.property("leveldb.stats"))
            #expect(stats.contains("Compactions"))
            let level0 = try #require(try db.property("leveldb.num-files-at-level0"))
            #expect(Int(level0) != nil)
            let memory = try #require(try db.property("leveldb.approximate-memory-usage"))
            #expect((Int(memory) ?? 0) > 0)
            #expect(try db.property("leveldb.no-such-property") == nil)
            #expect(try db.property("") == nil)
        }
    }
}

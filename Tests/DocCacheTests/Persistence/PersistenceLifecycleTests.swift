import Foundation
import Testing
@testable import DocCache
import DocModel
import LevelDB
import DocTestTraits

@Suite("Persistence lifecycle", .cpuBound)
struct PersistenceLifecycleTests {
    typealias F = PersistenceFixtures

    @Test func createsTheDirectoryAndKeepsTheClientIDForever() throws {
        try F.withDirectory { dir in
            #expect(!FileManager.default.fileExists(atPath: dir))
            let first = try Persistence.open(directory: dir)
            let id = first.clientID
            #expect(first.directory == dir)
            #expect(FileManager.default.fileExists(atPath: dir))
            // A lowercase version-4 UUID.
            let parts = id.split(separator: "-").map(\.count)
            #expect(parts == [8, 4, 4, 4, 12])
            #expect(id == id.lowercased())
            #expect(Array(id)[14] == "4")
            #expect("89ab".contains(Array(id)[19]))
            first.close()
            for _ in 0..<2 {
                let again = try Persistence.open(directory: dir)
                #expect(again.clientID == id)
                again.close()
            }
        }
        // Another store gets another id.
        let a = try F.withStore { p, _ in p.clientID }
        let b = try F.withStore { p, _ in p.clientID }
        #expect(a != b)
    }

    @Test func aStoreClosedCleanlyReopensWithoutWritingAFile() throws {
        try F.withDirectory { dir in
            func files() throws -> Set<String> {
                Set(try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".log") || $0.hasSuffix(".ldb") })
            }
            let first = try Persistence.open(directory: dir)
            try F.addDocuments([F.document("rooms/a", ["n": 1])], to: first)
            first.close()
            let before = try files()
            // The log of the last session is appended to: no table, log or manifest is written
            // (each with an fdatasync) and no level-0 table waits for a compaction.
            for _ in 0..<3 {
                let again = try Persistence.open(directory: dir)
                #expect(try files() == before)
                try F.addDocuments([F.document("rooms/b", ["n": 2])], to: again)
                again.close()
            }
            let last = try Persistence.open(directory: dir)
            #expect(try last.run("read") { txn throws(DocError) in try last.remoteDocuments.get(F.key("rooms/b"), in: txn) } != nil)
            last.close()
        }
    }

    @Test func refusesAStoreWrittenByANewerSchemaAndLeavesItUntouched() throws {
        try F.withDirectory { dir in
            let key = F.key("rooms/a")
            do {
                let p = try Persistence.open(directory: dir)
                try F.addDocuments([F.document("rooms/a", ["n": 1])], to: p)
                p.close()
            }
            // A newer build bumped the schema.
            let schemaKey = KeySchema.global(KeySchema.schemaVersionName)
            let newer = Persistence.schemaVersion + 1
            var w = ByteWriter()
            w.zigzag(Int64(newer))
            do {
                let db = try Database.open(path: dir)
                try db.put(schemaKey, w.bytes)
                db.close()
            }
            let error = #expect(throws: DocError.self) { try Persistence.open(directory: dir) }
            #expect(error?.code == .failedPrecondition)
            #expect(error?.message.contains("newer version") == true)
            #expect(error?.message.contains("schema \(newer)") == true)
            #expect(error?.message.contains("up to schema \(Persistence.schemaVersion)") == true)
            #expect(error?.location == dir)
            // Nothing was wiped, and the lock was released.
            let db = try Database.open(path: dir)
            #expect(try db.get(schemaKey) == w.bytes)
            #expect(try db.get(KeySchema.remoteDocument(key)) != nil)
            db.close()
        }
    }

    /// Schema 1 stores hold only overlays with their document: they read as they are, and the
    /// store is marked with the current schema so that older builds refuse it from then on.
    @Test func opensASchema1StoreAndMarksItWithTheCurrentSchema() throws {
        try F.withDirectory { dir in
            let key = F.key("rooms/a")
            let schemaKey = KeySchema.global(KeySchema.schemaVersionName)
            do {
                // A schema-1 store: a pending set whose overlay holds the document.
                let p = try Persistence.open(directory: dir)
                let store = try LocalStore(persistence: p, user: "u", clock: { Timestamp.now })
                _ = try store.writeLocally([.set(key, ObjectValue(["n": 1]))])
                let read = try p.run("read overlay") { txn throws(DocError) in try p.overlays.overlay(for: key, user: "u", in: txn) }
                let overlay = try #require(read)
                try p.run("as schema 1") { txn throws(DocError) in
                    try p.overlays.save(overlay, user: "u", in: txn)
                    var one = ByteWriter()
                    one.zigzag(1)
                    txn.put(schemaKey, one.bytes)
                }
                p.close()
            }
            let p = try Persistence.open(directory: dir)
            let store = try LocalStore(persistence: p, user: "u", clock: { Timestamp.now })
            #expect(try store.readDocument(key)?.document?.data == ObjectValue(["n": 1]))
            p.close()
            let db = try Database.open(path: dir)
            defer { db.close() }
            var r = ByteReader(try #require(try db.get(schemaKey)), record: "schema version")
            #expect(try r.zigzag() == Int64(Persistence.schemaVersion))
        }
    }

    @Test func refusesALevelDBDatabaseThatIsNotAStore() throws {
        try F.withDirectory { dir in
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            let db = try Database.open(path: dir)
            try db.put("something", "else")
            db.close()
            let error = #expect(throws: DocError.self) { try Persistence.open(directory: dir) }
            #expect(error?.code == .failedPrecondition)
            #expect(error?.message.contains("not a doccache store") == true)
            let again = try Database.open(path: dir)
            #expect(try again.get("something") == "else")
            again.close()
        }
    }

    @Test func aSecondOpenIsRefusedWhileTheFirstIsOpen() throws {
        try F.withDirectory { dir in
            let first = try Persistence.open(directory: dir)
            let error = #expect(throws: DocError.self) { try Persistence.open(directory: dir) }
            #expect(error?.code == .failedPrecondition)
            #expect(error?.message.contains("already open by another process or store") == true)
            #expect(error?.location == dir)
            first.close()
            let second = try Persistence.open(directory: dir)
            #expect(second.clientID == first.clientID)
            second.close()
        }
    }

    @Test func clearIsRefusedWhileOpenAndWorksAfterClose() throws {
        try F.withDirectory { dir in
            let p = try Persistence.open(directory: dir)
            let id = p.clientID
            try F.addDocuments([F.document("rooms/a")], to: p)
            let error = #expect(throws: DocError.self) { try Persistence.clear(directory: dir) }
            #expect(error?.code == .failedPrecondition)
            #expect(error?.message.contains("already open") == true)
            // Still intact and usable.
            try p.run("read") { txn throws(DocError) in
                #expect(try p.remoteDocuments.get(F.key("rooms/a"), in: txn) != nil)
            }
            p.close()
            try Persistence.clear(directory: dir)
            #expect(!FileManager.default.fileExists(atPath: dir + "/CURRENT"))
            try Persistence.clear(directory: dir)  // nothing left: still fine
            let fresh = try Persistence.open(directory: dir)
            defer { fresh.close() }
            #expect(fresh.clientID != id)
            try fresh.run("read") { txn throws(DocError) in
                #expect(try fresh.remoteDocuments.get(F.key("rooms/a"), in: txn) == nil)
            }
        }
    }

    @Test func openMapsLevelDBErrorsWithTheDirectory() throws {
        try F.withDirectory { dir in
            // A regular file where the store's directory should be.
            let parent = (dir as NSString).deletingLastPathComponent
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: dir, contents: Data([1, 2, 3]))
            let error = #expect(throws: DocError.self) { try Persistence.open(directory: dir) }
            #expect(error?.location == dir)
            #expect(error?.message.isEmpty == false)
        }
    }

    /// The store writes its tables uncompressed (as Firestore's iOS cache does: Snappy was ~6 %
    /// of the instructions of a bulk sync, docs/performance.md), and reads a store whose
    /// tables an earlier version wrote with Snappy.
    @Test func writesTablesUncompressedAndReadsSnappyTables() throws {
        try F.withDirectory { dir in
            let value = [UInt8](repeating: 0x61, count: 1_000)   // Snappy makes it ~50 bytes
            func key(_ name: String, _ i: Int) -> [UInt8] { [0xE0] + Array("\(name)\(i)".utf8) }
            func tableBytes() throws -> Int {
                try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".ldb") }.reduce(0) { total, file in
                    total + ((try FileManager.default.attributesOfItem(atPath: dir + "/" + file)[.size] as? Int) ?? 0)
                }
            }
            try Persistence.open(directory: dir).close()
            // Rows an earlier version wrote: tables with Snappy blocks.
            let old = try Database.open(path: dir, options: Options(createIfMissing: false, compression: .snappy, bloomFilterBitsPerKey: 10))
            for i in 0..<2_000 { try old.put(key("old", i), value) }
            try old.compact()
            old.close()
            let compressed = try tableBytes()
            #expect(compressed < 500_000, "\(compressed) bytes of tables")

            let p = try Persistence.open(directory: dir)
            try p.run("write") { txn throws(DocError) in for i in 0..<2_000 { txn.put(key("new", i), value) } }
            try p.compact()
            let grown = try tableBytes() - compressed
            #expect(grown > 2_000_000, "the tables grew by \(grown) bytes for 2,000,000 bytes of values")
            try p.run("read") { txn throws(DocError) in
                for i in 0..<2_000 {
                    #expect(try txn.get(key("old", i)) == value)
                    #expect(try txn.get(key("new", i)) == value)
                }
            }
            p.close()
        }
    }

    @Test func sizesAreReportedPerKeySpace() throws {
        try F.withStore { p, _ in
            var rng = PersistenceRNG(seed: 9)
            let documents = (0..<200).map { i in
                let blob = Value.bytes((0..<4096).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
                return F.document("rooms/d\(i)", ["blob": blob, "n": .integer(Int64(i))])
            }
            try F.addDocuments(documents, to: p)
            try p.compact()
            let sizes = try p.approximateSizes()
            #expect(Set(sizes.keys) == Set(KeySchema.Table.allCases.map(\.name)))
            #expect(sizes["remote_documents"]! > 100_000)
            #expect(try p.approximateSizeInBytes() == sizes.values.reduce(0, +))
        }
    }
}

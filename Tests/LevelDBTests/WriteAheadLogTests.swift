import Foundation
import Testing
@testable import LevelDB

/// `Options.reuseIntactLog`: a cleanly closed database is reopened without writing anything
/// (its log is appended to), and a log with a torn or damaged tail is never appended to, so the
/// records written after reopening survive the next open.
@Suite("Reusing an intact log")
struct WriteAheadLogTests {
    static let reusing = Options(reuseIntactLog: true)

    /// The names of the files in `path` ending in `suffix`, sorted.
    static func files(_ path: String, _ suffix: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(suffix) }.sorted()
    }

    /// The newest log's bytes.
    static func newestLog(_ path: String) throws -> (path: String, bytes: [UInt8]) {
        let log = try #require(WriteAheadLog.newestLog(in: path))
        return (log, Array(try Data(contentsOf: URL(fileURLWithPath: log))))
    }

    static func write(_ bytes: [UInt8], to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    @Test func crc32cMatchesTheCastagnoliCheckValue() {
        let check = Array("123456789".utf8).withUnsafeBufferPointer { CRC32C.checksum($0) }
        #expect(check == 0xE306_9283)
        #expect([UInt8]().withUnsafeBufferPointer { CRC32C.checksum($0) } == 0)
    }

    /// The eight-bytes-at-a-time path and its byte-wise tail agree with a bit-by-bit CRC at
    /// every length and alignment.
    @Test func crc32cAgreesWithABitwiseComputationAtEveryLengthAndOffset() {
        func bitwise(_ bytes: ArraySlice<UInt8>) -> UInt32 {
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            }
            return ~crc
        }
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<200).map { _ in UInt8.random(in: 0...255, using: &generator) }
        for offset in 0..<9 {
            for length in 0..<(bytes.count - offset) {
                let slice = bytes[offset..<(offset + length)]
                let fast = slice.withUnsafeBufferPointer { CRC32C.checksum($0) }
                #expect(fast == bitwise(slice), "offset \(offset), length \(length)")
            }
        }
    }

    @Test func aCleanlyClosedDatabaseReopensWithoutANewLogOrTable() async throws {
        try await withTemporaryPath { path in
            var db = try Database.open(path: path, options: Self.reusing)
            try db.put(bytes("a"), bytes("1"))
            db.close()
            let logs = try Self.files(path, ".log"), tables = try Self.files(path, ".ldb")
            #expect(WriteAheadLog.isIntact(try Self.newestLog(path).bytes))

            db = try Database.open(path: path, options: Self.reusing)
            #expect(try Self.files(path, ".log") == logs, "the log is appended to, not replaced")
            #expect(try Self.files(path, ".ldb") == tables, "no level-0 table is written on open")
            #expect(try db.get(bytes("a")) == bytes("1"))
            try db.put(bytes("b"), bytes("2"))
            db.close()

            // Without the option, LevelDB writes the log to a table and starts a new log.
            db = try Database.open(path: path)
            #expect(try Self.files(path, ".log") != logs)
            #expect(try Self.files(path, ".ldb").count == tables.count + 1)
            #expect(try db.get(bytes("a")) == bytes("1"))
            #expect(try db.get(bytes("b")) == bytes("2"))
            db.close()
        }
    }

    @Test func aTornLogIsNotAppendedToAndTheWritesAfterReopeningSurvive() async throws {
        try await withTemporaryPath { path in
            var db = try Database.open(path: path, options: Self.reusing)
            try db.put(bytes("a"), bytes("1"))
            try db.put(bytes("b"), [UInt8](repeating: 7, count: 500))
            db.close()
            // A process killed in the middle of writing "b": its record is cut short.
            let (log, original) = try Self.newestLog(path)
            try Self.write(Array(original.dropLast(100)), to: log)
            #expect(!WriteAheadLog.isIntact(path: log, maximumBytes: Options.maximumReusedLogBytes))

            db = try Database.open(path: path, options: Self.reusing)
            #expect(WriteAheadLog.newestLog(in: path) != log, "a torn log is recovered into a table, not reused")
            #expect(try db.get(bytes("a")) == bytes("1"))
            #expect(try db.get(bytes("b")) == nil)
            try db.put(bytes("c"), bytes("3"))
            db.close()

            db = try Database.open(path: path, options: Self.reusing)
            #expect(try db.get(bytes("a")) == bytes("1"))
            #expect(try db.get(bytes("c")) == bytes("3"), "the write made after the tear survives")
            db.close()
        }
    }

    @Test func aTornManifestIsNotAppendedToAndTheStoreStillOpensAfterACompaction() async throws {
        try await withTemporaryPath { path in
            var db = try Database.open(path: path, options: Self.reusing)
            try db.put(bytes("a"), bytes("1"))
            db.close()
            // A manifest record cut short (a killed compaction, a power loss): a header that
            // announces 100 bytes, and 10 of them.
            let current = try String(contentsOfFile: path + "/CURRENT", encoding: .utf8)
            let manifest = path + "/" + current.trimmingCharacters(in: .newlines)
            var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: manifest)))
            bytes += [0x12, 0x34, 0x56, 0x78, 100, 0, 1] + [UInt8](repeating: 0xAB, count: 10)
            try Self.write(bytes, to: manifest)
            #expect(!WriteAheadLog.canReuseFiles(in: path, maximumBytes: Options.maximumReusedLogBytes))

            db = try Database.open(path: path, options: Self.reusing)
            #expect(try String(contentsOfFile: path + "/CURRENT", encoding: .utf8) != current, "a new manifest")
            try db.put(LevelDBTests.bytes("b"), LevelDBTests.bytes("2"))
            try db.compact()   // writes a manifest record
            db.close()

            db = try Database.open(path: path, options: Self.reusing)
            #expect(try db.get(LevelDBTests.bytes("a")) == LevelDBTests.bytes("1"))
            #expect(try db.get(LevelDBTests.bytes("b")) == LevelDBTests.bytes("2"))
            db.close()
        }
    }

    @Test func damageAnywhereOrATailOfZerosMakesALogNotIntact() async throws {
        try await withTemporaryPath { path in
            let db = try Database.open(path: path, options: Self.reusing)
            // Records in several fragments (over a 32 KiB block) and whole ones.
            for i in 0..<5 { try db.put(bytes("k\(i)"), [UInt8](repeating: UInt8(i), count: 20_000)) }
            db.close()
            let (_, log) = try Self.newestLog(path)
            #expect(log.count > WriteAheadLog.blockSize)
            #expect(WriteAheadLog.isIntact(log))

            var flipped = log
            flipped[log.count / 2] ^= 0x01
            #expect(!WriteAheadLog.isIntact(flipped), "a payload byte changed")
            var header = log
            header[0] ^= 0x80
            #expect(!WriteAheadLog.isIntact(header), "a stored checksum changed")
            #expect(!WriteAheadLog.isIntact(log + [UInt8](repeating: 0, count: 4096)), "zeros after the last record")
            #expect(!WriteAheadLog.isIntact(log + [0, 0, 0]), "a header cut short")
            // Cut where the second fragment of a record begins: the record has no end.
            #expect(!WriteAheadLog.isIntact(Array(log.prefix(WriteAheadLog.blockSize))))
            #expect(WriteAheadLog.isIntact([]), "an empty log is intact")
        }
    }

    @Test func aLogLongerThanTheLimitIsWrittenToATableOnOpen() async throws {
        try await withTemporaryPath { path in
            var db = try Database.open(path: path, options: Self.reusing)
            let value = [UInt8](repeating: 1, count: 1_000)
            for i in 0..<(Options.maximumReusedLogBytes / value.count + 10) { try db.put(bytes("k\(i)"), value) }
            db.close()
            let (log, logBytes) = try Self.newestLog(path)
            #expect(logBytes.count > Options.maximumReusedLogBytes)
            #expect(WriteAheadLog.isIntact(logBytes))

            db = try Database.open(path: path, options: Self.reusing)
            #expect(WriteAheadLog.newestLog(in: path) != log)
            #expect(try db.get(bytes("k0")) == value)
            db.close()
        }
    }
}

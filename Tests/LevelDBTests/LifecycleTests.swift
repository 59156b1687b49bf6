import Foundation
@testable import LevelDB
import Testing

@Suite("Opening, closing and errors")
struct LifecycleTests {
    @Test("data persists across close and reopen")
    func reopen() async throws {
        try await withTemporaryPath { path in
            let first = try Database.open(path: path)
            try first.put("a", "1")
            try first.put("b", "2")
            try first.delete("b")
            first.close()
            let second = try Database.open(path: path)
            defer { second.close() }
            #expect(try second.get("a") == "1")
            #expect(try second.get("b") == nil)
        }
    }

    @Test("every call on a closed database throws .closed; close is idempotent")
    func closedHandle() async throws {
        try await withTemporaryPath { path in
            let db = try Database.open(path: path)
            try db.put("a", "1")
            db.close()
            db.close()
            #expect(db.isClosed)
            let calls: [(String, () throws -> Void)] = [
                ("get", { _ = try db.get("a") }),
                ("put", { try db.put("a", "2") }),
                ("delete", { try db.delete("a") }),
                ("write", { try db.write(WriteBatch()) }),
                ("snapshot", { _ = try db.snapshot() }),
                ("cursor", { _ = try db.cursor() }),
                ("entries", { _ = try db.entries() }),
                ("approximateSizes", { _ = try db.approximateSizes(of: [.all]) }),
                ("compact", { try db.compact() }),
                ("property", { _ = try db.property("leveldb.stats") }),
            ]
            for (name, call) in calls {
                let error = #expect(throws: LevelDBError.self, "\(name)") { try call() }
                #expect(error?.code == .closed, "\(name)")
                #expect(error?.path == path, "\(name)")
            }
            // The directory can be opened again.
            let again = try Database.open(path: path)
            defer { again.close() }
            #expect(try again.get("a") == "1")
        }
    }

    @Test("a cursor outliving its closed database throws .closed and does not crash")
    func cursorAfterClose() async throws {
        try await withTemporaryPath { path in
            let db = try Database.open(path: path)
            try db.putKeys(["a", "b", "c"])
            let cursor = try db.cursor()
            try cursor.seekToFirst()
            #expect(try cursor.key() == bytes("a"))
            db.close()
            #expect(!cursor.isValid)
            for call in [{ try cursor.next() }, { try cursor.seekToFirst() }, { _ = try cursor.key() }, { try cursor.checkError() }] {
                let error = #expect(throws: LevelDBError.self) { try call() }
                #expect(error?.code == .closed)
            }
            // The closed database can be reopened while the old cursor object still exists.
            let again = try Database.open(path: path)
            defer { again.close() }
            #expect(try again.get("b") == "b")
            withExtendedLifetime(cursor) {}
        }
    }

    @Test("closing the database during an iteration ends it with .closed")
    func iterationInterruptedByClose() async throws {
        try await withTemporaryPath { path in
            let db = try Database.open(path: path)
            try db.putKeys(["a", "b", "c"])
            var iterator = try db.entries().makeIterator()
            #expect(try iterator.nextEntry()?.key == bytes("a"))
            db.close()
            let error = #expect(throws: LevelDBError.self) { try iterator.nextEntry() }
            #expect(error?.code == .closed)
            #expect(try iterator.nextEntry() == nil)

            // The non-throwing form stops and keeps the error.
            let db2 = try Database.open(path: path)
            var plain = try db2.entries().makeIterator()
            #expect(plain.next()?.key == bytes("a"))
            db2.close()
            #expect(plain.next() == nil)
            #expect(plain.error?.code == .closed)
        }
    }

    @Test("a second open of an open database fails with .locked and a clear message")
    func locked() async throws {
        try await withTemporaryDatabase { db, path in
            let error = #expect(throws: LevelDBError.self) { try Database.open(path: path) }
            #expect(error?.code == .locked)
            #expect(error?.message.contains("already open by another process or by another handle") == true)
            #expect(error?.message.contains("LOCK") == true)
            #expect(error?.path == path)
            // The first handle is unaffected.
            try db.put("a", "1")
            #expect(try db.get("a") == "1")
        }
    }

    @Test("errorIfExists refuses an existing database with .alreadyExists")
    func errorIfExists() async throws {
        try await withTemporaryPath { path in
            try Database.open(path: path, options: Options(errorIfExists: true)).close()
            let error = #expect(throws: LevelDBError.self) {
                try Database.open(path: path, options: Options(errorIfExists: true))
            }
            #expect(error?.code == .alreadyExists)
            #expect(error?.message.contains("exists") == true)
        }
    }

    @Test("createIfMissing false on a missing database fails with .notFound and creates nothing")
    func createIfMissingFalse() async throws {
        try await withTemporaryPath { path in
            let error = #expect(throws: LevelDBError.self) {
                try Database.open(path: path, options: Options(createIfMissing: false))
            }
            #expect(error?.code == .notFound)
            #expect(error?.message.contains("does not exist") == true)
            #expect(error?.path == path)
            #expect(!FileManager.default.fileExists(atPath: path + "/CURRENT"))
        }
    }

    @Test("destroy removes the database")
    func destroy() async throws {
        try await withTemporaryPath { path in
            let db = try Database.open(path: path)
            try db.put("a", "1")
            // Not while it is open.
            let error = #expect(throws: LevelDBError.self) { try Database.destroy(path: path) }
            #expect(error?.code == .locked)
            db.close()
            try Database.destroy(path: path)
            #expect(!FileManager.default.fileExists(atPath: path + "/CURRENT"))
            #expect(throws: LevelDBError.self) { try Database.open(path: path, options: Options(createIfMissing: false)) }
            let fresh = try Database.open(path: path)
            defer { fresh.close() }
            #expect(try fresh.get("a") == nil)
        }
    }

    @Test("repair recovers a database whose manifest was lost")
    func repair() async throws {
        try await withTemporaryPath { path in
            do {
                let db = try Database.open(path: path)
                defer { db.close() }
                for index in 0..<100 { try db.put("key-\(index)", "value-\(index)") }
                try db.compact()
            }
            // Damage: remove CURRENT, so the database cannot be opened.
            try FileManager.default.removeItem(atPath: path + "/CURRENT")
            #expect(throws: LevelDBError.self) { try Database.open(path: path, options: Options(createIfMissing: false)) }
            try Database.repair(path: path)
            let db = try Database.open(path: path, options: Options(createIfMissing: false))
            defer { db.close() }
            for index in 0..<100 {
                #expect(try db.get("key-\(index)") == "value-\(index)")
            }
        }
    }

    @Test("out-of-range options and unusable paths are rejected before LevelDB sees them")
    func invalidOptions() async throws {
        try await withTemporaryPath { path in
            for options in [Options(writeBufferSize: 0), Options(maxOpenFiles: -1), Options(blockCacheSize: -5), Options(bloomFilterBitsPerKey: 0)] {
                let error = #expect(throws: LevelDBError.self) { try Database.open(path: path, options: options) }
                #expect(error?.code == .invalidArgument)
                #expect(error?.message.contains("Options.") == true)
            }
            for badPath in ["", path + "\u{0}suffix"] {
                let error = #expect(throws: LevelDBError.self) { try Database.open(path: badPath) }
                #expect(error?.code == .invalidArgument)
            }
        }
    }

    @Test("non-default options: LRU cache, Bloom filter, no compression, small buffers")
    func customOptions() async throws {
        let options = Options(
            paranoidChecks: true, blockCacheSize: 1 << 20, writeBufferSize: 64 << 10,
            maxOpenFiles: 100, blockSize: 1024, compression: .none, bloomFilterBitsPerKey: 10)
        try await withTemporaryPath { path in
            do {
                let db = try Database.open(path: path, options: options)
                defer { db.close() }
                for index in 0..<2_000 { try db.put("key-\(index)", String(repeating: "v", count: 100)) }
                try db.compact()
                #expect(try db.get("key-1999", options: ReadOptions(verifyChecksums: true, fillCache: false)) == String(repeating: "v", count: 100))
                #expect(try db.get("missing") == nil)
            }
            let db = try Database.open(path: path, options: options)
            defer { db.close() }
            #expect(try db.entries().collect().count == 2_000)
        }
    }

    @Test("LevelDB messages are classified by their prefix")
    func classification() {
        #expect(LevelDBError.classify("NotFound: x") == .notFound)
        #expect(LevelDBError.classify("Corruption: bad block type") == .corruption)
        #expect(LevelDBError.classify("Not implemented: x") == .notSupported)
        #expect(LevelDBError.classify("Invalid argument: /d: exists (error_if_exists is true)") == .alreadyExists)
        #expect(LevelDBError.classify("Invalid argument: /d: does not exist (create_if_missing is false)") == .notFound)
        #expect(LevelDBError.classify("Invalid argument: something else") == .invalidArgument)
        #expect(LevelDBError.classify("IO error: lock /d/LOCK: Resource temporarily unavailable") == .locked)
        #expect(LevelDBError.classify("IO error: lock /d/LOCK: already held by process") == .locked)
        // A path that merely contains "lock" is an ordinary IO error.
        #expect(LevelDBError.classify("IO error: /tmp/blocks/000005.ldb: No such file or directory") == .ioError)
        #expect(LevelDBError.classify("something unexpected") == .unknown)
        let error = LevelDBError(levelDBMessage: "Corruption: checksum mismatch", path: "/d")
        #expect(error.message == "Corruption: checksum mismatch")
        #expect(error.description == "LevelDBError.corruption (/d): Corruption: checksum mismatch")
    }
}

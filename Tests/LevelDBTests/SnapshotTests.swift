import LevelDB
import Testing

@Suite("Snapshots")
struct SnapshotTests {
    @Test("writes after a snapshot are invisible through it, for get and iteration")
    func isolation() async throws {
        try await withTemporaryDatabase { db, _ in
            try db.putKeys(["a", "b", "c"])
            let snapshot = try db.snapshot()
            defer { snapshot.release() }
            let atSnapshot = ReadOptions(snapshot: snapshot)

            try db.put("b", "changed")
            try db.delete("c")
            try db.put("d", "added")

            #expect(try db.get("b", options: atSnapshot) == "b")
            #expect(try db.get("c", options: atSnapshot) == "c")
            #expect(try db.get("d", options: atSnapshot) == nil)
            #expect(try keyStrings(db.entries(options: atSnapshot).collect()) == ["a", "b", "c"])
            #expect(try keyStrings(db.entries(reverse: true, options: atSnapshot).collect()) == ["c", "b", "a"])
            #expect(try db.entries(options: atSnapshot).collect().map(\.value) == [bytes("a"), bytes("b"), bytes("c")])
            let cursor = try db.cursor(options: atSnapshot)
            try cursor.seek(to: bytes("c"))
            #expect(try cursor.key() == bytes("c"))

            // The current state has the changes.
            #expect(try db.get("b") == "changed")
            #expect(try keyStrings(db.entries().collect()) == ["a", "b", "d"])
        }
    }

    @Test("a snapshot survives compaction of the data it sees")
    func survivesCompaction() async throws {
        try await withTemporaryDatabase { db, _ in
            for index in 0..<200 { try db.put("key-\(index)", "old") }
            let snapshot = try db.snapshot()
            for index in 0..<200 { try db.put("key-\(index)", "new") }
            try db.compact()
            #expect(try db.get("key-7", options: ReadOptions(snapshot: snapshot)) == "old")
            #expect(try db.get("key-7") == "new")
            snapshot.release()
        }
    }

    @Test("reading through a released snapshot throws .closed")
    func released() async throws {
        try await withTemporaryDatabase { db, _ in
            try db.put("a", "1")
            let snapshot = try db.snapshot()
            #expect(!snapshot.isReleased)
            snapshot.release()
            snapshot.release()  // idempotent
            #expect(snapshot.isReleased)
            let error = #expect(throws: LevelDBError.self) {
                try db.get("a", options: ReadOptions(snapshot: snapshot))
            }
            #expect(error?.code == .closed)
            #expect(error?.message.contains("snapshot") == true)
            #expect(throws: LevelDBError.self) { try db.entries(options: ReadOptions(snapshot: snapshot)) }
        }
    }

    @Test("a snapshot of one database cannot be used with another")
    func foreignSnapshot() async throws {
        try await withTemporaryDatabase { first, _ in
            try await withTemporaryDatabase { second, _ in
                let snapshot = try first.snapshot()
                let error = #expect(throws: LevelDBError.self) {
                    try second.get("a", options: ReadOptions(snapshot: snapshot))
                }
                #expect(error?.code == .invalidArgument)
            }
        }
    }

    @Test("closing the database releases its snapshots")
    func closeReleases() async throws {
        try await withTemporaryPath { path in
            let db = try Database.open(path: path)
            try db.put("a", "1")
            let snapshot = try db.snapshot()
            db.close()
            #expect(snapshot.isReleased)
            let error = #expect(throws: LevelDBError.self) {
                try db.get("a", options: ReadOptions(snapshot: snapshot))
            }
            #expect(error?.code == .closed)
            snapshot.release()  // harmless after close
        }
    }
}

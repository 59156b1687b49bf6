import LevelDB
import Testing

@Suite("Write batches")
struct WriteBatchTests {
    @Test("a batch of puts and deletes is all visible after the write")
    func batchApplies() async throws {
        try await withTemporaryDatabase { db, _ in
            try db.putKeys(["old-1", "old-2", "keep"])
            var batch = WriteBatch()
            batch.put("new-1", "a")
            batch.put("new-2", "b")
            batch.delete("old-1")
            batch.delete("old-2")
            batch.put("keep", "replaced")
            // Nothing is visible before the write.
            #expect(try db.get("new-1") == nil)
            #expect(try db.get("old-1") == "old-1")
            try db.write(batch)
            #expect(try db.get("new-1") == "a")
            #expect(try db.get("new-2") == "b")
            #expect(try db.get("old-1") == nil)
            #expect(try db.get("old-2") == nil)
            #expect(try db.get("keep") == "replaced")
        }
    }

    @Test("operations apply in order: the last one on a key wins")
    func order() async throws {
        try await withTemporaryDatabase { db, _ in
            var batch = WriteBatch()
            batch.put("a", "1")
            batch.delete("a")
            batch.delete("b")
            batch.put("b", "2")
            batch.put("c", "3")
            batch.put("c", "4")
            try db.write(batch)
            #expect(try db.get("a") == nil)
            #expect(try db.get("b") == "2")
            #expect(try db.get("c") == "4")
        }
    }

    @Test("a batch that is never written changes nothing")
    func unwrittenBatch() async throws {
        try await withTemporaryPath { path in
            do {
                let db = try Database.open(path: path)
                defer { db.close() }
                try db.put("a", "1")
                var batch = WriteBatch()
                batch.put("b", "2")
                batch.delete("a")
                #expect(batch.count == 2)
                #expect(try db.get("b") == nil)
                #expect(try db.get("a") == "1")
            }
            let db = try Database.open(path: path)
            defer { db.close() }
            #expect(try db.get("b") == nil)
            #expect(try db.get("a") == "1")
        }
    }

    @Test("a written batch is all there after close and reopen")
    func atomicAcrossReopen() async throws {
        try await withTemporaryPath { path in
            let keys = (0..<500).map { "key-\($0)" }
            do {
                let db = try Database.open(path: path)
                defer { db.close() }
                try db.putKeys(["doomed"])
                var batch = WriteBatch()
                for key in keys { batch.put(key, "value-\(key)") }
                batch.delete("doomed")
                try db.write(batch, options: WriteOptions(sync: true))
            }
            let db = try Database.open(path: path)
            defer { db.close() }
            for key in keys {
                #expect(try db.get(key) == "value-\(key)")
            }
            #expect(try db.get("doomed") == nil)
            #expect(try db.entries().collect().count == keys.count)
        }
    }

    @Test("count, clear and approximate size follow LevelDB's encoding")
    func bookkeeping() {
        var batch = WriteBatch()
        #expect(batch.isEmpty)
        #expect(batch.approximateSize == 12)
        batch.put([0x61], [0x62])
        // Header 12 + tag 1 + varint 1 + key 1 + varint 1 + value 1.
        #expect(batch.approximateSize == 17)
        batch.delete([UInt8](repeating: 7, count: 200))
        // Tag 1 + varint(200) 2 + key 200.
        #expect(batch.approximateSize == 17 + 203)
        #expect(batch.count == 2)
        #expect(batch.operations == [.put(key: [0x61], value: [0x62]), .delete(key: [UInt8](repeating: 7, count: 200))])
        batch.clear()
        #expect(batch.count == 0)
        #expect(batch.approximateSize == 12)
    }

    @Test("a batch filled in place applies in order, all at once, and is reused after clear(); a closed database refuses it")
    func nativeBatch() async throws {
        try await withTemporaryDatabase { db, _ in
            try db.putKeys(["gone"])
            var batch = NativeWriteBatch()
            batch.put(Array("k".utf8), Array("first".utf8))
            batch.delete(Array("gone".utf8))
            batch.put(Array("k".utf8), Array("second".utf8))
            batch.put(Array("empty".utf8), [])
            #expect(batch.byteCount == 1 + 5 + 4 + 1 + 6 + 5)
            // Nothing is visible before the write.
            #expect(try db.get("k") == nil)
            try db.write(batch)
            #expect(try db.get("k") == "second")
            #expect(try db.get("gone") == nil)
            #expect(try db.get(Array("empty".utf8)) == [])
            // Cleared, it writes only what is added next; empty, it writes nothing.
            batch.clear()
            #expect(batch.byteCount == 0)
            try db.write(batch)
            #expect(try db.entries().collect().count == 2)
            batch.put(Array("k".utf8), Array("third".utf8))
            try db.write(batch)
            #expect(try db.get("k") == "third")
            #expect(try db.get("empty") == "")
            db.close()
            let error = #expect(throws: LevelDBError.self) { try db.write(batch) }
            #expect(error?.code == .closed)
        }
    }

    @Test("an empty batch can be written")
    func emptyBatch() async throws {
        try await withTemporaryDatabase { db, _ in
            try db.write(WriteBatch(), options: WriteOptions(sync: true))
            #expect(try db.entries().collect().isEmpty)
        }
    }
}

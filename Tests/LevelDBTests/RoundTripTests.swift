import LevelDB
import Testing

@Suite("Round trips")
struct RoundTripTests {
    @Test("put, get, overwrite, delete")
    func putGetDelete() async throws {
        try await withTemporaryDatabase { db, _ in
            #expect(try db.get(bytes("k")) == nil)
            try db.put(bytes("k"), bytes("v1"))
            #expect(try db.get(bytes("k")) == bytes("v1"))
            try db.put(bytes("k"), bytes("v2"))
            #expect(try db.get(bytes("k")) == bytes("v2"))
            try db.delete(bytes("k"))
            #expect(try db.get(bytes("k")) == nil)
            // Deleting a missing key is not an error.
            try db.delete(bytes("never-written"))
        }
    }

    @Test("an empty value is distinct from a missing key")
    func emptyValueVersusMissing() async throws {
        try await withTemporaryDatabase { db, _ in
            try db.put(bytes("empty"), [])
            let empty = try db.get(bytes("empty"))
            #expect(empty == [])
            #expect(empty != nil)
            #expect(try db.get(bytes("missing")) == nil)
        }
    }

    @Test("binary keys and values with 0x00 and 0xFF bytes, and the empty key")
    func binaryKeys() async throws {
        try await withTemporaryDatabase { db, _ in
            let keys: [[UInt8]] = [[], [0x00], [0x00, 0x00], [0xFF], [0xFF, 0xFF], [0x61, 0x00, 0x62], [0x61]]
            for (index, key) in keys.enumerated() {
                try db.put(key, [0x00, UInt8(index), 0xFF])
            }
            for (index, key) in keys.enumerated() {
                #expect(try db.get(key) == [0x00, UInt8(index), 0xFF], "key \(key)")
            }
            // A key with an embedded NUL is not truncated at it.
            try db.delete([0x61, 0x00, 0x62])
            #expect(try db.get([0x61, 0x00, 0x62]) == nil)
            #expect(try db.get([0x61]) == [0x00, 6, 0xFF])
        }
    }

    @Test("a 1 MiB value round-trips, also after reopening")
    func largeValue() async throws {
        try await withTemporaryPath { path in
            var generator = SystemRandomNumberGenerator()
            let large = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            do {
                let db = try Database.open(path: path)
                defer { db.close() }
                try db.put(bytes("large"), large)
                #expect(try db.get(bytes("large")) == large)
            }
            let db = try Database.open(path: path)
            defer { db.close() }
            #expect(try db.get(bytes("large")) == large)
        }
    }

    @Test("string conveniences store UTF-8 bytes")
    func strings() async throws {
        try await withTemporaryDatabase { db, _ in
            try db.put("clé", "välue ✓")
            #expect(try db.get("clé") == "välue ✓")
            #expect(try db.get(bytes("clé")) == bytes("välue ✓"))
            try db.delete("clé")
            #expect(try db.get("clé") == nil)
        }
    }
}

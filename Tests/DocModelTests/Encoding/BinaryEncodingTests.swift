import Testing
@testable import DocModel
import DocTestTraits

@Suite("Binary encoding", .cpuBound)
struct BinaryEncodingTests {
    /// Pins the format: values and their exact encodings (after the 2-byte header 01 01).
    static let encodings: [(Value, [UInt8])] = [
        (.null, [0x00]), (false, [0x01]), (true, [0x02]),
        (.integer(0), [0x03, 0x00]), (.integer(-1), [0x03, 0x01]), (.integer(1), [0x03, 0x02]),
        (.integer(64), [0x03, 0x80, 0x01]),
        (.integer(.max), [0x03, 0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]),
        (.integer(.min), [0x03, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]),
        (.double(1), [0x04, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F]),
        (.double(-0.0), [0x04, 0, 0, 0, 0, 0, 0, 0, 0x80]),
        (.timestamp(try! Timestamp(seconds: -1, nanos: 1000)), [0x05, 0x01, 0xE8, 0x07]),
        ("", [0x06, 0x00]), ("é", [0x06, 0x02, 0xC3, 0xA9]),
        (.bytes([0, 255]), [0x07, 0x02, 0x00, 0xFF]),
        (.reference(try! DocumentKey("a/b")), [0x08, 0x02, 0x01, 0x61, 0x01, 0x62]),
        (.geoPoint(try! GeoPoint(latitude: 0, longitude: -2)),
         [0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xC0]),
        ([], [0x0A, 0x00]), ([1, .null], [0x0A, 0x02, 0x03, 0x02, 0x00]),
        ([:], [0x0B, 0x00]),
        (["b": 1, "a": .null], [0x0B, 0x02, 0x01, 0x61, 0x00, 0x01, 0x62, 0x03, 0x02]),
    ]

    @Test func exactEncodings() throws {
        for (value, body) in Self.encodings {
            let bytes = value.binaryEncoded()
            #expect(bytes == [BinaryEncoding.formatVersion, 0x01] + body, "\(value)")
            #expect(try Value(binary: bytes).isByteIdentical(to: value), "\(value)")
        }
        #expect(ObjectValue(["a": true]).binaryEncoded() == [0x01, 0x02, 0x01, 0x01, 0x61, 0x02])
    }

    /// Map entries are written sorted by the keys' UTF-8 bytes whatever the dictionary's own
    /// order (insertion order, capacity), for small maps (sorted on the stack) and large ones.
    @Test func mapEntriesAreWrittenInKeyByteOrder() throws {
        var rng = RandomValueGenerator(seed: 11)
        let pieces = ["a", "ab", "b", "Z", "_", "\u{E9}", "e\u{301}", "😀", "0", "~"]
        for size in 0...40 {
            // Distinct as `String`s (a dictionary holds one of two canonically equivalent keys).
            var keys = Set<String>()
            while keys.count < size {
                keys.insert((0..<rng.int(1..<4)).map { _ in rng.pick(pieces) }.joined())
            }
            let entries = keys.map { ($0, Value.integer(Int64(rng.int(0..<60)))) }
            var first: [String: Value] = [:]
            for (k, v) in entries.shuffled(using: &rng) { first[k] = v }
            var second: [String: Value] = [:]
            second.reserveCapacity(200)
            for (k, v) in entries.shuffled(using: &rng) { second[k] = v }
            let bytes = Value.map(first).binaryEncoded()
            #expect(bytes == Value.map(second).binaryEncoded(), "size \(size)")
            #expect(try Value(binary: bytes).isByteIdentical(to: .map(first)), "size \(size)")
            // Header, map tag, count; then per entry: key length, key bytes, integer tag, value.
            var pos = 4
            var written: [[UInt8]] = []
            while pos < bytes.count {
                let length = Int(bytes[pos])
                written.append(Array(bytes[(pos + 1)..<(pos + 1 + length)]))
                pos += 1 + length + 2
            }
            #expect(written == keys.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }, "size \(size)")
        }
    }

    @Test func specialDoublesKeepTheirBits() throws {
        for bits: UInt64 in [0x7FF8_0000_0000_0000, 0xFFF8_0000_0000_0000, 0x7FF0_0000_0000_0001, 0x8000_0000_0000_0000,
                             0x7FF0_0000_0000_0000, 0xFFF0_0000_0000_0000, 1] {
            let v = Value.double(Double(bitPattern: bits))
            guard case .double(let d) = try Value(binary: v.binaryEncoded()) else {
                Issue.record("not a double")
                continue
            }
            #expect(d.bitPattern == bits)
        }
    }

    @Test func documents() throws {
        let key = try DocumentKey("users/alice")
        let doc = Document(key: key, data: ObjectValue(["n": 1, "m": ["x": [1.5, "y"]]]),
                           version: SnapshotVersion(microseconds: 1_700_000_000_000_000),
                           createTime: SnapshotVersion(microseconds: 5), hasLocalMutations: true)
        let bytes = doc.binaryEncoded()
        #expect(Array(bytes.prefix(2)) == [0x01, 0x03])
        let back = try Document(binary: bytes)
        #expect(back == doc)
        #expect(back.createTime == SnapshotVersion(microseconds: 5))
        #expect(back.hasLocalMutations && !back.hasCommittedMutations)
        #expect(try MaybeDocument(binary: bytes) == .document(doc))

        let none = MaybeDocument.noDocument(NoDocument(key: key, version: SnapshotVersion(microseconds: 7), hasCommittedMutations: true))
        #expect(none.binaryEncoded() == [0x01, 0x04, 0x02, 0x05, 0x75, 0x73, 0x65, 0x72, 0x73, 0x05, 0x61, 0x6C, 0x69, 0x63, 0x65, 0x0E, 0x02])
        #expect(try MaybeDocument(binary: none.binaryEncoded()) == none)
        let unknown = MaybeDocument.unknown(UnknownDocument(key: key, version: SnapshotVersion(microseconds: -3)))
        #expect(try MaybeDocument(binary: unknown.binaryEncoded()) == unknown)
    }

    /// Corrupt inputs and a fragment of the message.
    static let corrupt: [([UInt8], String, String)] = [
        ([], "truncated header (0 bytes)", "byte offset 0"),
        ([0x01], "truncated header (1 byte)", "byte offset 1"),
        ([0x02, 0x01, 0x00], "unsupported format version 2 (this build reads version 1)", "byte offset 0"),
        ([0x01, 0x09, 0x00], "unknown record kind 0x09", "byte offset 1"),
        ([0x01, 0x01], "unexpected end of data", "byte offset 2"),
        ([0x01, 0x01, 0x00, 0x00], "1 unexpected trailing byte", "byte offset 3"),
        ([0x01, 0x01, 0x0D], "unknown value tag 0x0d", "byte offset 2"),
        ([0x01, 0x01, 0x0C, 0xAB], "truncated attachment id", "byte offset 2"),
        ([0x01, 0x01, 0x03, 0x80], "unexpected end of data", "byte offset 4"),
        ([0x01, 0x01, 0x03, 0x80, 0x00], "non-minimal varint", "byte offset 3"),
        ([0x01, 0x01, 0x03] + [UInt8](repeating: 0xFF, count: 9) + [0x02], "varint overflows 64 bits", "byte offset 3"),
        ([0x01, 0x01, 0x04, 0, 0, 0], "unexpected end of data (expected 8 bytes)", "byte offset 3"),
        ([0x01, 0x01, 0x06, 0x05, 0x61], "string length 5 exceeds the 1 remaining bytes", "byte offset 3"),
        ([0x01, 0x01, 0x06, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F], "string length 4294967295 exceeds", "byte offset 3"),
        ([0x01, 0x01, 0x06, 0x02, 0xC0, 0x80], "invalid UTF-8 in a string", "byte offset 4"),
        ([0x01, 0x01, 0x06, 0x03, 0xED, 0xA0, 0x80], "invalid UTF-8 in a string", "byte offset 4"),
        ([0x01, 0x01, 0x07, 0x03, 0x00], "bytes length 3 exceeds the 1 remaining bytes", "byte offset 3"),
        ([0x01, 0x01, 0x05, 0x00, 0x80, 0x94, 0xEB, 0xDC, 0x03], "timestamp nanos 1000000000 out of range", "byte offset 4"),
        ([0x01, 0x01, 0x08, 0x01, 0x01, 0x61], "even, non-zero number of segments, got 1", "byte offset 3"),
        ([0x01, 0x01, 0x08, 0x02, 0x01, 0x61, 0x00], "invalid document key segment \"\"", "byte offset 6"),
        ([0x01, 0x01, 0x08, 0x02, 0x01, 0x61, 0x01, 0x2F], "invalid document key segment \"/\"", "byte offset 6"),
        ([0x01, 0x01, 0x09] + [UInt8](repeating: 0, count: 7) + [0x80] + [UInt8](repeating: 0, count: 8),
         "invalid geo point (-0.0, 0.0)", "byte offset 3"),
        ([0x01, 0x01, 0x09] + [0, 0, 0, 0, 0, 0xC0, 0x56, 0x40] + [UInt8](repeating: 0, count: 8),
         "invalid geo point (91.0, 0.0)", "byte offset 3"),
        ([0x01, 0x01, 0x0A, 0x03, 0x00, 0x00], "array count 3 exceeds the 2 remaining bytes", "byte offset 3"),
        ([0x01, 0x01, 0x0A, 0x02, 0x0A, 0x00], "unexpected end of data", "byte offset 6"),
        ([0x01, 0x01, 0x0B, 0x02, 0x01, 0x62, 0x00, 0x01, 0x61, 0x00], "map keys out of order or repeated (\"b\" then \"a\")", "byte offset 7"),
        ([0x01, 0x01, 0x0B, 0x02, 0x01, 0x61, 0x00, 0x01, 0x61, 0x00], "map keys out of order or repeated", "byte offset 7"),
        ([0x01, 0x01, 0x0B, 0x02, 0x03, 0x65, 0xCC, 0x81, 0x00, 0x02, 0xC3, 0xA9, 0x00],
         "collides with a canonically equivalent earlier key", "byte offset 9"),
        ([0x01, 0x03, 0x02, 0x01, 0x61, 0x01, 0x62, 0x00, 0x00, 0x04, 0x00], "unknown flags 0x04", "byte offset 9"),
        ([0x01, 0x04, 0x02, 0x01, 0x61, 0x01, 0x62, 0x00, 0x01], "unknown flags 0x01", "byte offset 8"),
    ]

    @Test func corruptInputThrowsDataLoss() {
        for (bytes, message, location) in Self.corrupt {
            do {
                let kind = bytes.count > 1 ? bytes[1] : 0
                let v: Any
                if kind == 0x03 {
                    v = try Document(binary: bytes)
                } else if kind == 0x04 {
                    v = try MaybeDocument(binary: bytes)
                } else {
                    v = try Value(binary: bytes)
                }
                Issue.record("\(bytes) decoded as \(v)")
            } catch {
                #expect(error.code == .dataLoss, "\(bytes)")
                #expect(error.message.hasPrefix("corrupt binary encoding: "), "\(bytes): \(error)")
                #expect(error.message.contains(message), "\(bytes): \(error)")
                #expect(error.location == location, "\(bytes): \(error)")
            }
        }
    }

    @Test func recordKindsAreChecked() throws {
        let key = try DocumentKey("a/b")
        let none = MaybeDocument.noDocument(NoDocument(key: key, version: .none)).binaryEncoded()
        let error = #expect(throws: DocError.self) { try Document(binary: none) }
        #expect(error?.message.contains("expected a document record, found a no-document record") == true)
        #expect(throws: DocError.self) { try MaybeDocument(binary: Value.null.binaryEncoded()) }
        #expect(throws: DocError.self) { try ObjectValue(binary: Value.map([:]).binaryEncoded()) }
        #expect(throws: DocError.self) { try Value(binary: ObjectValue.empty.binaryEncoded()) }
    }

    @Test func deepNestingIsRejectedNotCrashing() throws {
        var deep = [UInt8](repeating: 0, count: 0)
        deep += [0x01, 0x01]
        for _ in 0..<100_000 { deep += [0x0A, 0x01] }
        deep.append(0x00)
        let error = #expect(throws: DocError.self) { try Value(binary: deep) }
        #expect(error?.message.contains("nested deeper than 128 levels") == true)
        var ok = Value.null
        for _ in 0..<128 { ok = [ok] }
        #expect(try Value(binary: ok.binaryEncoded()).isIdentical(to: ok))
    }

    // MARK: Properties

    @Test func randomValuesRoundTripIdentically() {
        let seed: UInt64 = 0xB1_4A_27
        var failures = 0
        for i in 0..<4000 where failures < 5 {
            var g = RandomValueGenerator(seed: seed, stream: i)
            let v = g.value()
            let bytes = v.binaryEncoded()
            let back = try? Value(binary: bytes)
            let ok = back.map { $0.isByteIdentical(to: v) && $0.binaryEncoded() == bytes } ?? false
            if !ok { failures += 1 }
            #expect(ok, "seed \(seed) iteration \(i): \(v) read back as \(String(describing: back))")

            let doc = g.maybeDocument()
            let docBytes = doc.binaryEncoded()
            #expect((try? MaybeDocument(binary: docBytes)) == doc, "seed \(seed) iteration \(i): \(doc)")
            if case .document(let d) = doc {
                #expect((try? Document(binary: docBytes)) == d, "seed \(seed) iteration \(i)")
                #expect((try? ObjectValue(binary: d.data.binaryEncoded())) == d.data, "seed \(seed) iteration \(i)")
            }
        }
    }

    /// A projected decode keeps exactly the named top-level fields of a random document, equal
    /// to the full decode's, and skips every other kind of value (nested maps and arrays,
    /// references, attachments, geo points) to the end of the record.
    @Test func projectedDecodesKeepExactlyTheNamedFields() throws {
        let seed: UInt64 = 0x9E0_1EC7
        var projected = 0
        for i in 0..<3000 {
            var g = RandomValueGenerator(seed: seed, stream: i)
            guard case .document(let d) = g.maybeDocument() else { continue }
            let names = d.data.fields.keys.filter { _ in g.chance(0.4) } + (g.chance(0.3) ? ["absent"] : [])
            let paths = names.map { FieldPath(unchecked: [$0]) } + (g.chance(0.2) ? [FieldPath.documentID] : [])
            let back = try MaybeDocument(binary: MaybeDocument.document(d).binaryEncoded(), projecting: FieldProjection(paths))
            guard case .document(let partial) = back else {
                Issue.record("seed \(seed) iteration \(i): not a document")
                continue
            }
            let expected = d.data.fields.filter { names.contains($0.key) }
            #expect(partial.data == ObjectValue(expected), "seed \(seed) iteration \(i)")
            #expect(partial.key == d.key && partial.version == d.version && partial.hasLocalMutations == d.hasLocalMutations)
            projected += 1
        }
        #expect(projected > 500)
        // A truncated record is still refused.
        let doc = Document(key: try DocumentKey("a/b"), data: ObjectValue(["x": .array([1, ["y": .null]]), "z": 2]),
                           version: SnapshotVersion(microseconds: 1))
        let bytes = doc.binaryEncoded()
        #expect(throws: DocError.self) { try MaybeDocument(binary: Array(bytes.dropLast(3)), projecting: FieldProjection([try FieldPath("z")])) }
        // Cut inside a field the projection skips: the skip checks its bounds too. The last
        // field is a nested array (skipped), cut in its middle and at its last byte.
        let skipped = Document(key: try DocumentKey("a/b"), data: ObjectValue(["a": 1, "z": .array([1, ["y": "text"]])]),
                               version: SnapshotVersion(microseconds: 1)).binaryEncoded()
        for cut in [1, 4, 8] {
            #expect(throws: DocError.self, "cut \(cut)") {
                try MaybeDocument(binary: Array(skipped.dropLast(cut)), projecting: FieldProjection([try FieldPath("a")]))
            }
        }
        #expect(try MaybeDocument(binary: skipped, projecting: FieldProjection([try FieldPath("a")])).document?.data == ObjectValue(["a": 1]))
    }

    @Test func identicalValuesHaveIdenticalEncodings() {
        let seed: UInt64 = 0x1DE4_71CA
        for i in 0..<2000 {
            var g = RandomValueGenerator(seed: seed, stream: i)
            let a = g.value()
            let b = g.mutated(a)
            // NaN payloads are kept by the binary encoding but identical in the model.
            guard !a.canonicalString.contains("NaN") else { continue }
            #expect((a.binaryEncoded() == b.binaryEncoded()) == a.isByteIdentical(to: b),
                    "seed \(seed) iteration \(i): \(a) vs \(b)")
        }
    }

    /// Random mutations of valid encodings: decoding throws `dataLoss` or yields a value whose
    /// encoding is exactly the mutated bytes (the format has one encoding per value). Never traps.
    @Test func fuzzedEncodingsNeverCrash() {
        let seed: UInt64 = 0xF0_22
        var decoded = 0, rejected = 0
        for i in 0..<5000 {
            var g = RandomValueGenerator(seed: seed, stream: i)
            let which = g.int(0..<3)
            var bytes: [UInt8] = switch which {
            case 0: g.value().binaryEncoded()
            case 1: g.objectValue().binaryEncoded()
            default: g.maybeDocument().binaryEncoded()
            }
            Self.mutate(&bytes, &g)
            do {
                let again: [UInt8] = switch which {
                case 0: try Value(binary: bytes).binaryEncoded()
                case 1: try ObjectValue(binary: bytes).binaryEncoded()
                default: try MaybeDocument(binary: bytes).binaryEncoded()
                }
                decoded += 1
                #expect(again == bytes, "seed \(seed) iteration \(i): \(bytes) is not canonical")
            } catch {
                rejected += 1
                #expect(error.code == .dataLoss, "seed \(seed) iteration \(i): \(error)")
            }
        }
        #expect(rejected > 2500, "most mutations are detected (\(decoded) decoded, \(rejected) rejected)")
    }

    /// One to three random edits: flip bits, overwrite, insert, delete, or truncate.
    static func mutate(_ bytes: inout [UInt8], _ g: inout RandomValueGenerator) {
        for _ in 0..<g.int(1..<4) {
            switch g.int(0..<5) {
            case 0 where !bytes.isEmpty:
                bytes[g.int(0..<bytes.count)] ^= UInt8(1) << UInt8(g.int(0..<8))
            case 1 where !bytes.isEmpty:
                bytes[g.int(0..<bytes.count)] = g.pick([0x00, 0x01, 0x7F, 0x80, 0xFF, UInt8(g.int(0..<256))])
            case 2:
                bytes.insert(UInt8(g.int(0..<256)), at: g.int(0..<(bytes.count + 1)))
            case 3 where !bytes.isEmpty:
                bytes.remove(at: g.int(0..<bytes.count))
            default:
                bytes.removeLast(g.int(0..<(bytes.count + 1)))
            }
        }
    }
}

@Suite("Binary encoding of records that wrap a document", .cpuBound)
struct WrappedDocumentEncodingTests {
    /// `binaryEncoded(after:)` writes what a record header followed by `binaryEncoded()`
    /// would be.
    @Test func encodingAfterAPrefixIsTheSameBytes() {
        for stream in 0..<300 {
            var g = RandomValueGenerator(seed: 0x5EED_0F_D0C, stream: stream)
            let document = g.maybeDocument()
            let prefix = (0..<g.int(0..<4)).map { _ in UInt8(truncatingIfNeeded: g.next()) }
            let expected = prefix + document.binaryEncoded()
            #expect(document.binaryEncoded(after: prefix) == expected, "stream \(stream)")
        }
    }

    @Test func compareUTF8OrdersByBytes() {
        let samples = ["", "a", "ab", "b", "é", "e\u{301}", "z", "😀", "\u{FFFF}", "A", "aa", "a\u{0}", "ü", "u\u{308}"]
        for a in samples {
            for b in samples {
                let bytesA = Array(a.utf8), bytesB = Array(b.utf8)
                let expected = bytesA == bytesB ? 0 : (bytesA.lexicographicallyPrecedes(bytesB) ? -1 : 1)
                #expect(compareUTF8(a, b) == expected, "\(bytesA) vs \(bytesB)")
            }
        }
    }
}

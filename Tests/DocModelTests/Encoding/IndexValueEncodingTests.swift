import Testing
@testable import DocModel
import DocTestTraits

@Suite("Index value encoding", .cpuBound)
struct IndexValueEncodingTests {
    static func check(_ a: Value, _ b: Value, _ context: @autoclosure () -> String) -> Bool {
        let expected = Value.compare(a, b)
        let ea = a.indexEncoded(), eb = b.indexEncoded()
        let ok = OrderedCode.compare(ea, eb) == expected
            && OrderedCode.compare(a.indexEncoded(descending: true), b.indexEncoded(descending: true)) == -expected
            && (expected != 0 || ea == eb)
        #expect(ok, "\(context()): \(a) vs \(b), compare \(expected)")
        return ok
    }

    @Test func everyPairOfTheOrderTableOrdersAsListed() {
        let flat = ValueOrderTests.orderedGroups.flatMap { $0 }
        for a in flat {
            for b in flat { _ = Self.check(a, b, "order table") }
        }
    }

    @Test func numbers() {
        #expect(Value.integer(1).indexEncoded() == Value.double(1).indexEncoded())
        #expect(Value.double(-0.0).indexEncoded() == Value.double(0).indexEncoded())
        #expect(Value.integer(0).indexEncoded() == Value.double(-0.0).indexEncoded())
        #expect(Value.double(.nan).indexEncoded() == Value.double(-.nan).indexEncoded())
        #expect(Value.double(.nan).indexEncoded() == Value.double(Double(bitPattern: 0x7FF0_0000_0000_0001)).indexEncoded())
        #expect(Value.double(.nan).indexEncoded() == [0x0F, 0, 0, 0, 0, 0, 0, 0, 0, 0x00])
        #expect(Value.integer(1).indexEncoded() == [0x0F, 0xBF, 0xF0, 0, 0, 0, 0, 0, 0, 0x00])
        // 2^53 + 1 is 2^53 (as a double) plus a remainder of 1.
        #expect(Value.integer(9_007_199_254_740_993).indexEncoded()
                == [0x0F, 0xC3, 0x40, 0, 0, 0, 0, 0, 0, 0x01, 0x00, 0x01])
        #expect(OrderedCode.compare(Value.integer(9_007_199_254_740_993).indexEncoded(),
                                    Value.double(9_007_199_254_740_992).indexEncoded()) > 0)

        // Dense samples around the places where doubles stop being exact.
        var samples: [Value] = []
        let bases: [Int64] = [1 << 53, 1 << 54, 1 << 62, .max - 2048, 1 << 60]
        for base in bases {
            for delta in -5...5 {
                for sign: Int64 in [1, -1] {
                    let i = sign * (base &+ Int64(delta))
                    samples.append(.integer(i))
                    samples.append(.double(Double(i)))
                    samples.append(.double(Double(i).nextUp))
                    samples.append(.double(Double(i).nextDown))
                }
            }
        }
        samples += [.integer(.min), .integer(.min + 1), .integer(.max), .integer(.max - 1),
                    .double(9.223372036854775807e18), .double(-9.223372036854775808e18),
                    .double(9.223372036854775807e18.nextDown), .double(-9.223372036854775808e18.nextUp),
                    .double(-9.223372036854775808e18.nextDown)]
        samples += RandomValueGenerator.edgeIntegers.map { .integer($0) } + RandomValueGenerator.edgeDoubles.map { .double($0) }
        var failures = 0
        for a in samples {
            for b in samples where failures < 10 {
                if !Self.check(a, b, "numbers") { failures += 1 }
            }
        }
    }

    @Test func typeOrderAndShapes() throws {
        let tags: [(Value, UInt8)] = [
            (.null, 0x05), (false, 0x0A), (1, 0x0F), (.timestamp(try Timestamp(seconds: 0)), 0x14),
            (.pendingServerTimestamp(localWriteTime: try Timestamp(seconds: 0), previous: nil), 0x19),
            ("", 0x1E), (.bytes([]), 0x23), (.reference(try DocumentKey("a/b")), 0x28),
            (.geoPoint(try GeoPoint(latitude: 0, longitude: 0)), 0x2D), ([], 0x32), ([:], 0x37),
        ]
        for (v, tag) in tags { #expect(v.indexEncoded().first == tag, "\(v)") }
        #expect(Value.array([]).indexEncoded() == [0x32, 0x00])
        #expect(Value.map([:]).indexEncoded() == [0x37, 0x00, 0x00])
        #expect(Value.map(["": .null]).indexEncoded() == [0x37, 0x00, 0x01, 0x05, 0x00, 0x00])
        #expect(Value.string("a").indexEncoded(descending: true) == [~0x1E, ~0x61, 0xFF, 0xFE])
        // Pending server timestamps order by local write time only.
        let t = try Timestamp(seconds: 7)
        #expect(Value.pendingServerTimestamp(localWriteTime: t, previous: 1).indexEncoded()
                == Value.pendingServerTimestamp(localWriteTime: t, previous: "x").indexEncoded())
    }

    @Test func malformedServerTimestampIsAPlainMap() {
        let fake: Value = ["__type__": "server_timestamp"]
        #expect(!fake.isServerTimestamp)
        #expect(fake.typeOrder == Value.map([:]).typeOrder)
        #expect(Value.compare(fake, .pendingServerTimestamp(localWriteTime: try! Timestamp(seconds: 1), previous: nil)) == 1)
        #expect(fake.indexEncoded().first == 0x37)
    }

    // MARK: Properties

    @Test func randomPairsOrderAsCompare() {
        let seed: UInt64 = 0x1DE7
        var failures = 0
        for i in 0..<20_000 where failures < 10 {
            var g = RandomValueGenerator(seed: seed, stream: i)
            let a = g.value(maxDepth: 3)
            let b = i % 2 == 0 ? g.value(maxDepth: 3) : g.mutated(a)
            if !Self.check(a, b, "seed \(seed) iteration \(i)") { failures += 1 }
        }
    }

    @Test func equalValuesEncodeIdentically() {
        let seed: UInt64 = 0xE0_0A1
        var equalPairs = 0
        for i in 0..<5000 {
            var g = RandomValueGenerator(seed: seed, stream: i)
            let a = g.value()
            let b = g.mutated(a)
            if a == b {
                equalPairs += 1
                #expect(a.indexEncoded() == b.indexEncoded(), "seed \(seed) iteration \(i): \(a) == \(b)")
            } else {
                #expect(a.indexEncoded() != b.indexEncoded(), "seed \(seed) iteration \(i): \(a) != \(b)")
            }
        }
        #expect(equalPairs > 500, "the generator produces enough equal pairs (\(equalPairs))")
    }

    /// (value, document key) index entries order by value, then key, in both directions.
    @Test func valueThenKeyOrdersComponentWise() {
        let seed: UInt64 = 0x4E7
        var g = RandomValueGenerator(seed: seed)
        let entries: [(Value, DocumentKey)] = (0..<250).map { _ in
            (g.chance(0.3) ? g.pick([1, 1.0, "a", .null, [1], [:]]) : g.value(maxDepth: 2), g.documentKey())
        }
        for descending in [false, true] {
            let encoded = entries.map { v, k in
                var e = KeyEncoder()
                e.append(string: "coll")
                e.append(indexValue: v, descending: descending)
                e.append(key: k)
                return e.bytes
            }
            for i in entries.indices {
                for j in entries.indices {
                    var expected = Value.compare(entries[i].0, entries[j].0)
                    if descending { expected = -expected }
                    if expected == 0 {
                        expected = entries[i].1 == entries[j].1 ? 0 : (entries[i].1 < entries[j].1 ? -1 : 1)
                    }
                    #expect(OrderedCode.compare(encoded[i], encoded[j]) == expected,
                            "seed \(seed) \(descending ? "desc" : "asc"): \(entries[i]) vs \(entries[j])")
                }
                var d = KeyDecoder(encoded[i])
                #expect((try? d.readString()) == "coll")
                #expect((try? d.readIndexValue(descending: descending)) == entries[i].0)
                #expect((try? d.readKey()) == entries[i].1)
                #expect(d.isAtEnd)
            }
        }
    }

    @Test func decodedValuesAreEqualAndReencodeIdentically() {
        let seed: UInt64 = 0xDEC0DE
        for i in 0..<4000 {
            var g = RandomValueGenerator(seed: seed, stream: i)
            let v = g.value()
            for descending in [false, true] {
                let bytes = v.indexEncoded(descending: descending)
                var d = KeyDecoder(bytes)
                do {
                    let back = try d.readIndexValue(descending: descending)
                    #expect(back == v && d.isAtEnd, "seed \(seed) iteration \(i): \(v) read back as \(back)")
                    #expect(back.indexEncoded(descending: descending) == bytes, "seed \(seed) iteration \(i)")
                } catch {
                    Issue.record("seed \(seed) iteration \(i): \(v) failed to decode: \(error)")
                }
            }
        }
    }

    /// Random mutations of valid index keys: decoding throws `dataLoss` or yields a value whose
    /// encoding is exactly the mutated bytes. Never traps.
    @Test func fuzzedKeysNeverCrash() {
        let seed: UInt64 = 0xF022_1DE7
        var rejected = 0
        for i in 0..<5000 {
            var g = RandomValueGenerator(seed: seed, stream: i)
            let descending = g.chance(0.5)
            var bytes = g.value().indexEncoded(descending: descending)
            BinaryEncodingTests.mutate(&bytes, &g)
            var d = KeyDecoder(bytes)
            do {
                let v = try d.readIndexValue(descending: descending)
                try d.finish()
                #expect(v.indexEncoded(descending: descending) == bytes, "seed \(seed) iteration \(i): \(bytes)")
            } catch {
                rejected += 1
                #expect(error.code == .dataLoss, "seed \(seed) iteration \(i): \(error)")
            }
        }
        #expect(rejected > 2500, "most mutations are detected (\(rejected) of 5000)")
    }

    static let corrupt: [([UInt8], String)] = [
        ([], "unexpected end of key"),
        ([0x06], "unknown index value tag 0x06"),
        ([0x0A, 0x02], "invalid boolean 0x02"),
        ([0x0F, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x00, 0x01], "invalid NaN encoding"),
        ([0x0F, 0xFF, 0xF8, 0, 0, 0, 0, 0, 0, 0x00], "non-canonical number"),   // a NaN key
        ([0x0F, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x00], "non-canonical number"),   // -0.0
        ([0x0F, 0xBF, 0xF0, 0, 0, 0, 0, 0, 0, 0x01, 0x00, 0x01], "invalid integer remainder"),   // 1.0 + 1
        ([0x0F, 0xC3, 0x40, 0, 0, 0, 0, 0, 0, 0x01, 0x00, 0x02], "invalid integer remainder"),   // gap is 2
        ([0x0F, 0xC3, 0x40, 0, 0, 0, 0, 0, 0, 0x01, 0x00, 0x00], "invalid integer remainder"),
        ([0x0F, 0xC3, 0xE0, 0, 0, 0, 0, 0, 0, 0x01, 0x00, 0x01], "invalid integer remainder"),   // 2^63
        ([0x0F, 0xC3, 0x40, 0, 0, 0, 0, 0, 0, 0x02], "invalid number marker 0x02"),
        ([0x0F, 0xBF, 0xF0], "unexpected end of key (expected 8 more bytes)"),
        ([0x14, 0x80, 0x05, 0x3B, 0x9A, 0xCA, 0x00], "timestamp nanos 1000000000 out of range"),
        ([0x2D] + [UInt8](repeating: 0, count: 16), "invalid geo point"),
        ([0x2D, 0xC0, 0x56, 0xC0, 0, 0, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0], "invalid geo point"),   // latitude 91
        ([0x32, 0x05], "unterminated array"),
        ([0x37, 0x61, 0x00, 0x01, 0x05, 0x00], "unterminated map"),
        ([0x37, 0x62, 0x00, 0x01, 0x05, 0x61, 0x00, 0x01, 0x05, 0x00, 0x00], "map keys out of order or repeated"),
        ([0x28, 0x02, 0x61, 0x00, 0x01, 0x01], "even, non-zero number of segments"),
    ]

    @Test func corruptKeysThrowDataLoss() {
        for (bytes, message) in Self.corrupt {
            var d = KeyDecoder(bytes)
            do {
                let v = try d.readIndexValue()
                Issue.record("\(bytes) decoded as \(v)")
            } catch {
                #expect(error.code == .dataLoss)
                #expect(error.message.contains(message), "\(bytes): \(error)")
            }
        }
        var deep = [UInt8](repeating: 0x32, count: 100_000)
        deep += [UInt8](repeating: 0x00, count: 100_000)
        var d = KeyDecoder(deep)
        let error = #expect(throws: DocError.self) { try d.readIndexValue() }
        #expect(error?.message.contains("nested deeper than 128 levels") == true)
    }
}

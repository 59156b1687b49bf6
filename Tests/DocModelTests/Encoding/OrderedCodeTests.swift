import Testing
@testable import DocModel
import DocTestTraits

@Suite("Ordered code", .cpuBound)
struct OrderedCodeTests {
    static func encode(_ build: (inout KeyEncoder) -> Void) -> [UInt8] {
        var e = KeyEncoder()
        build(&e)
        return e.bytes
    }

    static let int64Encodings: [(Int64, [UInt8])] = [
        (.min, [0x77, 0x80, 0, 0, 0, 0, 0, 0, 0]), (-257, [0x7D, 0xFE, 0xFF]), (-256, [0x7E, 0x00]),
        (-2, [0x7E, 0xFE]), (-1, [0x7F]), (0, [0x80]), (1, [0x81, 0x01]), (255, [0x81, 0xFF]),
        (256, [0x82, 0x01, 0x00]), (.max, [0x88, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]),
    ]

    @Test func int64Encodings() throws {
        for (v, bytes) in Self.int64Encodings {
            #expect(Self.encode { $0.append(int64: v) } == bytes, "\(v)")
            var d = KeyDecoder(bytes)
            #expect(try d.readInt64() == v)
            #expect(d.isAtEnd)
        }
    }

    @Test func uint64AndStringEncodings() throws {
        #expect(Self.encode { $0.append(uint64: 0) } == [0x01])
        #expect(Self.encode { $0.append(uint64: 1) } == [0x02, 0x01])
        #expect(Self.encode { $0.append(uint64: 0x1_0000) } == [0x04, 0x01, 0x00, 0x00])
        #expect(Self.encode { $0.append(uint64: .max) } == [0x09] + [UInt8](repeating: 0xFF, count: 8))
        #expect(Self.encode { $0.append(string: "") } == [0x00, 0x01])
        #expect(Self.encode { $0.append(bytes: [0x61, 0x00, 0xFF]) } == [0x61, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x01])
        #expect(Self.encode { $0.append(string: "", descending: true) } == [0xFF, 0xFE])
        #expect(Self.encode { $0.append(path: try! ResourcePath("a/b")) } == [0x02, 0x61, 0x00, 0x01, 0x02, 0x62, 0x00, 0x01, 0x01])
        #expect(Self.encode { $0.append(path: .root) } == [0x01])
    }

    /// Strings escape 0x00 and 0xFF wherever they are, whether their bytes are contiguous (a
    /// native string, an array) or not: the same bytes as escaping byte by byte.
    @Test func stringEscapesAnywhere() throws {
        func byByte(_ bytes: [UInt8]) -> [UInt8] {
            var out: [UInt8] = []
            for b in bytes {
                switch b {
                case 0x00: out += [0x00, 0xFF]
                case 0xFF: out += [0xFF, 0x00]
                default: out.append(b)
                }
            }
            return out + [0x00, 0x01]
        }
        var generator = SystemRandomNumberGenerator()
        let alphabet: [UInt8] = [0x00, 0x01, 0x61, 0x7F, 0xFE, 0xFF]
        for count in 0..<40 {
            let bytes = (0..<count).map { _ in alphabet.randomElement(using: &generator)! }
            #expect(Self.encode { $0.append(bytes: bytes) } == byByte(bytes), "\(bytes)")
            // Not contiguous: a lazy view of the same bytes.
            var lazy: [UInt8] = [0x42]
            OrderedCode.appendString(bytes.lazy.map { $0 }, to: &lazy)
            #expect(lazy == [0x42] + byByte(bytes), "\(bytes)")
            // A string holding U+0000 (UTF-8 0x00) among other characters.
            let text = String(decoding: bytes.map { $0 == 0x00 ? 0x00 : 0x61 }, as: UTF8.self)
            #expect(Self.encode { $0.append(string: text) } == byByte(Array(text.utf8)))
        }
    }

    /// Checks that bytewise order of `encode` equals `order` for every pair, that equal items
    /// encode equally, that the descending form reverses the order and that `decode` reads
    /// both forms back.
    static func checkOrder<T>(
        _ items: [T], _ context: String,
        order: (T, T) -> Int, equal: (T, T) -> Bool,
        encode: (T, Bool, inout KeyEncoder) -> Void,
        decode: (inout KeyDecoder, Bool) throws(DocError) -> T
    ) {
        let asc = items.map { v in Self.encode { encode(v, false, &$0) } }
        let desc = items.map { v in Self.encode { encode(v, true, &$0) } }
        for i in items.indices {
            for dir in [false, true] {
                var d = KeyDecoder(dir ? desc[i] : asc[i])
                do {
                    let back = try decode(&d, dir)
                    #expect(equal(back, items[i]) && d.isAtEnd, "\(context): \(items[i]) read back as \(back)")
                } catch {
                    Issue.record("\(context): \(items[i]) failed to decode: \(error)")
                }
            }
            for j in items.indices {
                let expected = order(items[i], items[j]).signum()
                #expect(OrderedCode.compare(asc[i], asc[j]) == expected, "\(context): \(items[i]) vs \(items[j])")
                #expect(OrderedCode.compare(desc[i], desc[j]) == -expected, "\(context) descending: \(items[i]) vs \(items[j])")
            }
        }
    }

    @Test func integersOrderNumerically() {
        var g = RandomValueGenerator(seed: 0x1D)
        var ints = RandomValueGenerator.edgeIntegers + Self.int64Encodings.map(\.0)
        for _ in 0..<300 { ints.append(g.integer()) }
        for shift in 0..<64 { ints.append(1 << Int64(shift)); ints.append(0 &- (1 << Int64(shift))); ints.append((1 << Int64(shift)) &- 1) }
        Self.checkOrder(ints, "int64", order: { $0 == $1 ? 0 : ($0 < $1 ? -1 : 1) }, equal: ==,
                        encode: { v, desc, e in e.append(int64: v, descending: desc) },
                        decode: { d, desc throws(DocError) in try d.readInt64(descending: desc) })
        var uints: [UInt64] = [0, 1, 255, 256, .max, .max - 1, 1 << 63]
        for _ in 0..<200 { uints.append(g.next() >> UInt64(g.int(0..<64))) }
        Self.checkOrder(uints, "uint64", order: { $0 == $1 ? 0 : ($0 < $1 ? -1 : 1) }, equal: ==,
                        encode: { v, desc, e in e.append(uint64: v, descending: desc) },
                        decode: { d, desc throws(DocError) in try d.readUInt64(descending: desc) })
    }

    @Test func stringsAndBytesOrderBytewise() {
        var g = RandomValueGenerator(seed: 0x5B)
        var byteStrings: [[UInt8]] = [[], [0], [0, 0], [0, 1], [0, 0xFF], [1], [0xFE], [0xFF], [0xFF, 0], [0xFF, 0xFF]]
        for _ in 0..<250 { byteStrings.append((0..<g.int(0..<5)).map { _ in g.pick([0x00, 0x01, 0x61, 0xFE, 0xFF]) }) }
        Self.checkOrder(byteStrings, "bytes", order: Value.compareBytes, equal: ==,
                        encode: { v, desc, e in e.append(bytes: v, descending: desc) },
                        decode: { d, desc throws(DocError) in try d.readBytes(descending: desc) })
        var strings = ["", "a", "a\u{0}", "a\u{0}\u{0}", "a\u{1}", "ab", "b", "é", "e\u{301}", "😀", "\u{FFFF}"]
        for _ in 0..<200 { strings.append(g.string(maxLength: 4)) }
        Self.checkOrder(strings, "string", order: compareUTF8, equal: { $0.utf8.elementsEqual($1.utf8) },
                        encode: { v, desc, e in e.append(string: v, descending: desc) },
                        decode: { d, desc throws(DocError) in try d.readString(descending: desc) })
    }

    @Test func pathsOrderLikeResourcePath() throws {
        let examples = try ["", "a", "a/b", "a/b/c/d", "a/c", "a-/x", "a/b-", "aa", "b", "a/\u{0}", "a/b/\u{0}"]
            .map { try ResourcePath($0) }
        var g = RandomValueGenerator(seed: 0x9A7)
        var paths = examples
        for _ in 0..<300 { paths.append(g.resourcePath()) }
        Self.checkOrder(paths, "path", order: { $0 == $1 ? 0 : ($0 < $1 ? -1 : 1) }, equal: ==,
                        encode: { v, desc, e in e.append(path: v, descending: desc) },
                        decode: { d, desc throws(DocError) in try d.readPath(descending: desc) })
        let key = { (p: String) in Self.encode { $0.append(key: try! DocumentKey(p)) } }
        #expect(OrderedCode.compare(key("a/b"), key("a/b/c/d")) < 0)
        #expect(OrderedCode.compare(key("a/b/c/d"), key("a/c")) < 0)
        #expect(OrderedCode.compare(key("a/b/c/d"), key("a-/x")) < 0, "segment order, not string order")
        var d = KeyDecoder(key("users/alice/orders/o1"))
        #expect(try d.readKey() == DocumentKey("users/alice/orders/o1"))
    }

    /// Concatenated components order component-wise (lexicographically by tuple).
    @Test func concatenationsOrderComponentWise() {
        var g = RandomValueGenerator(seed: 0xC0C0A)
        struct Row { var a: [UInt8]; var b: Int64; var c: String; var d: ResourcePath }
        func row() -> Row {
            Row(a: (0..<g.int(0..<3)).map { _ in g.pick([0x00, 0x61, 0xFF]) }, b: Int64(g.int(-2..<3)) * g.pick([1, 1000, 1 << 40]),
                c: g.pick(["", "a", "b", "a\u{0}"]), d: g.resourcePath(count: g.int(0..<3)))
        }
        let rows = (0..<300).map { _ in row() }
        func compare(_ x: Row, _ y: Row) -> Int {
            let c1 = Value.compareBytes(x.a, y.a)
            if c1 != 0 { return c1 }
            if x.b != y.b { return x.b < y.b ? -1 : 1 }
            let c3 = -compareUTF8(x.c, y.c)   // descending
            if c3 != 0 { return c3 }
            return x.d == y.d ? 0 : (x.d < y.d ? -1 : 1)
        }
        func encode(_ r: Row) -> [UInt8] {
            Self.encode { e in
                e.append(bytes: r.a)
                e.append(int64: r.b)
                e.append(string: r.c, descending: true)
                e.append(path: r.d)
            }
        }
        let encoded = rows.map(encode)
        for i in rows.indices {
            for j in rows.indices {
                #expect(OrderedCode.compare(encoded[i], encoded[j]) == compare(rows[i], rows[j]), "\(i) vs \(j)")
            }
            var d = KeyDecoder(encoded[i])
            #expect((try? d.readBytes()) == rows[i].a)
            #expect((try? d.readInt64()) == rows[i].b)
            #expect((try? d.readString(descending: true)) == rows[i].c)
            #expect((try? d.readPath()) == rows[i].d)
            #expect((try? d.finish()) != nil)
        }
    }

    /// Infinity sorts after every component of every kind, in both directions, whatever follows.
    @Test func infinityIsGreaterThanEverything() {
        var g = RandomValueGenerator(seed: 0x1F)
        let prefix = Self.encode { $0.append(string: "t") }
        let upper = prefix + OrderedCode.infinity
        for i in 0..<2000 {
            let desc = g.chance(0.5)
            var e = KeyEncoder(prefix: prefix)
            switch i % 7 {
            case 0: e.append(string: g.string(), descending: desc)
            case 1: e.append(bytes: g.bytes(), descending: desc)
            case 2: e.append(int64: g.integer(), descending: desc)
            case 3: e.append(uint64: g.pick([0, 1, .max, g.next()]), descending: desc)
            case 4: e.append(path: g.resourcePath(), descending: desc)
            case 5: e.append(indexValue: g.value(maxDepth: 2), descending: desc)
            default: e.append(uint64: 0, descending: desc)
            }
            // Whatever follows (including bytes that look like the start of infinity).
            e.append(raw: g.pick([[], [0xFF], [0xFF, 0xFF], [0xFF, 0xFF, 0xFF]]))
            #expect(OrderedCode.compare(e.bytes, upper) < 0, "iteration \(i): \(e.bytes)")
            #expect(e.bytes.starts(with: prefix) && e.bytes.count > prefix.count)
        }
        var d = KeyDecoder(upper, offset: prefix.count)
        let found = d.readInfinity()
        #expect(found && d.isAtEnd)
        var notInf = KeyDecoder(Self.encode { $0.append(uint64: 0, descending: true) })
        let foundNot = notInf.readInfinity()
        #expect(!foundNot)
    }

    @Test func prefixSuccessor() {
        #expect(OrderedCode.prefixSuccessor([0x61]) == [0x62])
        #expect(OrderedCode.prefixSuccessor([0x61, 0xFF, 0xFF]) == [0x62])
        #expect(OrderedCode.prefixSuccessor([0x00]) == [0x01])
        #expect(OrderedCode.prefixSuccessor([0xFF]) == nil)
        #expect(OrderedCode.prefixSuccessor([]) == nil)
        let prefix = Self.encode { $0.append(string: "coll") }
        let end = OrderedCode.prefixSuccessor(prefix)!
        var g = RandomValueGenerator(seed: 3)
        for _ in 0..<200 {
            var e = KeyEncoder(prefix: prefix)
            e.append(indexValue: g.value(maxDepth: 1), descending: g.chance(0.5))
            #expect(OrderedCode.compare(e.bytes, end) < 0)
        }
    }

    /// Malformed keys, the reader to use, and a fragment of the message.
    static let corrupt: [([UInt8], String, String)] = [
        ([], "int64", "unexpected end of key"),
        ([0x89], "int64", "invalid integer header 0x89"),
        ([0x76], "int64", "invalid integer header 0x76"),
        ([0x82, 0x01], "int64", "unexpected end of key (expected 2 more bytes)"),
        ([0x81, 0x00], "int64", "non-canonical integer"),
        ([0x88, 0x80, 0, 0, 0, 0, 0, 0, 0], "int64", "non-canonical integer"),
        ([0x7E, 0xFF], "int64", "non-canonical integer"),
        ([0x00], "uint64", "invalid unsigned integer header 0x00"),
        ([0x0A], "uint64", "invalid unsigned integer header 0x0a"),
        ([0x02, 0x00], "uint64", "non-canonical unsigned integer"),
        ([0x61], "string", "unterminated string (it starts at byte offset 0)"),
        ([0x61, 0x00], "string", "unexpected end of key"),
        ([0x61, 0x00, 0x02], "string", "invalid escape 0x00 0x02"),
        ([0xFF, 0x01, 0x00, 0x01], "string", "invalid escape 0xFF 0x01"),
        ([0xC3, 0x00, 0x01], "string", "invalid UTF-8 in a string"),
        ([0x03], "path", "expected a path segment or the end of the path, found 0x03"),
        ([0x02, 0x00, 0x01, 0x01], "path", "invalid path segment \"\""),
        ([0x02, 0x2F, 0x00, 0x01, 0x01], "path", "invalid path segment \"/\""),
        ([0x02, 0x61, 0x00, 0x01], "path", "unexpected end of key"),
        ([0x02, 0x61, 0x00, 0x01, 0x01], "key", "even, non-zero number of segments, got 1"),
        ([0x01], "key", "even, non-zero number of segments, got 0"),
        ([0x80, 0x80], "int64+end", "1 unexpected trailing bytes"),
    ]

    @Test func corruptKeysThrowDataLoss() {
        for (bytes, reader, message) in Self.corrupt {
            var d = KeyDecoder(bytes)
            do {
                switch reader {
                case "int64": _ = try d.readInt64()
                case "uint64": _ = try d.readUInt64()
                case "string": _ = try d.readString()
                case "path": _ = try d.readPath()
                case "key": _ = try d.readKey()
                default: _ = try d.readInt64(); try d.finish()
                }
                Issue.record("\(bytes) was accepted by \(reader)")
            } catch {
                #expect(error.code == .dataLoss)
                #expect(error.message.hasPrefix("corrupt key encoding: "), "\(bytes): \(error)")
                #expect(error.message.contains(message), "\(bytes): \(error)")
                #expect(error.location?.hasPrefix("byte offset ") == true)
            }
        }
    }
}

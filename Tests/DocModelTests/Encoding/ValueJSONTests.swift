import Testing
@testable import DocModel
import DocTestTraits

@Suite("JSON encoding", .cpuBound)
struct ValueJSONTests {
    static func ts(_ s: Int64, _ n: Int32 = 0) -> Value { .timestamp(try! Timestamp(seconds: s, nanos: n)) }
    static func key(_ p: String) -> Value { .reference(try! DocumentKey(p)) }
    static func geo(_ a: Double, _ b: Double) -> Value { .geoPoint(try! GeoPoint(latitude: a, longitude: b)) }

    /// Values and their canonical JSON.
    static let canonical: [(Value, String)] = [
        (.null, "null"), (true, "true"), (false, "false"),
        (.integer(0), "0"), (.integer(-1), "-1"),
        (.integer(.max), "9223372036854775807"), (.integer(.min), "-9223372036854775808"),
        (.double(0), "0.0"), (.double(-0.0), "-0.0"), (.double(1), "1.0"), (.double(-1.5), "-1.5"),
        (.double(0.1), "0.1"), (.double(1e16), "1e+16"), (.double(1e-5), "1e-05"),
        (.double(.leastNonzeroMagnitude), "5e-324"), (.double(.greatestFiniteMagnitude), "1.7976931348623157e+308"),
        (.double(9_007_199_254_740_992), "9007199254740992.0"),
        (.double(.nan), #"{"$double":"NaN"}"#), (.double(.infinity), #"{"$double":"Infinity"}"#),
        (.double(-.infinity), #"{"$double":"-Infinity"}"#),
        ("", #""""#), ("a\"b\\c/", #""a\"b\\c/""#),
        ("\u{0}\u{1}\u{8}\u{9}\u{A}\u{C}\u{D}\u{1F}\u{7F}", #""\u0000\u0001\b\t\n\f\r\u001f\#u{7F}""#),
        ("é日😀\u{2028}", "\"é日😀\u{2028}\""),
        (ts(0), #"{"$timestamp":"1970-01-01T00:00:00Z"}"#),
        (ts(1_704_067_200, 123_456_789), #"{"$timestamp":"2024-01-01T00:00:00.123456789Z"}"#),
        (ts(-62_135_596_800), #"{"$timestamp":"0001-01-01T00:00:00Z"}"#),
        (.timestamp(Timestamp(uncheckedSeconds: .max, nanos: 5)),
         #"{"$timestamp":{"nanos":5,"seconds":9223372036854775807}}"#),
        (.bytes([]), #"{"$bytes":""}"#), (.bytes([0, 1, 2, 255]), #"{"$bytes":"AAEC/w=="}"#),
        (key("users/alice"), #"{"$ref":"users/alice"}"#),
        (geo(1, -2.5), #"{"$geo":[1.0,-2.5]}"#),
        ([], "[]"), ([1, 1.0, "x", [[]]], #"[1,1.0,"x",[[]]]"#),
        ([:], "{}"),
        (["b": 1, "a": 2, "é": 3, "z": 4, "": 5], #"{"":5,"a":2,"b":1,"z":4,"é":3}"#),
        (["$ref": "x"], #"{"$map":{"$ref":"x"}}"#),
        (["$map": [:]], #"{"$map":{"$map":{}}}"#),
        (["$other": 1], #"{"$map":{"$other":1}}"#),
        (["$ref": "x", "y": 1], #"{"$ref":"x","y":1}"#),
        (["a": ["$bytes": .bytes([1])]], #"{"a":{"$map":{"$bytes":{"$bytes":"AQ=="}}}}"#),
    ]

    @Test func canonicalOutput() throws {
        for (value, json) in Self.canonical {
            #expect(value.jsonString == json, "\(value)")
            #expect(value.jsonBytes == Array(json.utf8))
            let back = try Value(json: json)
            #expect(back.isIdentical(to: value), "\(json) read back as \(back)")
        }
    }

    /// Inputs that are not canonical but valid, and what they mean.
    static let readings: [(String, Value)] = [
        (" \t\r\n 1 \n", 1), ("-0", .integer(0)), ("-0.0", .double(-0.0)), ("1E2", .double(100)),
        ("1e+2", .double(100)), ("-1.5e-3", .double(-0.0015)), ("0.0", .double(0)),
        ("9223372036854775808", .double(9.223372036854775808e18)),
        ("-9223372036854775809", .double(-9.223372036854775808e18)),
        ("123456789012345678901234567890", .double(1.2345678901234568e29)),
        ("1e-400", .double(0)),
        (#""\u00e9\u00E9\/\ud83d\ude00\uD834\uDD1E\u0000""#, "éé/😀𝄞\u{0}"),
        (#"{"$double": 1}"#, .double(1)), (#"{"$double": 9007199254740993}"#, .double(9_007_199_254_740_992)),
        (#"{"$double": -2.5}"#, .double(-2.5)),
        (#"{"$timestamp": "2024-01-01T01:00:00+01:00"}"#, ts(1_704_067_200)),
        (#"{"$timestamp": {"seconds": 1, "nanos": 2}}"#, ts(1, 2)),
        (#"{"$geo": [0, 180]}"#, geo(0, 180)),
        (#"{"$geo": [-0.0, 1]}"#, geo(0, 1)),
        (#"{"$ref": "/a/b/"}"#, key("a/b")),
        (#"{"$other": 1}"#, ["$other": 1]),
        (#"{"$": 1}"#, ["$": 1]),
        (#"{"$map": {"$ref": {"$bytes": "AA=="}}}"#, ["$ref": .bytes([0])]),
        (#"{"$ref": "a/b", "$bytes": "AA=="}"#, ["$ref": "a/b", "$bytes": "AA=="]),
        (#"{"a":{"__type__":"server_timestamp","__local_write_time__":{"$timestamp":"1970-01-01T00:00:05Z"}}}"#,
         ["a": .pendingServerTimestamp(localWriteTime: try! Timestamp(seconds: 5), previous: nil)]),
    ]

    @Test func readings() throws {
        for (json, expected) in Self.readings {
            let v = try Value(json: json)
            #expect(v.isIdentical(to: expected), "\(json) → \(v), expected \(expected)")
        }
    }

    @Test func prettyPrinting() throws {
        let v: Value = ["b": [1, ["c": .null]], "a": [:], "e": [], "g": Self.geo(1, 2)]
        let pretty = v.jsonString(pretty: true)
        #expect(pretty == """
            {
              "a": {},
              "b": [
                1,
                {
                  "c": null
                }
              ],
              "e": [],
              "g": {
                "$geo": [
                  1.0,
                  2.0
                ]
              }
            }
            """)
        #expect(try Value(json: pretty).isIdentical(to: v))
        #expect(Value.integer(3).jsonString(pretty: true) == "3")
    }

    @Test func objectValues() throws {
        let doc = try ObjectValue(json: #"{"$ref": "x", "n": {"$ref": "a/b"}, "m": {"$ref": "x", "k": 1}}"#)
        #expect(doc.fields["$ref"]?.isIdentical(to: "x") == true, "top level is read literally")
        #expect(doc.fields["n"]?.isIdentical(to: Self.key("a/b")) == true)
        #expect(doc.jsonString == #"{"$ref":"x","m":{"$ref":"x","k":1},"n":{"$ref":"a/b"}}"#)
        #expect(try ObjectValue(json: doc.jsonString) == doc)
        #expect(ObjectValue.empty.jsonString == "{}")
        #expect(try ObjectValue(json: "{}") == .empty)
        let single = ObjectValue(["$map": 1])
        #expect(single.jsonString == #"{"$map":1}"#)
        #expect(try ObjectValue(json: single.jsonString) == single)
        #expect(try ObjectValue(jsonBytes: Array(#"{"a":1}"#.utf8)) == ObjectValue(["a": 1]))
    }

    // MARK: Errors

    /// Malformed input, a fragment of the message, and a fragment of the location.
    static let errors: [(String, String, String)] = [
        ("", "expected a value, found end of input", "byte offset 0"),
        ("   ", "expected a value, found end of input", "column 4 (byte offset 3)"),
        ("[1,]", "expected a value, found ']'", "byte offset 3"),
        ("[1 2]", "expected ',' or ']' after an array element, found '2'", "byte offset 3"),
        ("[1", "expected ',' or ']' after an array element, found end of input", "byte offset 2"),
        (#"{"a":1,}"#, "expected a string key, found '}'", "byte offset 7"),
        ("{a:1}", "expected a string key, found 'a'", "byte offset 1"),
        (#"{"a" 1}"#, "expected ':' after the object key \"a\", found '1'", "byte offset 5"),
        (#"{"a":1 "b":2}"#, "expected ',' or '}' after an object member, found '\"'", "byte offset 7"),
        ("01", "leading zeros are not allowed", "byte offset 0"),
        ("-01", "leading zeros are not allowed", "byte offset 0"),
        ("1.", "expected a digit after '.', found end of input", "byte offset 2"),
        (".5", "expected a value, found '.'", "byte offset 0"),
        ("1e", "expected a digit in the exponent", "byte offset 2"),
        ("1e+", "expected a digit in the exponent", "byte offset 3"),
        ("-", "expected a digit after '-', found end of input", "byte offset 1"),
        ("-a", "expected a digit after '-', found 'a'", "byte offset 1"),
        ("+1", "expected a value, found '+'", "byte offset 0"),
        ("NaN", "expected a value, found 'N'", "byte offset 0"),
        ("Infinity", "expected a value, found 'I'", "byte offset 0"),
        ("tru", "expected 'true'", "byte offset 0"),
        ("nul", "expected 'null'", "byte offset 0"),
        ("[fals]", "expected 'false'", "byte offset 1"),
        ("1 2", "unexpected '2' after the JSON value", "byte offset 2"),
        ("{} x", "unexpected 'x' after the JSON value", "byte offset 3"),
        ("1\u{0}", "unexpected byte 0x00 after the JSON value", "byte offset 1"),
        ("1e400", "the number 1e400 is too large for a double", "byte offset 0"),
        ("-1e400", "the number -1e400 is too large for a double", "byte offset 0"),
        (#"{"a":1,"a":2}"#, "duplicate key \"a\"", "byte offset 7"),
        (#"{"b":{"x":1,"y":2,"x":3}}"#, "duplicate key \"x\"", "byte offset 18"),
        ("{\"é\":1,\"e\u{301}\":2}", "canonically equivalent to the earlier key", "byte offset"),
        // Past eight members the keys seen are kept in a dictionary: the same errors.
        (#"{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"c":11}"#, "duplicate key \"c\"", "byte offset 62"),
        (#"{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"a":9}"#, "duplicate key \"a\"", "byte offset 49"),
        ("{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"é\":9,\"e\u{301}\":10}",
         "canonically equivalent to the earlier key", "byte offset"),
        (#""\ud800""#, "lone high surrogate \\uD800", "byte offset 1"),
        (#""\ud83dx""#, "lone high surrogate \\uD83D: expected a \\uDC00-\\uDFFF low surrogate", "byte offset 1"),
        (#""\ud800\u0041""#, "followed by \\u0041, not a low surrogate", "byte offset 1"),
        (#""\ud800\ud800""#, "not a low surrogate", "byte offset 1"),
        (#""\udc00""#, "lone low surrogate \\uDC00", "byte offset 1"),
        (#""a\x""#, "invalid escape '\\x'", "byte offset 2"),
        (#""\u12""#, "expected 4 hex digits after \\u, found '\"'", "byte offset 5"),
        (#""\u12g4""#, "expected 4 hex digits after \\u, found 'g'", "byte offset 5"),
        (#""abc"#, "unterminated string (it starts at byte offset 0)", "byte offset 4"),
        (#""abc\"#, "unterminated escape sequence", "byte offset 4"),
        ("\"a\nb\"", "control character U+000A must be escaped", "byte offset 2"),
        ("\"\u{1F}\"", "control character U+001F must be escaped", "byte offset 1"),
        ("{\n  \"a\": tru\n}", "expected 'true'", "line 2, column 8 (byte offset 9)"),
        ("[\"é😀\", x]", "expected a value, found 'x'", "line 1, column 8 (byte offset 11)"),
        // Typed escapes with a bad payload are errors, not plain maps.
        (#"{"$timestamp": 5}"#, "$timestamp expects an RFC 3339 string", "byte offset 15"),
        (#"{"$timestamp": "2024-13-01T00:00:00Z"}"#, "$timestamp: not an RFC 3339 timestamp", "byte offset 15"),
        (#"{"$timestamp": "2024-01-01"}"#, "not an RFC 3339 timestamp", "byte offset 15"),
        (#"{"$timestamp": {"seconds": 1}}"#, "with both keys", "byte offset 15"),
        (#"{"$timestamp": {"seconds": 1, "nanos": 1000000000}}"#, "nanos must be in 0..<1000000000", "byte offset 15"),
        (#"{"$timestamp": {"seconds": 1.5, "nanos": 0}}"#, "\"seconds\" must be an integer", "byte offset 27"),
        (#"{"$timestamp": {"seconds": 1, "nanos": 0, "x": 0}}"#, "unexpected key \"x\"", "byte offset 42"),
        (#"{"$bytes": 1}"#, "$bytes expects a base64 string, found a number", "byte offset 11"),
        (#"{"$bytes": "abc"}"#, "base64 length 3 is not a multiple of 4", "byte offset 11"),
        (#"{"$bytes": "ab=c"}"#, "misplaced '=' padding at position 2", "byte offset 11"),
        (#"{"$bytes": "a==="}"#, "misplaced '=' padding at position 1", "byte offset 11"),
        (#"{"$bytes": "ab!="}"#, "invalid base64 character '!' at position 2", "byte offset 11"),
        (#"{"$bytes": "ab c"}"#, "invalid base64 character byte 0x20 at position 2", "byte offset 11"),
        (#"{"$bytes": "AB=="}"#, "non-zero bits in the base64 padding", "byte offset 11"),
        (#"{"$bytes": "AAB="}"#, "non-zero bits in the base64 padding", "byte offset 11"),
        (#"{"$bytes": "AA-_"}"#, "invalid base64 character '-'", "byte offset 11"),
        (#"{"$ref": "a"}"#, "$ref: a document path needs an even number of segments", "byte offset 9"),
        (#"{"$ref": "a/__b__"}"#, "reserved", "byte offset 9"),
        (#"{"$ref": ["a", "b"]}"#, "$ref expects a document path string", "byte offset 9"),
        (#"{"$geo": [91, 0]}"#, "$geo: latitude must be a finite number in [-90, 90], got 91.0", "byte offset 9"),
        (#"{"$geo": [0, -180.5]}"#, "longitude must be a finite number", "byte offset 9"),
        (#"{"$geo": [1]}"#, "$geo expects [latitude, longitude], found an array of 1 element", "byte offset 9"),
        (#"{"$geo": [1, "2"]}"#, "$geo expects [latitude, longitude]", "byte offset 9"),
        (#"{"$double": "nan"}"#, "$double expects \"NaN\", \"Infinity\", \"-Infinity\" or a number, found the string \"nan\"",
         "byte offset 12"),
        (#"{"$double": null}"#, "found null", "byte offset 12"),
        (#"{"$map": [1]}"#, "$map expects an object, found an array of 1 element", "byte offset 9"),
        (#"{"$map": {"a": {"$bytes": "?"}}}"#, "base64", "byte offset 26"),
    ]

    @Test func errorsNameTheProblemAndPosition() {
        for (json, message, location) in Self.errors {
            do {
                let v = try Value(json: json)
                Issue.record("\(json) was accepted as \(v)")
            } catch {
                #expect(error.code == .invalidArgument, "\(json)")
                #expect(error.message.hasPrefix("invalid JSON: "), "\(json): \(error)")
                #expect(error.message.contains(message), "\(json): \(error)")
                #expect(error.location?.contains(location) == true, "\(json): \(error)")
            }
        }
    }

    @Test func invalidUTF8IsRejected() throws {
        let cases: [([UInt8], String)] = [
            ([0x22, 0xC3, 0x28, 0x22], "invalid UTF-8 (byte 0xc3)"),          // truncated 2-byte sequence
            ([0x22, 0xC0, 0x80, 0x22], "invalid UTF-8 (byte 0xc0)"),          // overlong NUL
            ([0x22, 0xE0, 0x80, 0x80, 0x22], "invalid UTF-8"),                // overlong 3-byte
            ([0x22, 0xED, 0xA0, 0x80, 0x22], "invalid UTF-8 (byte 0xed)"),    // UTF-16 surrogate
            ([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], "invalid UTF-8 (byte 0xf4)"), // above U+10FFFF
            ([0x22, 0xF8, 0x88, 0x80, 0x80, 0x80, 0x22], "invalid UTF-8"),
            ([0x22, 0x80, 0x22], "invalid UTF-8 (byte 0x80)"),                // lone continuation
            ([0x22, 0xE6, 0x97], "invalid UTF-8"),                            // truncated at end
            ([0xC3, 0xA9], "expected a value, found byte 0xc3"),              // non-ASCII outside a string
            ([0xEF, 0xBB, 0xBF, 0x31], "expected a value, found byte 0xef"),  // byte-order mark
        ]
        for (bytes, message) in cases {
            do {
                _ = try Value(jsonBytes: bytes)
                Issue.record("\(bytes) was accepted")
            } catch {
                #expect(error.code == .invalidArgument)
                #expect(error.message.contains(message), "\(bytes): \(error)")
            }
        }
        #expect(try Value(jsonBytes: [0x22, 0xF0, 0x9F, 0x98, 0x80, 0x22]).isIdentical(to: "😀"))
        #expect(try Value(jsonBytes: [0x22, 0xF4, 0x8F, 0xBF, 0xBF, 0x22]).isIdentical(to: "\u{10FFFF}"))
    }

    @Test func nestingLimit() throws {
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(try Value(json: ok).depth == 64)
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        let error = #expect(throws: DocError.self) { try Value(json: deep) }
        #expect(error?.message.contains("nested deeper than 64 levels") == true, "\(String(describing: error))")
        #expect(error?.location?.contains("byte offset 64") == true)
        let objects = String(repeating: #"{"a":"#, count: 65) + "1" + String(repeating: "}", count: 65)
        #expect(throws: DocError.self) { try Value(json: objects) }
        // A pathological input fails fast instead of overflowing the stack.
        #expect(throws: DocError.self) { try Value(json: String(repeating: "[", count: 100_000)) }
    }

    @Test func documentsMustBeObjects() {
        for json in ["[1]", "1", "null", #"{"$ref": "a/b"} 1"#] {
            #expect(throws: DocError.self, "\(json)") { try ObjectValue(json: json) }
        }
        do {
            _ = try ObjectValue(json: " [1]")
        } catch {
            #expect(error.message == "invalid JSON: a document must be a JSON object")
            #expect(error.location == "line 1, column 2 (byte offset 1)")
        }
    }

    @Test func base64Vectors() throws {
        // RFC 4648 §10.
        let vectors = [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="),
                       ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")]
        for (plain, encoded) in vectors {
            #expect(Base64.encode(Array(plain.utf8)) == encoded)
            #expect(try Base64.decode(encoded).get() == Array(plain.utf8))
        }
        let all = (0...255).map { UInt8($0) }
        for n in 0...all.count {
            let data = Array(all[..<n].reversed())
            #expect(try Base64.decode(Base64.encode(data)).get() == data)
        }
        #expect(Base64.encode([0xFB, 0xFF]) == "+/8=")
    }

    // MARK: Properties

    @Test func randomValuesRoundTripIdentically() {
        let seed: UInt64 = 0x15_0A_7E_57
        var failures = 0
        for i in 0..<4000 where failures < 5 {
            var g = RandomValueGenerator(seed: seed, stream: i)
            let v = g.value()
            let json = v.jsonString
            do {
                let back = try Value(json: json)
                let ok = back.isByteIdentical(to: v)
                if !ok { failures += 1 }
                #expect(ok, "seed \(seed) iteration \(i): \(json) read back as \(back)")
                #expect(back.jsonString == json, "seed \(seed) iteration \(i): canonical form is stable")
                let pretty = try Value(json: v.jsonString(pretty: true))
                #expect(pretty.isIdentical(to: v), "seed \(seed) iteration \(i): pretty form of \(json)")
            } catch {
                failures += 1
                Issue.record("seed \(seed) iteration \(i): \(json) failed to parse: \(error)")
            }
            let doc = g.objectValue()
            let docBack = try? ObjectValue(json: doc.jsonString)
            #expect(docBack == doc, "seed \(seed) iteration \(i): document \(doc.jsonString)")
        }
    }

    /// The direct reader (``JSONReader/parseValue(_:)``, what `Value(jsonBytes:)` uses) and the
    /// tree reader with ``JSONValueDecoder`` agree on every text: random values' JSON (compact and
    /// pretty), and the same texts with a byte changed, inserted or removed, where both must
    /// fail with the same error or read the same value.
    @Test func directReaderAgreesWithTheTreeReader() {
        let seed: UInt64 = 0xD1_2EC7
        let noise = Array(#"{}[]",:$0123456789.eE+-tfnulrsa\ "#.utf8) + [0x00, 0x7F, 0xC3, 0xA9, 0xFF]
        var compared = 0, failedBoth = 0
        for i in 0..<3000 {
            var g = RandomValueGenerator(seed: seed, stream: i)
            var text = Array((g.chance(0.5) ? g.value() : Value.map(g.map())).jsonString(pretty: g.chance(0.3)).utf8)
            if i % 3 != 0, !text.isEmpty {
                let at = g.int(0..<text.count)
                switch g.int(0..<3) {
                case 0: text[at] = g.pick(noise)
                case 1: text.insert(g.pick(noise), at: at)
                default: text.remove(at: at)
                }
            }
            let tree = Result { () throws(DocError) -> Value in
                try JSONValueDecoder(source: text).value(try JSONReader.parse(text))
            }
            let direct = Result { () throws(DocError) -> Value in try JSONReader.parseValue(text) }
            compared += 1
            let json = String(decoding: text, as: UTF8.self)
            switch (tree, direct) {
            case (.success(let a), .success(let b)):
                #expect(a.isByteIdentical(to: b), "seed \(seed) iteration \(i): \(json) read as \(a) and \(b)")
            case (.failure(let a), .failure(let b)):
                failedBoth += 1
                #expect(a == b, "seed \(seed) iteration \(i): \(json) failed with \(a) and \(b)")
            default:
                Issue.record("seed \(seed) iteration \(i): \(json): the tree reader gave \(tree), the direct one \(direct)")
            }
        }
        // Both kinds of text were compared.
        #expect(failedBoth > 300 && compared - failedBoth > 1000, "\(failedBoth) of \(compared) failed")
    }

    @Test func anEscapeKeyFollowedByOtherMembersIsAPlainMap() throws {
        let v = try Value(json: #"{"$bytes": {"$bytes": "AQ=="}, "b": [1], "$ref": "x"}"#)
        #expect(v.isIdentical(to: ["$bytes": .bytes([1]), "b": [1], "$ref": "x"]))
        let dup = #expect(throws: DocError.self) { try Value(json: #"{"$ref": "a/b", "$ref": "c/d"}"#) }
        #expect(dup?.message == #"invalid JSON: duplicate key "$ref""#)
        #expect(dup?.location?.contains("byte offset 16") == true, "\(String(describing: dup))")
    }

    @Test func identicalValuesHaveTheSameCanonicalJSON() {
        let seed: UInt64 = 0xC0FFEE
        for i in 0..<2000 {
            var g = RandomValueGenerator(seed: seed, stream: i)
            let a = g.value()
            let b = g.mutated(a)
            let same = a.jsonString == b.jsonString
            #expect(same == a.isByteIdentical(to: b), "seed \(seed) iteration \(i): \(a) vs \(b)")
        }
    }
}

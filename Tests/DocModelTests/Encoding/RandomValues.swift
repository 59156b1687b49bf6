@testable import DocModel

/// A deterministic pseudo-random generator (SplitMix64) that produces random model values for
/// property-style tests: every `Value` type with its edge cases (NaN, -0.0, ±∞, Int64.min/max,
/// 2^53 ± 1, empty strings / bytes / arrays / maps, non-ASCII and astral strings, pending
/// server timestamps, `$`-keyed maps), nested arrays and maps, paths, keys and documents.
///
/// Values are drawn from small pools often enough that random pairs are frequently equal or
/// differ only deep inside, which is what ordering tests need.
///
/// Reproduce a failure with `RandomValueGenerator(seed: s, stream: i)` using the seed and
/// iteration printed by the failing expectation.
struct RandomValueGenerator: RandomNumberGenerator {
    /// The seed this generator started from.
    let seed: UInt64
    private var state: UInt64

    init(seed: UInt64) {
        self.seed = seed
        self.state = seed
    }

    /// An independent generator for iteration `stream` of a test seeded with `seed`.
    init(seed: UInt64, stream: Int) {
        var mixer = RandomValueGenerator(seed: seed ^ (UInt64(truncatingIfNeeded: stream) &* 0x9E37_79B9_7F4A_7C15))
        self.init(seed: mixer.next())
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func int(_ range: Range<Int>) -> Int { Int.random(in: range, using: &self) }
    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }
    mutating func pick<T>(_ items: [T]) -> T { items[int(0..<items.count)] }

    // MARK: Scalars

    static let edgeIntegers: [Int64] = [
        .min, .min + 1, .min + 1023, .min + 1024, .min + 1025, -9_007_199_254_740_993, -9_007_199_254_740_992,
        -9_007_199_254_740_991, -256, -255, -2, -1, 0, 1, 2, 255, 256, 65_536,
        9_007_199_254_740_991, 9_007_199_254_740_992, 9_007_199_254_740_993, 9_007_199_254_740_995,
        1 << 62, (1 << 62) + 1, .max - 1024, .max - 1023, .max - 1, .max,
    ]

    static let edgeDoubles: [Double] = [
        .nan, -.nan, Double(bitPattern: 0x7FF0_0000_0000_0001), -.infinity, .infinity, 0.0, -0.0,
        .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .leastNormalMagnitude, .greatestFiniteMagnitude,
        -.greatestFiniteMagnitude, 1.0, -1.0, 0.5, -1.5, 0.1, 1.0 / 3.0, 2.0, 100.0, 1e16, 1e300, 1e-300,
        9_007_199_254_740_992.0, 9_007_199_254_740_994.0, -9_007_199_254_740_992.0,
        9.223372036854775807e18, -9.223372036854775808e18, 9.223372036854774784e18, 1.8446744073709552e19,
    ]

    /// Characters for strings: ASCII, controls, escapes, NUL, DEL, 2-, 3- and 4-byte UTF-8,
    /// a combining mark and the largest scalar.
    static let characters: [String] = [
        "a", "b", "A", "z", "0", "-", "/", ".", "$", " ", "\"", "\\", "\n", "\t", "\u{0}", "\u{1}", "\u{1F}",
        "\u{7F}", "é", "e", "\u{301}", "ÿ", "日", "\u{2028}", "\u{FFFF}", "😀", "𝄞", "\u{10FFFF}",
    ]

    mutating func integer() -> Int64 {
        switch int(0..<10) {
        case 0..<4: return Int64(int(-3..<4))
        case 4..<7: return pick(Self.edgeIntegers)
        case 7: return Int64(bitPattern: next())
        default: return Int64(bitPattern: next()) >> Int64(int(0..<63))
        }
    }

    mutating func double() -> Double {
        switch int(0..<10) {
        case 0..<3: return Double(int(-3..<4)) / (chance(0.5) ? 1 : 2)
        case 3..<6: return pick(Self.edgeDoubles)
        case 6: return Double(integer())
        case 7:
            // Any bit pattern (including NaN payloads, infinities and subnormals).
            return Double(bitPattern: next())
        default:
            return Double.random(in: -1e6...1e6, using: &self)
        }
    }

    mutating func string(maxLength: Int = 5) -> String {
        var s = ""
        for _ in 0..<int(0..<(maxLength + 1)) { s += pick(Self.characters) }
        return s
    }

    mutating func bytes() -> [UInt8] {
        (0..<int(0..<6)).map { _ in chance(0.6) ? pick([0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF]) : UInt8.random(in: 0...255, using: &self) }
    }

    mutating func timestamp() -> Timestamp {
        switch int(0..<10) {
        case 0: return try! Timestamp(seconds: pick([Timestamp.minSeconds, Timestamp.maxSeconds, 0, -1]),
                                      nanos: pick([0, 1, 999_999_999]))
        case 1:
            // Outside 0001…9999: only reachable through Timestamp(microseconds:).
            return Timestamp(uncheckedSeconds: pick([.min, .max, Timestamp.minSeconds - 1, Timestamp.maxSeconds + 1]),
                             nanos: pick([0, 5]))
        case 2..<6:
            return try! Timestamp(seconds: Int64(int(-2..<3)), nanos: pick([0, 1, 500_000_000, 123_000, 7_000_000]))
        default:
            return try! Timestamp(seconds: Int64.random(in: Timestamp.minSeconds...Timestamp.maxSeconds, using: &self),
                                  nanos: Int32(pick([0, 1_000_000, 1_000, 1]) * int(0..<1000)))
        }
    }

    mutating func geoPoint() -> GeoPoint {
        func coordinate(_ limit: Double, _ g: inout RandomValueGenerator) -> Double {
            g.chance(0.5) ? g.pick([-limit, -1, 0, 0.5, 1, limit, -0.0]) : Double.random(in: -limit...limit, using: &g)
        }
        return try! GeoPoint(latitude: coordinate(90, &self), longitude: coordinate(180, &self))
    }

    static let segments = ["a", "b", "a-", "aa", "x y", "é", "😀", "\u{1}", "A", "z", "1", "a\u{0}b", "\u{FFFF}"]

    /// A valid path with `count` segments (random 0…6 when nil).
    mutating func resourcePath(count: Int? = nil) -> ResourcePath {
        let n = count ?? int(0..<7)
        return try! ResourcePath(segments: (0..<n).map { _ in chance(0.85) ? pick(Self.segments) : nonEmptySegment() })
    }

    private mutating func nonEmptySegment() -> String {
        while true {
            let s = string(maxLength: 4)
            if (try? ResourcePath(segments: [s])) != nil { return s }
        }
    }

    mutating func documentKey() -> DocumentKey {
        try! DocumentKey(path: resourcePath(count: pick([2, 2, 2, 4, 6])))
    }

    mutating func mapKey() -> String {
        chance(0.2) ? pick(["$ref", "$attachment", "$map", "$timestamp", "$bytes", "$geo", "$double", "$x", "$", "__type__"]) : string(maxLength: 3)
    }

    // MARK: Values

    /// A random value; arrays and maps nest up to `maxDepth` levels.
    mutating func value(maxDepth: Int = 4) -> Value {
        let kinds = maxDepth > 0 ? 14 : 12
        switch int(0..<kinds) {
        case 0: return .null
        case 1: return .boolean(chance(0.5))
        case 2: return .integer(integer())
        case 3: return .double(double())
        case 4: return .timestamp(timestamp())
        case 5:
            return .pendingServerTimestamp(
                localWriteTime: try! Timestamp(seconds: Int64(int(0..<3)), nanos: Int32(int(0..<2))),
                previous: chance(0.5) ? value(maxDepth: 0) : nil)
        case 6: return .string(string())
        case 7: return .bytes(bytes())
        case 8: return .reference(documentKey())
        case 9: return .geoPoint(geoPoint())
        case 10:
            return chance(0.5) ? .integer(Int64(int(-2..<3))) : .double(Double(int(-2..<3)))
        case 11: return .attachment(AttachmentID(digest: (0..<32).map { _ in UInt8(int(0..<256)) }))
        case 12: return .array((0..<int(0..<5)).map { _ in value(maxDepth: maxDepth - 1) })
        default: return .map(map(maxDepth: maxDepth - 1))
        }
    }

    mutating func map(maxDepth: Int = 3) -> [String: Value] {
        var m: [String: Value] = [:]
        for _ in 0..<int(0..<5) { m[mapKey()] = value(maxDepth: maxDepth) }
        return m
    }

    /// A value close to `v`: the same value with another representation (`1` ↔ `1.0`,
    /// `0.0` ↔ `-0.0`), or a change deep inside (an element replaced, added or removed).
    mutating func mutated(_ v: Value, maxDepth: Int = 3) -> Value {
        switch v {
        case .integer(let i) where chance(0.5):
            let d = Double(i)
            return Value.compareIntegerToDouble(i, d) == 0 && chance(0.7) ? .double(d) : .integer(i &+ Int64(int(-1..<2)))
        case .double(let d) where chance(0.5):
            if d == 0 { return .double(-d) }
            if let i = Int64(exactly: d) { return .integer(i) }
            return .double(chance(0.5) ? d.nextUp : d.nextDown)
        case .string(let s) where chance(0.5):
            return .string(chance(0.5) ? s + pick(Self.characters) : String(s.dropLast()))
        case .array(var a) where !a.isEmpty && chance(0.8):
            let i = int(0..<a.count)
            switch int(0..<3) {
            case 0: a[i] = mutated(a[i], maxDepth: maxDepth - 1)
            case 1: a.remove(at: i)
            default: a.insert(value(maxDepth: max(0, maxDepth - 1)), at: i)
            }
            return .array(a)
        case .map(var m) where !m.isEmpty && !v.isServerTimestamp && chance(0.8):
            let k = pick(Array(m.keys))
            switch int(0..<3) {
            case 0: m[k] = mutated(m[k]!, maxDepth: maxDepth - 1)
            case 1: m[k] = nil
            default: m[mapKey()] = value(maxDepth: max(0, maxDepth - 1))
            }
            return .map(m)
        default:
            return chance(0.3) ? v : value(maxDepth: maxDepth)
        }
    }

    // MARK: Documents

    mutating func objectValue() -> ObjectValue { ObjectValue(map()) }

    mutating func snapshotVersion() -> SnapshotVersion {
        SnapshotVersion(microseconds: chance(0.3) ? pick([0, 1, -1, .max, .min]) : Int64.random(in: 0...(1 << 52), using: &self))
    }

    mutating func document() -> Document {
        Document(key: documentKey(), data: objectValue(), version: snapshotVersion(),
                 createTime: snapshotVersion(), hasLocalMutations: chance(0.5), hasCommittedMutations: chance(0.5))
    }

    mutating func maybeDocument() -> MaybeDocument {
        switch int(0..<3) {
        case 0: return .document(document())
        case 1: return .noDocument(NoDocument(key: documentKey(), version: snapshotVersion(), hasCommittedMutations: chance(0.5)))
        default: return .unknown(UnknownDocument(key: documentKey(), version: snapshotVersion()))
        }
    }
}

extension Value {
    /// ``isIdentical(to:)`` that also compares map keys by their UTF-8 bytes (a Swift
    /// dictionary looks keys up by Unicode canonical equivalence). NaNs are all identical.
    func isByteIdentical(to other: Value) -> Bool {
        isIdentical(to: other) && canonicalString.utf8.elementsEqual(other.canonicalString.utf8)
    }
}

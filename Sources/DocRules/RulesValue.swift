internal import DocModel

/// A value during rules evaluation: the rules language's types (`bool`, `int`, `float`,
/// `string`, `bytes`, `list`, `map`, `set`, `path`, `timestamp`, `duration`, `latlng`,
/// `map_diff`), the namespaces (`math`, `duration`, …), and — only while deciding a `list`
/// request — values the query leaves open (``Symbol``, ``PartialMap``).
enum RulesValue: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case float(Double)
    case string(String)
    case bytes([UInt8])
    case list([RulesValue])
    case map([String: RulesValue])
    case set(Set<RulesValue>)
    case path(RulesPath)
    case timestamp(Timestamp)
    case duration(RulesDuration)
    case latlng(GeoPoint)
    case mapDiff(MapDiff)
    case namespace(Namespace)
    /// A value a list query does not pin down (see `ListQueryAnalysis.swift`).
    case unknown(Symbol)
    /// A map of which only some entries are known (a list query's `resource.data`).
    case partialMap(PartialMap)

    /// The global objects whose methods are library functions.
    enum Namespace: String, Sendable {
        case math, duration, timestamp, latlng, hashing
    }

    /// The type name used in messages (the names `is` accepts).
    var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "bool"
        case .int: return "int"
        case .float: return "float"
        case .string: return "string"
        case .bytes: return "bytes"
        case .list: return "list"
        case .map, .partialMap: return "map"
        case .set: return "set"
        case .path: return "path"
        case .timestamp: return "timestamp"
        case .duration: return "duration"
        case .latlng: return "latlng"
        case .mapDiff: return "map_diff"
        case .namespace(let n): return n.rawValue
        case .unknown: return "unknown"
        }
    }

    var isUnknown: Bool {
        switch self {
        case .unknown, .partialMap: return true
        default: return false
        }
    }

    static let anyUnknown = RulesValue.unknown(Symbol())
}

/// A path value: `/databases/(default)/documents/users/alice` is
/// `["databases", "(default)", "documents", "users", "alice"]`.
struct RulesPath: Sendable, Hashable, CustomStringConvertible {
    var segments: [String]

    var description: String { segments.map { "/" + $0 }.joined() }

    static func == (a: RulesPath, b: RulesPath) -> Bool {
        a.segments.count == b.segments.count && zip(a.segments, b.segments).allSatisfy { equalUTF8($0, $1) }
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(segments.count)
        for s in segments { hashUTF8(s, into: &hasher) }
    }
}

/// A signed span of time with nanosecond precision.
struct RulesDuration: Sendable, Hashable, Comparable {
    var nanoseconds: Int128

    /// The largest duration (about 10,000 years, as the protobuf Duration allows).
    static let maxNanoseconds: Int128 = 315_576_000_000 * 1_000_000_000 + 999_999_999

    init?(nanoseconds: Int128) {
        guard nanoseconds >= -Self.maxNanoseconds, nanoseconds <= Self.maxNanoseconds else { return nil }
        self.nanoseconds = nanoseconds
    }

    /// Whole seconds (truncated toward zero).
    var seconds: Int64 { Int64(nanoseconds / 1_000_000_000) }
    /// The sub-second part, with the sign of the duration.
    var nanos: Int64 { Int64(nanoseconds % 1_000_000_000) }

    static func < (a: RulesDuration, b: RulesDuration) -> Bool { a.nanoseconds < b.nanoseconds }
}

/// The result of `a.diff(b)` for two maps.
struct MapDiff: Sendable, Hashable {
    var lhs: [String: RulesValue]
    var rhs: [String: RulesValue]

    /// Keys in the receiver but not in the argument.
    var addedKeys: Set<RulesValue> { Set(lhs.keys.filter { rhs[$0] == nil }.map(RulesValue.string)) }
    /// Keys in the argument but not in the receiver.
    var removedKeys: Set<RulesValue> { Set(rhs.keys.filter { lhs[$0] == nil }.map(RulesValue.string)) }
    /// Keys in both whose values differ.
    var changedKeys: Set<RulesValue> {
        Set(lhs.compactMap { k, v in rhs[k].map { RulesValue.equal($0, v) ? nil : RulesValue.string(k) } ?? nil })
    }
    /// Keys in both whose values are equal.
    var unchangedKeys: Set<RulesValue> {
        Set(lhs.compactMap { k, v in rhs[k].map { RulesValue.equal($0, v) ? RulesValue.string(k) : nil } ?? nil })
    }
    /// Added, removed or changed keys.
    var affectedKeys: Set<RulesValue> { addedKeys.union(removedKeys).union(changedKeys) }
}

// MARK: - Equality and hashing

extension RulesValue: Hashable {
    /// The rules language's `==`: numbers compare by value across int and float (`1 == 1.0`),
    /// NaN equals nothing, strings compare by their UTF-8 bytes, lists element-wise, maps and
    /// sets by content; values of different types are not equal (not an error).
    static func equal(_ a: RulesValue, _ b: RulesValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case let (.bool(x), .bool(y)): return x == y
        case let (.int(x), .int(y)): return x == y
        case let (.float(x), .float(y)): return x == y
        case let (.int(x), .float(y)): return compareIntDouble(x, y) == 0
        case let (.float(x), .int(y)): return compareIntDouble(y, x) == 0
        case let (.string(x), .string(y)): return equalUTF8(x, y)
        case let (.bytes(x), .bytes(y)): return x == y
        case let (.list(x), .list(y)): return x.count == y.count && zip(x, y).allSatisfy { equal($0, $1) }
        case let (.map(x), .map(y)):
            guard x.count == y.count else { return false }
            for (k, v) in x {
                guard let w = y[k], equal(v, w) else { return false }
            }
            return true
        case let (.set(x), .set(y)): return x == y
        case let (.path(x), .path(y)): return x == y
        case let (.timestamp(x), .timestamp(y)): return x == y
        case let (.duration(x), .duration(y)): return x == y
        case let (.latlng(x), .latlng(y)): return x == y
        case let (.mapDiff(x), .mapDiff(y)): return x == y
        case let (.namespace(x), .namespace(y)): return x == y
        default: return false
        }
    }

    static func == (a: RulesValue, b: RulesValue) -> Bool { equal(a, b) }

    func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let b): hasher.combine(1); hasher.combine(b)
        case .int(let i): hasher.combine(2); hasher.combine(i)
        case .float(let d):
            hasher.combine(2)
            if d.isFinite, d == d.rounded(.towardZero), d >= -9.223372036854775808e18, d < 9.223372036854775808e18 {
                hasher.combine(Int64(d))   // equal to an int: hash like that int
            } else {
                hasher.combine(d.bitPattern)
            }
        case .string(let s): hasher.combine(3); hashUTF8(s, into: &hasher)
        case .bytes(let b): hasher.combine(4); hasher.combine(b)
        case .list(let l): hasher.combine(5); hasher.combine(l)
        case .map(let m):
            hasher.combine(6)
            hasher.combine(m.count)
            var acc = 0
            for (k, v) in m {
                var h = Hasher()
                h.combine(RulesValue.string(k))
                h.combine(v)
                acc ^= h.finalize()
            }
            hasher.combine(acc)
        case .set(let s): hasher.combine(7); hasher.combine(s)
        case .path(let p): hasher.combine(8); hasher.combine(p)
        case .timestamp(let t): hasher.combine(9); hasher.combine(t)
        case .duration(let d): hasher.combine(10); hasher.combine(d)
        case .latlng(let g): hasher.combine(11); hasher.combine(g)
        case .mapDiff(let d): hasher.combine(12); hasher.combine(d)
        case .namespace(let n): hasher.combine(13); hasher.combine(n)
        case .unknown, .partialMap: hasher.combine(14)
        }
    }

    /// Exact comparison of an integer with a double: -1, 0 or 1; NaN compares as `nil`.
    static func compareIntDouble(_ i: Int64, _ d: Double) -> Int? {
        if d.isNaN { return nil }
        if d >= 9.223372036854775808e18 { return -1 }
        if d < -9.223372036854775808e18 { return 1 }
        let t = d.rounded(.down)
        let ti = Int64(t)
        if i != ti { return i < ti ? -1 : 1 }
        return d > t ? -1 : 0
    }

    /// The ordering `<`, `<=`, `>`, `>=` use: numbers, strings (UTF-8 byte order), bytes,
    /// timestamps and durations; `nil` when the two cannot be ordered (different types, NaN).
    static func order(_ a: RulesValue, _ b: RulesValue) -> Int? {
        switch (a, b) {
        case let (.int(x), .int(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.float(x), .float(y)):
            if x.isNaN || y.isNaN { return nil }
            return x == y ? 0 : (x < y ? -1 : 1)
        case let (.int(x), .float(y)): return compareIntDouble(x, y)
        case let (.float(x), .int(y)): return compareIntDouble(y, x).map { -$0 }
        case let (.string(x), .string(y)):
            var ia = x.utf8.makeIterator(), ib = y.utf8.makeIterator()
            while true {
                switch (ia.next(), ib.next()) {
                case (nil, nil): return 0
                case (nil, _): return -1
                case (_, nil): return 1
                case let (p?, q?): if p != q { return p < q ? -1 : 1 }
                }
            }
        case let (.bytes(x), .bytes(y)):
            for (p, q) in zip(x, y) where p != q { return p < q ? -1 : 1 }
            return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
        case let (.timestamp(x), .timestamp(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.duration(x), .duration(y)): return x == y ? 0 : (x < y ? -1 : 1)
        default: return nil
        }
    }
}

// MARK: - Conversion from stored values

extension RulesValue {
    /// A stored value as the rules see it: references become paths under
    /// `/databases/<database>/documents`, attachment references the path of their object in
    /// the storage rules (`/b/default/o/attachments/<id>`), geo points `latlng`s, and a pending server timestamp
    /// the request time (the time the write will commit at).
    init(_ value: Value, database: String, requestTime: Timestamp) {
        switch value {
        case .null: self = .null
        case .boolean(let b): self = .bool(b)
        case .integer(let i): self = .int(i)
        case .double(let d): self = .float(d)
        case .timestamp(let t): self = .timestamp(t)
        case .string(let s): self = .string(s)
        case .bytes(let b): self = .bytes(b)
        case .reference(let k): self = .path(RulesPath(segments: ["databases", database, "documents"] + k.path.segments))
        case .attachment(let id): self = .path(RulesPath(segments: ["b", "default", "o", "attachments", id.hex]))
        case .geoPoint(let g): self = .latlng(g)
        case .array(let a): self = .list(a.map { RulesValue($0, database: database, requestTime: requestTime) })
        case .map(let m):
            if value.isServerTimestamp {
                self = .timestamp(requestTime)
            } else {
                self = .map(m.mapValues { RulesValue($0, database: database, requestTime: requestTime) })
            }
        }
    }
}

// MARK: - Display

extension RulesValue: CustomStringConvertible {
    /// A short, deterministic rendering for messages (`'alice'`, `[1, 2]`, `{'a': 1}`).
    var description: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .float(let d): return "\(d)"
        case .string(let s): return "'" + s + "'"
        case .bytes(let b): return "b'" + b.map { String($0, radix: 16) }.joined() + "'"
        case .list(let l): return "[" + l.map(\.description).joined(separator: ", ") + "]"
        case .map(let m):
            return "{" + m.keys.sorted().map { "'\($0)': \(m[$0]!)" }.joined(separator: ", ") + "}"
        case .set(let s): return "set(" + s.map(\.description).sorted().joined(separator: ", ") + ")"
        case .path(let p): return p.description
        case .timestamp(let t): return "timestamp(\(t))"
        case .duration(let d): return "duration(\(d.nanoseconds)ns)"
        case .latlng(let g): return "latlng(\(g.latitude), \(g.longitude))"
        case .mapDiff: return "map_diff"
        case .namespace(let n): return n.rawValue
        case .unknown: return "<unknown>"
        case .partialMap: return "<partial map>"
        }
    }
}

/// A Firestore value: every type a document field can hold.
///
/// Equality (`==`) and ordering (`<`) follow Firestore's query semantics: numbers compare
/// numerically across integers and doubles (`1 == 1.0`, `-0.0 == 0.0`), NaN equals NaN and
/// sorts before every other number, and values of different types order by type:
/// null < boolean < number < timestamp < (pending server timestamp) < string < bytes <
/// reference < attachment < geo point < array < map.
///
/// For "is this the very same stored value" (int `1` is not double `1.0`), use
/// ``isIdentical(to:)``.
public enum Value: Sendable {
    /// The null value; sorts before every other value.
    case null
    /// A boolean; `false` sorts before `true`.
    case boolean(Bool)
    /// A 64-bit signed integer; compares equal to a double of the same numeric value.
    case integer(Int64)
    /// A 64-bit floating-point number; `-0.0 == 0.0`, and NaN equals NaN and sorts before every
    /// other number.
    case double(Double)
    /// A point in time with nanosecond precision (see ``Timestamp`` for its range).
    case timestamp(Timestamp)
    /// A string; strings compare by their UTF-8 bytes, not by Unicode canonical equivalence.
    case string(String)
    /// Raw bytes, compared byte by byte.
    case bytes([UInt8])
    /// A reference to another document of the same database.
    case reference(DocumentKey)
    /// A reference to an attachment (a file stored beside the documents, see
    /// `DocumentStore.attachments`): a write that holds one is sent to the server only after
    /// the attachment is uploaded.
    case attachment(AttachmentID)
    /// A latitude/longitude pair.
    case geoPoint(GeoPoint)
    /// An ordered list of values; an array may not directly hold another array (documents holding
    /// one are refused by ``DocumentLimits/validate(_:for:)``).
    case array([Value])
    /// Named fields, nested; also the representation of a pending server timestamp
    /// (``isServerTimestamp``).
    case map([String: Value])
}

extension Value {
    /// The largest nesting depth of maps and arrays a document may have.
    public static let maxDepth = 20

    /// Whether this is ``null``.
    public var isNull: Bool { if case .null = self { return true } else { return false } }

    /// Whether this is an ``integer(_:)`` or a ``double(_:)``.
    public var isNumber: Bool {
        switch self {
        case .integer, .double: return true
        default: return false
        }
    }

    /// Whether this is a ``double(_:)`` holding NaN.
    public var isNaN: Bool { if case .double(let d) = self { return d.isNaN } else { return false } }

    /// The boolean, or `nil` when this is not a ``boolean(_:)``.
    public var boolValue: Bool? { if case .boolean(let v) = self { return v } else { return nil } }
    /// The integer, or `nil` when this is not an ``integer(_:)`` (doubles are not converted).
    public var integerValue: Int64? { if case .integer(let v) = self { return v } else { return nil } }
    /// The string, or `nil` when this is not a ``string(_:)``.
    public var stringValue: String? { if case .string(let v) = self { return v } else { return nil } }
    /// The timestamp, or `nil` when this is not a ``timestamp(_:)``.
    public var timestampValue: Timestamp? { if case .timestamp(let v) = self { return v } else { return nil } }
    /// The elements, or `nil` when this is not an ``array(_:)``.
    public var arrayValue: [Value]? { if case .array(let v) = self { return v } else { return nil } }
    /// The fields, or `nil` when this is not a ``map(_:)`` (a pending server timestamp is a map).
    public var mapValue: [String: Value]? { if case .map(let v) = self { return v } else { return nil } }

    /// The numeric value as a `Double` (integers converted), or `nil` for non-numbers.
    public var doubleValue: Double? {
        switch self {
        case .integer(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    /// The name of the value's type, as used in error messages and the rules language.
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .boolean: return "boolean"
        case .integer: return "integer"
        case .double: return "double"
        case .timestamp: return "timestamp"
        case .string: return "string"
        case .bytes: return "bytes"
        case .reference: return "reference"
        case .attachment: return "attachment"
        case .geoPoint: return "geoPoint"
        case .array: return "array"
        case .map: return isServerTimestamp ? "serverTimestamp" : "map"
        }
    }

    /// The nesting depth: 0 for scalars, 1 + the deepest child for arrays and maps.
    public var depth: Int {
        switch self {
        case .array(let a): return 1 + (a.map(\.depth).max() ?? 0)
        case .map(let m): return 1 + (m.values.map(\.depth).max() ?? 0)
        default: return 0
        }
    }
}

// MARK: - Literals

extension Value: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .boolean(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: Value...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, Value)...) {
        self = .map(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

// MARK: - Equality and hashing (Firestore query semantics)

extension Value: Hashable, Comparable {
    public static func == (a: Value, b: Value) -> Bool { compare(a, b) == 0 }

    public static func < (a: Value, b: Value) -> Bool { compare(a, b) < 0 }

    /// Hashing consistent with `==`: numbers that compare equal hash equal.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(typeOrder)
        switch self {
        case .null: break
        case .boolean(let v): hasher.combine(v)
        case .integer(let i):
            let d = Double(i)
            if d < 9.223372036854775807e18, Int64(d) == i { hasher.combine(d) } else { hasher.combine(i) }
        case .double(let d):
            if d.isNaN { hasher.combine(Double.nan.bitPattern) } else { hasher.combine(d + 0.0) }
        case .timestamp(let t): hasher.combine(t)
        case .string(let s): hashUTF8(s, into: &hasher)
        case .bytes(let b): hasher.combine(b)
        case .reference(let k): hasher.combine(k)
        case .attachment(let id): hasher.combine(id)
        case .geoPoint(let g): hasher.combine(g)
        case .array(let a): hasher.combine(a)
        case .map(let m):
            if let t = serverTimestampLocalWriteTime { hasher.combine(t); break }
            hasher.combine(m.count)
            for key in m.keys.sorted(by: { compareUTF8($0, $1) < 0 }) {
                hashUTF8(key, into: &hasher)
                hasher.combine(m[key]!)
            }
        }
    }

    /// The rank of the value's type in Firestore's cross-type order.
    public var typeOrder: Int {
        switch self {
        case .null: return 0
        case .boolean: return 1
        case .integer, .double: return 2
        case .timestamp: return 3
        case .string: return 5
        case .bytes: return 6
        case .reference: return 7
        case .attachment: return 8
        case .geoPoint: return 9
        case .array: return 10
        case .map: return isServerTimestamp ? 4 : 11
        }
    }

    /// Firestore's total order: -1, 0 or 1.
    public static func compare(_ a: Value, _ b: Value) -> Int {
        let ta = a.typeOrder, tb = b.typeOrder
        if ta != tb { return ta < tb ? -1 : 1 }
        switch (a, b) {
        case (.null, .null): return 0
        case let (.boolean(x), .boolean(y)): return x == y ? 0 : (!x ? -1 : 1)
        case let (.integer(x), .integer(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.double(x), .double(y)): return compareDoubles(x, y)
        case let (.integer(x), .double(y)): return compareIntegerToDouble(x, y)
        case let (.double(x), .integer(y)): return -compareIntegerToDouble(y, x)
        case let (.timestamp(x), .timestamp(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.string(x), .string(y)): return compareUTF8(x, y)
        case let (.bytes(x), .bytes(y)): return compareBytes(x, y)
        case let (.reference(x), .reference(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.attachment(x), .attachment(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.geoPoint(x), .geoPoint(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.array(x), .array(y)):
            for (l, r) in zip(x, y) {
                let c = compare(l, r)
                if c != 0 { return c }
            }
            return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
        case let (.map(x), .map(y)):
            if ta == 4 {
                // Pending server timestamps order by their local write time.
                let lx = a.serverTimestampLocalWriteTime!, ly = b.serverTimestampLocalWriteTime!
                return lx == ly ? 0 : (lx < ly ? -1 : 1)
            }
            return compareMaps(x, y)
        default:
            return 0 // unreachable: equal type orders imply matching cases
        }
    }

    static func compareDoubles(_ x: Double, _ y: Double) -> Int {
        if x.isNaN { return y.isNaN ? 0 : -1 }
        if y.isNaN { return 1 }
        return x == y ? 0 : (x < y ? -1 : 1)
    }

    /// Exact comparison of an Int64 with a Double (no rounding of large integers).
    static func compareIntegerToDouble(_ i: Int64, _ d: Double) -> Int {
        if d.isNaN { return 1 }
        if d >= 9.223372036854775807e18 { return -1 }   // 2^63 and above
        if d < -9.223372036854775807e18 { return 1 }    // below -2^63
        let t = d.rounded(.down)
        let ti = Int64(t)
        if i != ti { return i < ti ? -1 : 1 }
        return d > t ? -1 : 0
    }

    static func compareBytes(_ x: [UInt8], _ y: [UInt8]) -> Int {
        for (l, r) in zip(x, y) where l != r { return l < r ? -1 : 1 }
        return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
    }

    static func compareMaps(_ x: [String: Value], _ y: [String: Value]) -> Int {
        let kx = x.keys.sorted { compareUTF8($0, $1) < 0 }
        let ky = y.keys.sorted { compareUTF8($0, $1) < 0 }
        for (l, r) in zip(kx, ky) {
            let kc = compareUTF8(l, r)
            if kc != 0 { return kc }
            let vc = compare(x[l]!, y[r]!)
            if vc != 0 { return vc }
        }
        return kx.count == ky.count ? 0 : (kx.count < ky.count ? -1 : 1)
    }

    /// Structural identity: same type and same contents. Unlike `==`, integer `1` is not
    /// identical to double `1.0` and `0.0` is not identical to `-0.0`; NaN is identical to NaN.
    /// This is what decides whether a stored document changed, and what `arrayUnion` and
    /// `arrayRemove` use, as in Firestore.
    public func isIdentical(to other: Value) -> Bool {
        switch (self, other) {
        case (.null, .null): return true
        case let (.boolean(x), .boolean(y)): return x == y
        case let (.integer(x), .integer(y)): return x == y
        case let (.double(x), .double(y)):
            if x.isNaN || y.isNaN { return x.isNaN && y.isNaN }
            return x.bitPattern == y.bitPattern
        case let (.timestamp(x), .timestamp(y)): return x == y
        case let (.string(x), .string(y)): return equalUTF8(x, y)
        case let (.bytes(x), .bytes(y)): return x == y
        case let (.reference(x), .reference(y)): return x == y
        case let (.attachment(x), .attachment(y)): return x == y
        case let (.geoPoint(x), .geoPoint(y)): return x == y
        case let (.array(x), .array(y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.isIdentical(to: $1) }
        case let (.map(x), .map(y)):
            // Keys are compared by their UTF-8 bytes (as `hash(into:)` and `compare` do), not by
            // Swift's canonical equivalence, so "é" precomposed and decomposed stay different.
            guard x.count == y.count else { return false }
            let kx = x.keys.sorted { compareUTF8($0, $1) < 0 }
            let ky = y.keys.sorted { compareUTF8($0, $1) < 0 }
            for (a, b) in zip(kx, ky) {
                guard equalUTF8(a, b), x[a]!.isIdentical(to: y[b]!) else { return false }
            }
            return true
        default:
            return false
        }
    }
}

// MARK: - Pending server timestamps

extension Value {
    static let typeKey = "__type__"
    static let serverTimestampType = "server_timestamp"
    static let localWriteTimeKey = "__local_write_time__"
    static let previousValueKey = "__previous_value__"

    /// The local stand-in for `FieldValue.serverTimestamp()` before the server has set it.
    /// It sorts after every timestamp and before every string, by local write time, and
    /// remembers the field's previous value for "previous" estimates.
    public static func pendingServerTimestamp(localWriteTime: Timestamp, previous: Value?) -> Value {
        var m: [String: Value] = [
            typeKey: .string(serverTimestampType),
            localWriteTimeKey: .timestamp(localWriteTime),
        ]
        // Chained server timestamps keep the value from before the first one.
        let prior = previous.flatMap { $0.isServerTimestamp ? $0.serverTimestampPreviousValue : $0 }
        if let prior { m[previousValueKey] = prior }
        return .map(m)
    }

    /// Whether this is a pending server timestamp placeholder.
    public var isServerTimestamp: Bool {
        guard case .map(let m) = self, case .string(let t)? = m[Self.typeKey],
              case .timestamp? = m[Self.localWriteTimeKey] else { return false }
        return t == Self.serverTimestampType
    }

    /// The local write time of a pending server timestamp.
    public var serverTimestampLocalWriteTime: Timestamp? {
        guard isServerTimestamp, case .map(let m) = self, case .timestamp(let t)? = m[Self.localWriteTimeKey] else {
            return nil
        }
        return t
    }

    /// The value the field had before a pending server timestamp was written, if any.
    public var serverTimestampPreviousValue: Value? {
        guard isServerTimestamp, case .map(let m) = self else { return nil }
        return m[Self.previousValueKey]
    }
}

internal import DocModel

/// Reading one JSON object of a frame, strictly: every field has the expected type, required
/// fields are present, and unknown fields are errors. Every failure is a
/// `DocError(.invalidArgument, …)` whose location is the field's path in the frame, such as
/// `write.mutations[2].transforms[0].field`.
///
/// `null` counts as absent for optional fields (and as missing for required ones).
struct WireObject {
    /// The object's members.
    let fields: [String: Value]
    /// The object's path in the frame (`addTarget.target`).
    let path: String

    /// Reads `value` as an object; `path` names it in errors.
    init(_ value: Value, at path: String) throws(DocError) {
        guard case .map(let fields) = value else {
            throw Wire.error("expected an object, found \(Wire.describe(value))", at: path)
        }
        self.fields = fields
        self.path = path
    }

    /// The path of member `key`.
    func at(_ key: String) -> String { path.isEmpty ? key : path + "." + key }

    /// Rejects members not in `known` (a short list: comparing costs less than hashing).
    func allowOnly(_ known: [String]) throws(DocError) {
        try allowOnly { known.contains($0) }
    }

    /// Rejects members that are neither `extra` nor in `known`.
    func allowOnly(_ known: Set<String>, and extra: String) throws(DocError) {
        try allowOnly { $0 == extra || known.contains($0) }
    }

    /// Rejects members for which `isKnown` is false, naming the first in key order (the
    /// members' order is not kept).
    private func allowOnly(where isKnown: (String) -> Bool) throws(DocError) {
        guard !fields.keys.allSatisfy(isKnown) else { return }
        for key in fields.keys.sorted() where !isKnown(key) {
            throw Wire.error("unknown field \"\(key)\"", at: path)
        }
    }

    /// Whether member `key` is present and not `null`.
    func has(_ key: String) -> Bool {
        if let v = fields[key], !v.isNull { return true }
        return false
    }

    // MARK: Any value

    func optionalValue(_ key: String) -> Value? {
        guard let v = fields[key], !v.isNull else { return nil }
        return v
    }

    func value(_ key: String) throws(DocError) -> Value {
        guard let v = optionalValue(key) else { throw Wire.error("missing field \"\(key)\"", at: path) }
        return v
    }

    /// A required member that may be `null` (a filter's value).
    func valueAllowingNull(_ key: String) throws(DocError) -> Value {
        guard let v = fields[key] else { throw Wire.error("missing field \"\(key)\"", at: path) }
        return v
    }

    // MARK: Scalars

    func string(_ key: String) throws(DocError) -> String {
        try Wire.string(try value(key), at: at(key))
    }

    func optionalString(_ key: String) throws(DocError) -> String? {
        guard let v = optionalValue(key) else { return nil }
        return try Wire.string(v, at: at(key))
    }

    func int64(_ key: String) throws(DocError) -> Int64 {
        try Wire.int64(try value(key), at: at(key))
    }

    func optionalInt64(_ key: String) throws(DocError) -> Int64? {
        guard let v = optionalValue(key) else { return nil }
        return try Wire.int64(v, at: at(key))
    }

    /// An integer in `range`.
    func int(_ key: String, in range: ClosedRange<Int64>) throws(DocError) -> Int {
        Int(try Wire.int64(try value(key), in: range, at: at(key)))
    }

    func optionalInt(_ key: String, in range: ClosedRange<Int64>) throws(DocError) -> Int? {
        guard let v = optionalValue(key) else { return nil }
        return Int(try Wire.int64(v, in: range, at: at(key)))
    }

    func targetID(_ key: String) throws(DocError) -> Int32 {
        Int32(try Wire.int64(try value(key), in: Int64(Int32.min)...Int64(Int32.max), at: at(key)))
    }

    func version(_ key: String) throws(DocError) -> SnapshotVersion {
        SnapshotVersion(microseconds: try Wire.int64(try value(key), in: 0...Int64.max, at: at(key)))
    }

    func optionalVersion(_ key: String) throws(DocError) -> SnapshotVersion? {
        guard let v = optionalValue(key) else { return nil }
        return SnapshotVersion(microseconds: try Wire.int64(v, in: 0...Int64.max, at: at(key)))
    }

    func bool(_ key: String, default defaultValue: Bool) throws(DocError) -> Bool {
        guard let v = optionalValue(key) else { return defaultValue }
        guard case .boolean(let b) = v else {
            throw Wire.error("expected a boolean, found \(Wire.describe(v))", at: at(key))
        }
        return b
    }

    func bool(_ key: String) throws(DocError) -> Bool {
        let v = try value(key)
        guard case .boolean(let b) = v else {
            throw Wire.error("expected a boolean, found \(Wire.describe(v))", at: at(key))
        }
        return b
    }

    /// Base64 bytes of at most `maxBytes` bytes.
    func optionalBytes(_ key: String, maxBytes: Int) throws(DocError) -> [UInt8]? {
        guard let v = optionalValue(key) else { return nil }
        let text = try Wire.string(v, at: at(key))
        guard let bytes = try? Base64.decode(text).get() else {
            throw Wire.error("expected standard base64 with padding", at: at(key))
        }
        guard bytes.count <= maxBytes else {
            throw Wire.error("is \(bytes.count) bytes; the limit is \(maxBytes)", at: at(key))
        }
        return bytes
    }

    // MARK: Structures

    func array(_ key: String) throws(DocError) -> [Value] {
        try Wire.array(try value(key), at: at(key))
    }

    /// The array, or `[]` when absent.
    func optionalArray(_ key: String) throws(DocError) -> [Value] {
        guard let v = optionalValue(key) else { return [] }
        return try Wire.array(v, at: at(key))
    }

    func object(_ key: String) throws(DocError) -> WireObject {
        try WireObject(try value(key), at: at(key))
    }

    func optionalObject(_ key: String) throws(DocError) -> WireObject? {
        guard let v = optionalValue(key) else { return nil }
        return try WireObject(v, at: at(key))
    }

    /// An array of target ids.
    func targetIDs(_ key: String) throws(DocError) -> [Int32] {
        var ids: [Int32] = []
        for (i, v) in try optionalArray(key).enumerated() {
            ids.append(Int32(try Wire.int64(v, in: Int64(Int32.min)...Int64(Int32.max), at: at(key) + "[\(i)]")))
        }
        return ids
    }
}

/// Helpers shared by the frame readers and writers.
enum Wire {
    static func error(_ message: String, at path: String) -> DocError {
        DocError(.invalidArgument, message, at: path)
    }

    /// A value's type for error messages: "a string", "an integer", "null".
    static func describe(_ value: Value) -> String {
        switch value {
        case .null: return "null"
        case .integer: return "an integer"
        case .array: return "an array"
        default: return "a " + value.typeName
        }
    }

    static func string(_ value: Value, at path: @autoclosure () -> String) throws(DocError) -> String {
        guard case .string(let s) = value else {
            throw error("expected a string, found \(describe(value))", at: path())
        }
        return s
    }

    static func int64(_ value: Value, at path: @autoclosure () -> String) throws(DocError) -> Int64 {
        guard case .integer(let i) = value else {
            throw error("expected an integer, found \(describe(value))", at: path())
        }
        return i
    }

    static func int64(_ value: Value, in range: ClosedRange<Int64>, at path: @autoclosure () -> String) throws(DocError) -> Int64 {
        let i = try int64(value, at: path())
        guard range.contains(i) else {
            throw error("\(i) is out of range \(range.lowerBound)…\(range.upperBound)", at: path())
        }
        return i
    }

    static func array(_ value: Value, at path: @autoclosure () -> String) throws(DocError) -> [Value] {
        guard case .array(let a) = value else {
            throw error("expected an array, found \(describe(value))", at: path())
        }
        return a
    }

    /// A map of the object's members, leaving out `nil`s.
    static func object(_ members: [(String, Value?)]) -> Value {
        var m: [String: Value] = [:]
        for (k, v) in members { if let v { m[k] = v } }
        return .map(m)
    }

    static func bytes(_ bytes: [UInt8]?) -> Value? { bytes.map { .string(Base64.encode($0)) } }

    static func version(_ v: SnapshotVersion) -> Value { .integer(v.microseconds) }

    static func targetIDs(_ ids: [Int32]) -> Value { .array(ids.map { .integer(Int64($0)) }) }
}

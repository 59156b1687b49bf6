import DocModel

/// A spec-file JSON value with the path it was found at, for error messages.
///
/// Spec files are read with DocModel's JSON reader (``Value/init(jsonBytes:)``), which keeps
/// the integer / double distinction of the text; this wrapper adds typed, checked accessors.
struct SpecJSON {
    let value: Value
    /// Where the value is, as `steps[3].watchEntity.docs[0]`.
    let path: String

    init(_ value: Value, path: String = "") {
        self.value = value
        self.path = path
    }

    var isNull: Bool { value.isNull }

    private func child(_ value: Value, _ component: String) -> SpecJSON {
        SpecJSON(value, path: path.isEmpty ? component : path + "." + component)
    }

    func fail(_ message: String) -> SpecDecodingError {
        SpecDecodingError(message: message, path: path)
    }

    /// The members of an object.
    func object() throws(SpecDecodingError) -> [String: SpecJSON] {
        guard case .map(let fields) = value else { throw fail("expected an object, found \(value.typeName)") }
        var out: [String: SpecJSON] = [:]
        for (key, v) in fields { out[key] = child(v, key) }
        return out
    }

    /// The member `key` of an object, or `nil` when it is absent (or the value is not an object).
    subscript(key: String) -> SpecJSON? {
        guard case .map(let fields) = value, let v = fields[key] else { return nil }
        return child(v, key)
    }

    /// The member `key`, which must be present.
    func required(_ key: String) throws(SpecDecodingError) -> SpecJSON {
        guard case .map(let fields) = value else { throw fail("expected an object, found \(value.typeName)") }
        guard let v = fields[key] else { throw fail("missing \"\(key)\"") }
        return child(v, key)
    }

    /// The keys of an object, sorted.
    func keys() throws(SpecDecodingError) -> [String] {
        try object().keys.sorted()
    }

    func array() throws(SpecDecodingError) -> [SpecJSON] {
        guard case .array(let elements) = value else { throw fail("expected an array, found \(value.typeName)") }
        return elements.enumerated().map { SpecJSON($0.element, path: path + "[\($0.offset)]") }
    }

    func int() throws(SpecDecodingError) -> Int64 {
        switch value {
        case .integer(let i): return i
        case .double(let d) where d.rounded() == d && abs(d) < 9e15: return Int64(d)
        default: throw fail("expected an integer, found \(value.typeName)")
        }
    }

    func string() throws(SpecDecodingError) -> String {
        guard case .string(let s) = value else { throw fail("expected a string, found \(value.typeName)") }
        return s
    }

    func bool() throws(SpecDecodingError) -> Bool {
        guard case .boolean(let b) = value else { throw fail("expected a boolean, found \(value.typeName)") }
        return b
    }

    /// A boolean that may also be written as a number (`1` / `0`), as JavaScript-generated
    /// files sometimes do.
    func truthy() throws(SpecDecodingError) -> Bool {
        switch value {
        case .boolean(let b): return b
        case .integer(let i): return i != 0
        case .null: return false
        default: throw fail("expected a boolean, found \(value.typeName)")
        }
    }

    /// The JSON text of the value (canonical: sorted keys), for messages.
    var text: String { value.jsonString }
}

/// A spec file or step that cannot be decoded.
struct SpecDecodingError: Error, CustomStringConvertible {
    var message: String
    var path: String

    var description: String { path.isEmpty ? message : "\(path): \(message)" }
}

import DocModel

/// A small JSON writer for docctl's output lines: fields in the order given (the contract's
/// order), document data in DocModel's canonical JSON with typed escapes.
indirect enum JSONLine {
    case string(String)
    case int(Int64)
    case bool(Bool)
    case null
    case raw(String)
    case array([JSONLine])
    case object([(String, JSONLine)])

    static func value(_ value: Value) -> JSONLine { .raw(value.jsonString) }

    var text: String {
        switch self {
        case .string(let s): return Value.string(s).jsonString
        case .int(let i): return String(i)
        case .bool(let b): return b ? "true" : "false"
        case .null: return "null"
        case .raw(let r): return r
        case .array(let items): return "[" + items.map(\.text).joined(separator: ",") + "]"
        case .object(let fields):
            return "{" + fields.map { Value.string($0.0).jsonString + ":" + $0.1.text }.joined(separator: ",") + "}"
        }
    }
}

extension Output {
    static func line(_ json: JSONLine) { line(json.text) }
}

/// One field of write data given as JSON by a person (the command line): a value, a nested
/// object merged field by field, or a field transform.
///
/// The transforms are one-member objects in a field's place:
///
/// | JSON | meaning |
/// |---|---|
/// | `{"$increment": 5}` / `{"$increment": 0.5}` | add to the number (a missing field counts as 0) |
/// | `{"$serverTimestamp": true}` | the server's commit time |
/// | `{"$arrayUnion": [1, 2]}` | append each element not already present |
/// | `{"$arrayRemove": [1]}` | remove every element equal to one of these |
/// | `{"$delete": true}` | remove the field (update, or set with merge) |
///
/// Values use the typed escapes of ``Value/init(json:)`` (`$timestamp`, `$ref`, …). Unlike
/// stored data, input is read strictly: a one-member object whose key starts with `$` and is
/// neither an escape nor (in a field's place) a transform is an error that says how to write
/// such a map literally (`{"$map": {"$increment": 1}}`).
public indirect enum JSONWriteField: Sendable, Hashable {
    /// A plain value, written as it is (an empty object is an empty map).
    case value(Value)
    /// A non-empty JSON object in a field's place: its fields, each a write field again.
    case map([String: JSONWriteField])
    /// `{"$increment": n}`: add the number `n` (an integer or a double) to the field.
    case increment(Value)
    /// `{"$serverTimestamp": true}`: set the field to the server's commit time.
    case serverTimestamp
    /// `{"$arrayUnion": [...]}`: append each element the array does not already hold.
    case arrayUnion([Value])
    /// `{"$arrayRemove": [...]}`: remove every element equal to one of these.
    case arrayRemove([Value])
    /// `{"$delete": true}`: remove the field (in an update, or a set with merge).
    case delete

    /// Parses a JSON object of write data.
    ///
    /// - Throws: `invalidArgument` with the position (`line L, column C`) for text that is not
    ///   JSON or not an object, a misspelt escape or transform, a transform inside an array or
    ///   `$map`, or a transform with the wrong argument (`$increment` takes a number,
    ///   `$serverTimestamp` and `$delete` take `true`, the array transforms an array).
    public static func fields(json: String) throws(DocError) -> [String: JSONWriteField] {
        let bytes = Array(json.utf8)
        let node = try JSONReader.parse(bytes)
        guard case .object(let members) = node.kind else {
            throw DocError(.invalidArgument, "invalid JSON: write data must be a JSON object, e.g. {\"name\": \"Lobby\"}",
                           at: JSONReader.location(of: node.offset, in: bytes))
        }
        return try Reader(decoder: JSONValueDecoder(source: bytes, strict: true)).fields(members)
    }

    private struct Reader {
        let decoder: JSONValueDecoder

        func fields(_ members: [JSONMember]) throws(DocError) -> [String: JSONWriteField] {
            var out: [String: JSONWriteField] = [:]
            for member in members { out[member.key] = try field(member.value) }
            return out
        }

        func field(_ node: JSONNode) throws(DocError) -> JSONWriteField {
            guard case .object(let members) = node.kind, !members.isEmpty else {
                return .value(try decoder.value(node))
            }
            guard members.count == 1, let first = members.first, first.key.utf8.first == UInt8(ascii: "$") else {
                return .map(try fields(members))
            }
            if JSONEscape.all.contains(first.key) { return .value(try decoder.value(node)) }
            let argument = first.value
            switch first.key {
            case "$increment":
                switch argument.kind {
                case .integer(let i): return .increment(.integer(i))
                case .double(let d): return .increment(.double(d))
                default: throw decoder.error("$increment takes a number, found \(decoder.describe(argument))", at: argument.offset)
                }
            case "$serverTimestamp", "$delete":
                guard case .bool(true) = argument.kind else {
                    throw decoder.error("\(first.key) takes true, found \(decoder.describe(argument))", at: argument.offset)
                }
                return first.key == "$delete" ? .delete : .serverTimestamp
            case "$arrayUnion", "$arrayRemove":
                guard case .array = argument.kind, case .array(let elements) = try decoder.value(argument) else {
                    throw decoder.error("\(first.key) takes an array of values, found \(decoder.describe(argument))", at: argument.offset)
                }
                return first.key == "$arrayUnion" ? .arrayUnion(elements) : .arrayRemove(elements)
            default:
                throw decoder.unknownEscape(first, transformsAllowed: true)
            }
        }
    }
}

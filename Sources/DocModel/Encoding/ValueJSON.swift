// Canonical JSON for values, with typed escapes for the types JSON lacks.
//
// Mapping (reading):
//   null, true/false, strings        → .null, .boolean, .string
//   numbers without fraction/exponent that fit Int64 → .integer (so `-0` is the integer 0;
//                                       write `-0.0` for the negative zero double)
//   every other number               → .double (integers beyond Int64 too, as in JavaScript;
//                                       numbers beyond the double range are an error)
//   arrays                           → .array
//   objects                          → .map, except the typed escapes below
//
// Typed escapes are objects with exactly one member whose key is one of:
//   {"$timestamp": "2024-01-01T00:00:00.123456789Z"}  RFC 3339 (any offset; written in UTC)
//   {"$timestamp": {"seconds": S, "nanos": N}}         also accepted; written only for
//                                                      timestamps outside 0001…9999
//   {"$bytes": "AAEC/w=="}                             standard base64 with padding, strict
//   {"$ref": "collection/doc"}                         a document key
//   {"$attachment": "<64 hex characters>"}             an attachment reference
//   {"$geo": [latitude, longitude]}                    a geo point
//   {"$double": "NaN" | "Infinity" | "-Infinity"}      the non-finite doubles; a number is
//                                                      also accepted: {"$double": 1} is 1.0
//   {"$map": {...}}                                    a map taken literally: its own keys
//                                                      are never escapes (values still are)
// An object with one member whose key starts with `$` but is not one of these is a plain map.
// The writer wraps every single-member map whose key starts with `$` in `$map`, known escape
// name or not, so data written today keeps its meaning if escapes are added later.

/// The escape keys.
enum JSONEscape {
    static let timestamp = "$timestamp"
    static let bytes = "$bytes"
    static let reference = "$ref"
    static let attachment = "$attachment"
    static let geoPoint = "$geo"
    static let double = "$double"
    static let map = "$map"
    static let all: Set<String> = [timestamp, bytes, reference, attachment, geoPoint, double, map]
    /// The field transforms of write input (``JSONWriteField``): no escapes, named here so that
    /// a misplaced one is reported as such.
    static let transforms: Set<String> = ["$increment", "$serverTimestamp", "$arrayUnion", "$arrayRemove", "$delete"]
}

extension Value {
    /// Parses JSON text into a value, decoding the typed escapes (`{"$timestamp": …}`,
    /// `{"$bytes": …}`, `{"$ref": …}`, `{"$attachment": …}`, `{"$geo": […]}`, `{"$double": …}`, `{"$map": {…}}`).
    ///
    /// Numbers without a fraction or exponent that fit `Int64` become `.integer`; all other
    /// numbers (including integers outside `Int64`) become `.double`. An object with a single
    /// `$`-prefixed key that is not a known escape is a plain map.
    ///
    /// - Throws: `invalidArgument` naming what was expected, with the position
    ///   (`line L, column C (byte offset O)`) in ``DocError/location``. Trailing data,
    ///   duplicate keys, lone surrogates, invalid UTF-8 and nesting deeper than 64 are errors.
    public init(json: String) throws(DocError) {
        try self.init(jsonBytes: Array(json.utf8))
    }

    /// Parses UTF-8 JSON bytes; see ``init(json:)``.
    public init(jsonBytes: [UInt8]) throws(DocError) {
        self = try JSONReader.parseValue(jsonBytes)
    }

    /// The canonical JSON form: no whitespace, map keys sorted by UTF-8 bytes, doubles in
    /// shortest round-trip form and always with a `.` or exponent (`1.0`, `-0.0`, `1e+16`),
    /// non-JSON types as typed escapes. ``init(json:)`` reads it back identically
    /// (``isIdentical(to:)``), and identical values have the same canonical JSON.
    public var jsonString: String { jsonString(pretty: false) }

    /// The canonical JSON form, optionally pretty-printed (two-space indentation, one member
    /// or element per line). Both forms parse back to the identical value.
    public func jsonString(pretty: Bool) -> String {
        var writer = JSONWriter(pretty: pretty)
        writeJSON(to: &writer)
        return writer.string
    }

    /// The canonical JSON form as UTF-8 bytes.
    public var jsonBytes: [UInt8] {
        var writer = JSONWriter()
        writeJSON(to: &writer)
        return writer.bytes
    }

    func writeJSON(to w: inout JSONWriter) {
        switch self {
        case .null: w.writeNull()
        case .boolean(let b): w.writeBool(b)
        case .integer(let i): w.writeInteger(i)
        case .double(let d):
            if d.isFinite {
                w.writeDouble(d)
            } else {
                Self.writeEscape(JSONEscape.double, to: &w) { w in
                    w.writeString(d.isNaN ? "NaN" : (d < 0 ? "-Infinity" : "Infinity"))
                }
            }
        case .timestamp(let t):
            Self.writeEscape(JSONEscape.timestamp, to: &w) { w in
                if t.seconds >= Timestamp.minSeconds, t.seconds <= Timestamp.maxSeconds {
                    w.writeString(t.rfc3339)
                } else {
                    w.open(UInt8(ascii: "{"))
                    w.item(first: true)
                    w.key("nanos")
                    w.writeInteger(Int64(t.nanos))
                    w.item(first: false)
                    w.key("seconds")
                    w.writeInteger(t.seconds)
                    w.close(UInt8(ascii: "}"), empty: false)
                }
            }
        case .string(let s): w.writeString(s)
        case .bytes(let b):
            Self.writeEscape(JSONEscape.bytes, to: &w) { w in w.writeString(Base64.encode(b)) }
        case .reference(let k):
            Self.writeEscape(JSONEscape.reference, to: &w) { w in w.writeString(k.path.canonicalString) }
        case .attachment(let id):
            Self.writeEscape(JSONEscape.attachment, to: &w) { w in w.writeString(id.hex) }
        case .geoPoint(let g):
            Self.writeEscape(JSONEscape.geoPoint, to: &w) { w in
                w.open(UInt8(ascii: "["))
                w.item(first: true)
                w.writeDouble(g.latitude)
                w.item(first: false)
                w.writeDouble(g.longitude)
                w.close(UInt8(ascii: "]"), empty: false)
            }
        case .array(let a):
            w.open(UInt8(ascii: "["))
            for (i, v) in a.enumerated() {
                w.item(first: i == 0)
                v.writeJSON(to: &w)
            }
            w.close(UInt8(ascii: "]"), empty: a.isEmpty)
        case .map(let m):
            if m.count == 1, let key = m.keys.first, key.utf8.first == UInt8(ascii: "$") {
                Self.writeEscape(JSONEscape.map, to: &w) { w in Self.writeFields(m, to: &w) }
            } else {
                Self.writeFields(m, to: &w)
            }
        }
    }

    /// Writes `{"<key>": <payload>}`.
    private static func writeEscape(_ key: String, to w: inout JSONWriter, payload: (inout JSONWriter) -> Void) {
        w.open(UInt8(ascii: "{"))
        w.item(first: true)
        w.key(key)
        payload(&w)
        w.close(UInt8(ascii: "}"), empty: false)
    }

    /// Writes a map as a plain JSON object, keys sorted by UTF-8 bytes.
    static func writeFields(_ m: [String: Value], to w: inout JSONWriter) {
        w.open(UInt8(ascii: "{"))
        // Members sorted with their values (no lookup of each key again).
        for (i, member) in m.sorted(by: { compareUTF8($0.key, $1.key) < 0 }).enumerated() {
            w.item(first: i == 0)
            w.key(member.key)
            member.value.writeJSON(to: &w)
        }
        w.close(UInt8(ascii: "}"), empty: m.isEmpty)
    }
}

extension ObjectValue {
    /// Parses a JSON object into document fields. The top-level object is always the field
    /// map itself, read literally: a document whose only field is named `$ref` is written and
    /// read as `{"$ref": …}` without a `$map` wrapper. Nested values follow
    /// ``Value/init(json:)``.
    ///
    /// - Throws: `invalidArgument` if the text is not valid JSON or not an object.
    public init(json: String) throws(DocError) {
        try self.init(jsonBytes: Array(json.utf8))
    }

    /// Parses UTF-8 JSON bytes; see ``init(json:)``.
    public init(jsonBytes: [UInt8]) throws(DocError) {
        let node = try JSONReader.parse(jsonBytes)
        guard case .object(let members) = node.kind else {
            throw DocError(.invalidArgument, "invalid JSON: a document must be a JSON object",
                           at: JSONReader.location(of: node.offset, in: jsonBytes))
        }
        self.init(try JSONValueDecoder(source: jsonBytes).fields(members))
    }

    /// The canonical JSON form of the fields (see ``Value/jsonString``); the top-level object
    /// is never wrapped in `$map`.
    public var jsonString: String { jsonString(pretty: false) }

    /// The canonical JSON form, optionally pretty-printed.
    public func jsonString(pretty: Bool) -> String {
        var writer = JSONWriter(pretty: pretty)
        Value.writeFields(fields, to: &writer)
        return writer.string
    }
}

/// Maps a ``JSONNode`` tree onto ``Value``, interpreting the typed escapes.
struct JSONValueDecoder {
    /// The parsed text, for error positions.
    let source: [UInt8]
    /// Whether a one-member object whose key starts with `$` but is no escape is an error
    /// (input a person typed, where it is most likely a misspelt escape or a transform in the
    /// wrong place) instead of a plain map (stored data, which must keep reading).
    var strict = false

    init(source: [UInt8], strict: Bool = false) {
        self.source = source
        self.strict = strict
    }

    func error(_ message: String, at offset: Int) -> DocError {
        DocError(.invalidArgument, "invalid JSON: " + message, at: JSONReader.location(of: offset, in: source))
    }

    func value(_ node: JSONNode) throws(DocError) -> Value {
        switch node.kind {
        case .null: return .null
        case .bool(let b): return .boolean(b)
        case .integer(let i): return .integer(i)
        case .double(let d): return .double(d)
        case .string(let s): return .string(s)
        case .array(let elements):
            var out: [Value] = []
            out.reserveCapacity(elements.count)
            for e in elements { out.append(try value(e)) }
            return .array(out)
        case .object(let members):
            if members.count == 1, JSONEscape.all.contains(members[0].key) {
                return try escape(members[0])
            }
            if strict, members.count == 1, members[0].key.utf8.first == UInt8(ascii: "$") {
                throw unknownEscape(members[0])
            }
            return .map(try fields(members))
        }
    }

    /// The error for `{"$name": …}` where `$name` is no escape: what the escapes are, and how
    /// to write such a map literally.
    func unknownEscape(_ member: JSONMember, transformsAllowed: Bool = false) -> DocError {
        let transforms = transformsAllowed ? "; the field transforms are " + JSONEscape.transforms.sorted().joined(separator: ", ") : ""
        let misplaced = !transformsAllowed && JSONEscape.transforms.contains(member.key)
            ? "\(member.key) is a field transform, which may stand only as a field's value (not inside an array or $map); "
            : "unknown escape \"\(member.key)\"; "
        return error(misplaced + "the escapes are " + JSONEscape.all.sorted().joined(separator: ", ") + transforms
                         + ". To store a map with the key \"\(member.key)\" literally, write {\"$map\": {\"\(member.key)\": …}}",
                     at: member.keyOffset)
    }

    /// The members of an object as a map, literally (keys are never escapes here).
    func fields(_ members: [JSONMember]) throws(DocError) -> [String: Value] {
        var out: [String: Value] = [:]
        out.reserveCapacity(members.count)
        for m in members { out[m.key] = try value(m.value) }
        return out
    }

    func escape(_ member: JSONMember) throws(DocError) -> Value {
        let payload = member.value
        let name = member.key
        switch name {
        case JSONEscape.timestamp:
            switch payload.kind {
            case .string(let text):
                do {
                    return .timestamp(try Timestamp(rfc3339: text))
                } catch {
                    throw self.error("\(name): \(error.message)", at: payload.offset)
                }
            case .object(let members):
                return .timestamp(try explicitTimestamp(members, at: payload.offset))
            default:
                throw error("\(name) expects an RFC 3339 string such as \"2024-01-01T00:00:00Z\", found \(describe(payload))",
                            at: payload.offset)
            }
        case JSONEscape.bytes:
            guard case .string(let text) = payload.kind else {
                throw error("\(name) expects a base64 string, found \(describe(payload))", at: payload.offset)
            }
            switch Base64.decode(text) {
            case .success(let bytes): return .bytes(bytes)
            case .failure(let e): throw error("\(name): \(e.message)", at: payload.offset)
            }
        case JSONEscape.reference:
            guard case .string(let text) = payload.kind else {
                throw error("\(name) expects a document path string such as \"users/alice\", found \(describe(payload))",
                            at: payload.offset)
            }
            do {
                return .reference(try DocumentKey(text))
            } catch {
                throw self.error("\(name): \(error.message)", at: payload.offset)
            }
        case JSONEscape.attachment:
            guard case .string(let text) = payload.kind else {
                throw error("\(name) expects an attachment id (64 lowercase hex characters), found \(describe(payload))",
                            at: payload.offset)
            }
            do {
                return .attachment(try AttachmentID(text))
            } catch {
                throw self.error("\(name): \(error.message)", at: payload.offset)
            }
        case JSONEscape.geoPoint:
            guard case .array(let e) = payload.kind, e.count == 2,
                  let lat = number(e[0]), let lng = number(e[1])
            else {
                throw error("\(name) expects [latitude, longitude], found \(describe(payload))", at: payload.offset)
            }
            do {
                return .geoPoint(try GeoPoint(latitude: lat, longitude: lng))
            } catch {
                throw self.error("\(name): \(error.message)", at: payload.offset)
            }
        case JSONEscape.double:
            switch payload.kind {
            case .string("NaN"): return .double(.nan)
            case .string("Infinity"): return .double(.infinity)
            case .string("-Infinity"): return .double(-.infinity)
            case .integer(let i): return .double(Double(i))   // correctly rounded, like parsing the literal
            case .double(let d): return .double(d)
            default:
                throw error("\(name) expects \"NaN\", \"Infinity\", \"-Infinity\" or a number, found \(describe(payload))",
                            at: payload.offset)
            }
        case JSONEscape.map:
            guard case .object(let members) = payload.kind else {
                throw error("\(name) expects an object, found \(describe(payload))", at: payload.offset)
            }
            return .map(try fields(members))
        default:
            preconditionFailure("unhandled escape \(name)")
        }
    }

    private func number(_ node: JSONNode) -> Double? {
        switch node.kind {
        case .integer(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    /// `{"seconds": S, "nanos": N}`: both integers, nanos in 0..<1e9, seconds any Int64.
    private func explicitTimestamp(_ members: [JSONMember], at offset: Int) throws(DocError) -> Timestamp {
        var seconds: Int64?
        var nanos: Int64?
        for m in members {
            guard case .integer(let v) = m.value.kind else {
                throw error("$timestamp: \"\(m.key)\" must be an integer", at: m.value.offset)
            }
            switch m.key {
            case "seconds": seconds = v
            case "nanos": nanos = v
            default: throw error("$timestamp: unexpected key \"\(m.key)\" (expected \"seconds\" and \"nanos\")", at: m.keyOffset)
            }
        }
        guard let seconds, let nanos else {
            throw error("$timestamp expects {\"seconds\": …, \"nanos\": …} with both keys", at: offset)
        }
        guard nanos >= 0, nanos < 1_000_000_000 else {
            throw error("$timestamp: nanos must be in 0..<1000000000, got \(nanos)", at: offset)
        }
        return Timestamp(uncheckedSeconds: seconds, nanos: Int32(nanos))
    }

    func describe(_ node: JSONNode) -> String {
        switch node.kind {
        case .null: return "null"
        case .bool: return "a boolean"
        case .integer, .double: return "a number"
        case .string(let s): return "the string \"\(s.count > 40 ? s.prefix(40) + "…" : s)\""
        case .array(let a): return "an array of \(a.count) element\(a.count == 1 ? "" : "s")"
        case .object: return "an object"
        }
    }
}

/// Reading JSON straight into a ``Value``, without the ``JSONNode`` tree.
///
/// The grammar, its checks and its error messages are ``JSONReader``'s; the typed escapes are
/// ``JSONValueDecoder``'s. Objects become maps as they end, from members collected on one list
/// that all objects of the text share, so no node or member list is made per object and
/// nothing is walked a second time (frames are read this way). The one exception is
/// an object whose first key is a typed escape: its payload is read as a node, and the object
/// becomes that escape when it has no other member (``JSONValueDecoder/escape(_:)``), or a
/// plain map when it has.
///
/// Of a text with two errors, this reader may report the other one than the tree reader: a
/// typed escape's payload is checked when its object ends, not after the whole text is read.
extension JSONReader {
    /// Parses one complete JSON text into a value, decoding the typed escapes (the
    /// non-strict reading of ``JSONValueDecoder``: a one-member object with an unknown `$` key
    /// is a plain map).
    static func parseValue(_ bytes: [UInt8]) throws(DocError) -> Value {
        var reader = JSONReader(bytes, depthLimit: maxDepth)
        let decoder = JSONValueDecoder(source: bytes)
        reader.skipWhitespace()
        let value = try reader.readValue(depth: 0, decoder)
        reader.skipWhitespace()
        guard reader.pos == bytes.count else {
            throw reader.error("unexpected \(reader.found()) after the JSON value", at: reader.pos)
        }
        return value
    }

    private mutating func readValue(depth: Int, _ decoder: JSONValueDecoder) throws(DocError) -> Value {
        guard pos < bytes.count else { throw error("expected a value, found end of input", at: pos) }
        switch bytes[pos] {
        case UInt8(ascii: "{"): return try readObject(depth: depth + 1, decoder)
        case UInt8(ascii: "["): return try readArray(depth: depth + 1, decoder)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try literal("true"); return .boolean(true)
        case UInt8(ascii: "f"): try literal("false"); return .boolean(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            switch try parseNumber().kind {
            case .integer(let i): return .integer(i)
            case .double(let d): return .double(d)
            default: preconditionFailure("a number parsed as something else")
            }
        default:
            throw error("expected a value, found \(found())", at: pos)
        }
    }

    private mutating func readArray(depth: Int, _ decoder: JSONValueDecoder) throws(DocError) -> Value {
        var elements: [Value] = []
        if try open(depth: depth, close: UInt8(ascii: "]")) { return .array(elements) }
        repeat {
            skipWhitespace()
            elements.append(try readValue(depth: depth, decoder))
        } while try !next(close: UInt8(ascii: "]"), after: "an array element")
        return .array(elements)
    }

    private mutating func readObject(depth: Int, _ decoder: JSONValueDecoder) throws(DocError) -> Value {
        if try open(depth: depth, close: UInt8(ascii: "}")) { return .map([:]) }
        // The members are collected on `openMembers` (shared by the objects being read, so no
        // list per object) and become a map of the right capacity at the end of the object.
        let first = openMembers.count
        defer { openMembers.removeSubrange(first...) }
        // A first member whose key is a typed escape, until the object turns out to have more.
        var escape: JSONMember?
        // The keys seen so far, for a large object (``keyIndex(_:adding:)``).
        var seen: [String: String]?
        repeat {
            let (key, keyOffset) = try memberKey()
            if let pending = escape {
                openMembers.append((pending.key, try decoder.value(pending.value)))
                escape = nil
            }
            let members = openMembers.count - first
            if let earlier = seen.map({ $0[key] }) ?? openMembers[first...].first(where: { $0.key == key })?.key {
                throw duplicateKey(key, earlier: earlier, at: keyOffset)
            }
            if seen != nil {
                seen![key] = key
            } else if members >= Self.smallObjectMembers {
                seen = Self.keyIndex(openMembers[first...].lazy.map(\.key), adding: key)
            }
            if members == 0, key.utf8.first == UInt8(ascii: "$"), JSONEscape.all.contains(key) {
                escape = JSONMember(key: key, keyOffset: keyOffset, value: try parseValue(depth: depth))
            } else {
                let value = try readValue(depth: depth, decoder)
                openMembers.append((key, value))
            }
        } while try !next(close: UInt8(ascii: "}"), after: "an object member")
        if let escape { return try decoder.escape(escape) }
        var fields = [String: Value](minimumCapacity: openMembers.count - first)
        for member in openMembers[first...] { fields[member.key] = member.value }
        return .map(fields)
    }
}

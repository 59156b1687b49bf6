/// A parsed JSON value and the byte offset where it starts in the input.
///
/// The tree keeps the integer / double distinction of the source text and the member order of
/// objects, for readers that need them (bundles, write input with its field transforms, which
/// ``JSONValueDecoder`` maps onto ``Value``). A ``Value`` is read without the tree
/// (``JSONReader/parseValue(_:)``).
struct JSONNode: Sendable {
    enum Kind: Sendable {
        case null
        case bool(Bool)
        /// A number written without fraction or exponent that fits `Int64`.
        case integer(Int64)
        /// Any other number (fraction, exponent, or an integer outside `Int64`).
        case double(Double)
        case string(String)
        case array([JSONNode])
        case object([JSONMember])
    }

    var kind: Kind
    var offset: Int
}

/// One `"key": value` member of a JSON object.
struct JSONMember: Sendable {
    var key: String
    var keyOffset: Int
    var value: JSONNode
}

/// A strict RFC 8259 JSON parser over UTF-8 bytes.
///
/// Rejects: trailing data, duplicate object keys, lone surrogates in `\u` escapes, invalid
/// UTF-8, unescaped control characters, leading zeros, numbers too large for a `Double`, and
/// nesting deeper than ``maxDepth``. Errors are `invalidArgument` with the position in
/// ``DocError/location`` (`line L, column C (byte offset O)`, columns counted in Unicode
/// scalars from 1, the offset in bytes from 0).
struct JSONReader {
    /// The deepest nesting of arrays and objects the parser accepts.
    static let maxDepth = 64

    let bytes: [UInt8]
    var pos = 0
    /// The deepest nesting this parse accepts (``maxDepth`` unless the caller says otherwise).
    let depthLimit: Int
    /// The members of the objects being read by ``parseValue(_:)``, innermost last.
    var openMembers: [(key: String, value: Value)] = []

    init(_ bytes: [UInt8], depthLimit: Int) {
        self.bytes = bytes
        self.depthLimit = depthLimit
    }

    /// Parses one complete JSON text (a single value, optionally surrounded by whitespace).
    /// `maxDepth` bounds the nesting (formats that wrap every value in objects, such as
    /// Firestore's typed JSON in bundles, need more than the default).
    static func parse(_ bytes: [UInt8], maxDepth: Int = JSONReader.maxDepth) throws(DocError) -> JSONNode {
        var reader = JSONReader(bytes, depthLimit: maxDepth)
        reader.skipWhitespace()
        let node = try reader.parseValue(depth: 0)
        reader.skipWhitespace()
        guard reader.pos == bytes.count else {
            throw reader.error("unexpected \(reader.found()) after the JSON value", at: reader.pos)
        }
        return node
    }

    // MARK: Errors

    /// Describes the byte at `pos` (or the end of input) for an error message.
    func found(at offset: Int? = nil) -> String {
        let i = offset ?? pos
        guard i < bytes.count else { return "end of input" }
        return Self.describe(byte: bytes[i])
    }

    static func describe(byte b: UInt8) -> String {
        if b >= 0x21, b < 0x7F { return "'\(Character(Unicode.Scalar(b)))'" }
        return "byte 0x" + hex2(b)
    }

    func error(_ message: String, at offset: Int) -> DocError {
        DocError(.invalidArgument, "invalid JSON: " + message, at: Self.location(of: offset, in: bytes))
    }

    /// `line L, column C (byte offset O)` for a byte offset into `bytes`.
    static func location(of offset: Int, in bytes: [UInt8]) -> String {
        var line = 1, column = 1
        for b in bytes[..<min(offset, bytes.count)] {
            if b == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if b & 0xC0 != 0x80 {
                column += 1
            }
        }
        return "line \(line), column \(column) (byte offset \(offset))"
    }

    // MARK: Grammar

    mutating func skipWhitespace() {
        while pos < bytes.count {
            switch bytes[pos] {
            case 0x20, 0x09, 0x0A, 0x0D: pos += 1
            default: return
            }
        }
    }

    mutating func parseValue(depth: Int) throws(DocError) -> JSONNode {
        guard pos < bytes.count else { throw error("expected a value, found end of input", at: pos) }
        let start = pos
        switch bytes[pos] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return JSONNode(kind: .string(try parseString()), offset: start)
        case UInt8(ascii: "t"): try literal("true"); return JSONNode(kind: .bool(true), offset: start)
        case UInt8(ascii: "f"): try literal("false"); return JSONNode(kind: .bool(false), offset: start)
        case UInt8(ascii: "n"): try literal("null"); return JSONNode(kind: .null, offset: start)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default:
            throw error("expected a value, found \(found())", at: pos)
        }
    }

    mutating func literal(_ word: StaticString) throws(DocError) {
        let start = pos
        let count = word.utf8CodeUnitCount
        let matches = word.withUTF8Buffer { w in
            pos + count <= bytes.count && (0..<count).allSatisfy { bytes[pos + $0] == w[$0] }
        }
        guard matches else { throw error("expected '\(word)'", at: start) }
        pos += count
    }

    mutating func checkDepth(_ depth: Int) throws(DocError) {
        guard depth <= depthLimit else {
            throw error("arrays and objects are nested deeper than \(depthLimit) levels", at: pos)
        }
    }

    /// Enters an array or object at the opening byte: checks the depth, moves past the byte
    /// and any whitespace, and consumes `close` when the container is empty (returning true).
    @inline(__always)
    mutating func open(depth: Int, close: UInt8) throws(DocError) -> Bool {
        try checkDepth(depth)
        pos += 1
        skipWhitespace()
        guard pos < bytes.count, bytes[pos] == close else { return false }
        pos += 1
        return true
    }

    /// After an array element or object member (`what`): consumes `,` (false) or the
    /// container's `close` (true).
    @inline(__always)
    mutating func next(close: UInt8, after what: String) throws(DocError) -> Bool {
        skipWhitespace()
        var expected: String { "expected ',' or '\(Character(Unicode.Scalar(close)))' after \(what)" }
        guard pos < bytes.count else { throw error(expected + ", found end of input", at: pos) }
        switch bytes[pos] {
        case UInt8(ascii: ","):
            pos += 1
            return false
        case close:
            pos += 1
            return true
        default:
            throw error(expected + ", found \(found())", at: pos)
        }
    }

    /// An object member's key and its offset; moves past the `:` after it.
    @inline(__always)
    mutating func memberKey() throws(DocError) -> (key: String, offset: Int) {
        skipWhitespace()
        guard pos < bytes.count, bytes[pos] == UInt8(ascii: "\"") else {
            throw error("expected a string key, found \(found())", at: pos)
        }
        let offset = pos
        let key = try parseString()
        skipWhitespace()
        guard pos < bytes.count, bytes[pos] == UInt8(ascii: ":") else {
            throw error("expected ':' after the object key \"\(key)\", found \(found())", at: pos)
        }
        pos += 1
        skipWhitespace()
        return (key, offset)
    }

    private mutating func parseArray(depth: Int) throws(DocError) -> JSONNode {
        let start = pos
        var elements: [JSONNode] = []
        if try open(depth: depth, close: UInt8(ascii: "]")) { return JSONNode(kind: .array(elements), offset: start) }
        repeat {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
        } while try !next(close: UInt8(ascii: "]"), after: "an array element")
        return JSONNode(kind: .array(elements), offset: start)
    }

    private mutating func parseObject(depth: Int) throws(DocError) -> JSONNode {
        let start = pos
        var members: [JSONMember] = []
        if try open(depth: depth, close: UInt8(ascii: "}")) { return JSONNode(kind: .object(members), offset: start) }
        // The keys seen so far, for a large object (``keyIndex(_:adding:)``).
        var seen: [String: String]?
        repeat {
            let (key, keyOffset) = try memberKey()
            if let earlier = seen.map({ $0[key] }) ?? members.first(where: { $0.key == key })?.key {
                throw duplicateKey(key, earlier: earlier, at: keyOffset)
            }
            if seen != nil {
                seen![key] = key
            } else if members.count >= Self.smallObjectMembers {
                seen = Self.keyIndex(members.lazy.map(\.key), adding: key)
            }
            members.append(JSONMember(key: key, keyOffset: keyOffset, value: try parseValue(depth: depth)))
        } while try !next(close: UInt8(ascii: "}"), after: "an object member")
        return JSONNode(kind: .object(members), offset: start)
    }

    /// Up to this many members, an object's duplicate keys are found by comparing keys.
    static let smallObjectMembers = 8

    /// The error for `key` repeating the object's `earlier` key (Swift compares `String` keys
    /// by Unicode canonical equivalence, which is also how `[String: Value]` treats them).
    func duplicateKey(_ key: String, earlier: String, at keyOffset: Int) -> DocError {
        if equalUTF8(earlier, key) {
            return error("duplicate key \"\(key)\"", at: keyOffset)
        }
        return error("duplicate key \"\(key)\" (canonically equivalent to the earlier key \"\(earlier)\")", at: keyOffset)
    }

    /// An object's keys so far mapped to their first spelling, with `key`: duplicates are found
    /// by hashing once an object has more than ``smallObjectMembers`` members. A small one
    /// (most are, e.g. a typed value's one key) compares with its earlier keys, which costs
    /// less than hashing each key.
    static func keyIndex(_ keys: some Collection<String>, adding key: String) -> [String: String] {
        var all = [String: String](minimumCapacity: keys.count * 2)
        for earlier in keys { all[earlier] = earlier }
        all[key] = key
        return all
    }

    private static func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }

    mutating func parseNumber() throws(DocError) -> JSONNode {
        let start = pos
        let negative = bytes[pos] == UInt8(ascii: "-")
        if negative { pos += 1 }
        guard pos < bytes.count, Self.isDigit(bytes[pos]) else {
            throw error("expected a digit after '-', found \(found())", at: pos)
        }
        if bytes[pos] == UInt8(ascii: "0") {
            pos += 1
            if pos < bytes.count, Self.isDigit(bytes[pos]) {
                throw error("leading zeros are not allowed in numbers", at: start)
            }
        } else {
            while pos < bytes.count, Self.isDigit(bytes[pos]) { pos += 1 }
        }
        var isInteger = true
        if pos < bytes.count, bytes[pos] == UInt8(ascii: ".") {
            isInteger = false
            pos += 1
            guard pos < bytes.count, Self.isDigit(bytes[pos]) else {
                throw error("expected a digit after '.', found \(found())", at: pos)
            }
            while pos < bytes.count, Self.isDigit(bytes[pos]) { pos += 1 }
        }
        if pos < bytes.count, bytes[pos] == UInt8(ascii: "e") || bytes[pos] == UInt8(ascii: "E") {
            isInteger = false
            pos += 1
            if pos < bytes.count, bytes[pos] == UInt8(ascii: "+") || bytes[pos] == UInt8(ascii: "-") { pos += 1 }
            guard pos < bytes.count, Self.isDigit(bytes[pos]) else {
                throw error("expected a digit in the exponent, found \(found())", at: pos)
            }
            while pos < bytes.count, Self.isDigit(bytes[pos]) { pos += 1 }
        }
        if isInteger {
            // Accumulate negatively so that Int64.min fits.
            var value: Int64 = 0
            var overflow = false
            for b in bytes[(negative ? start + 1 : start)..<pos] {
                let (m, o1) = value.multipliedReportingOverflow(by: 10)
                let (s, o2) = m.subtractingReportingOverflow(Int64(b - UInt8(ascii: "0")))
                if o1 || o2 { overflow = true; break }
                value = s
            }
            if !overflow {
                if negative { return JSONNode(kind: .integer(value), offset: start) }
                if value != .min { return JSONNode(kind: .integer(-value), offset: start) }
            }
            // Integers outside Int64 become doubles, as in JavaScript.
        }
        let text = String(decoding: bytes[start..<pos], as: UTF8.self)
        guard let d = Double(text), d.isFinite else {
            throw error("the number \(text) is too large for a double", at: start)
        }
        return JSONNode(kind: .double(d), offset: start)
    }

    mutating func parseString() throws(DocError) -> String {
        let open = pos
        pos += 1
        // Fast path: printable ASCII without escapes.
        var i = pos
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                let s = String(decoding: bytes[pos..<i], as: UTF8.self)
                pos = i + 1
                return s
            }
            if b < 0x20 || b >= 0x80 || b == UInt8(ascii: "\\") { break }
            i += 1
        }
        var out = Array(bytes[pos..<i])
        pos = i
        while true {
            guard pos < bytes.count else {
                throw error("unterminated string (it starts at byte offset \(open))", at: pos)
            }
            let b = bytes[pos]
            switch b {
            case UInt8(ascii: "\""):
                pos += 1
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try parseEscape(into: &out)
            case 0..<0x20:
                throw error("control character U+00\(hex2(b).uppercased()) must be escaped in a string", at: pos)
            case 0x20..<0x80:
                out.append(b)
                pos += 1
            default:
                guard let n = UTF8Check.sequenceLength(bytes, at: pos) else {
                    throw error("invalid UTF-8 (\(found()))", at: pos)
                }
                out.append(contentsOf: bytes[pos..<(pos + n)])
                pos += n
            }
        }
    }

    private mutating func parseEscape(into out: inout [UInt8]) throws(DocError) {
        let start = pos
        pos += 1
        guard pos < bytes.count else { throw error("unterminated escape sequence", at: start) }
        let c = bytes[pos]
        pos += 1
        switch c {
        case UInt8(ascii: "\""): out.append(0x22)
        case UInt8(ascii: "\\"): out.append(0x5C)
        case UInt8(ascii: "/"): out.append(0x2F)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            let unit = try hex4()
            var scalar: UInt32
            switch unit {
            case 0xD800...0xDBFF:
                guard pos + 1 < bytes.count, bytes[pos] == UInt8(ascii: "\\"), bytes[pos + 1] == UInt8(ascii: "u") else {
                    throw error("lone high surrogate \\u\(hex4String(unit)): expected a \\uDC00-\\uDFFF low surrogate to follow", at: start)
                }
                pos += 2
                let low = try hex4()
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw error("lone high surrogate \\u\(hex4String(unit)): it is followed by \\u\(hex4String(low)), not a low surrogate", at: start)
                }
                scalar = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
            case 0xDC00...0xDFFF:
                throw error("lone low surrogate \\u\(hex4String(unit))", at: start)
            default:
                scalar = UInt32(unit)
            }
            out.append(contentsOf: Unicode.Scalar(scalar)!.utf8)
        default:
            let what = c >= 0x21 && c < 0x7F ? "'\\\(Character(Unicode.Scalar(c)))'" : "'\\' followed by \(Self.describe(byte: c))"
            throw error("invalid escape \(what); expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX", at: start)
        }
    }

    private mutating func hex4() throws(DocError) -> UInt16 {
        var v: UInt16 = 0
        for _ in 0..<4 {
            guard pos < bytes.count, let d = hexValue(bytes[pos]) else {
                throw error("expected 4 hex digits after \\u, found \(found())", at: pos)
            }
            v = v << 4 | UInt16(d)
            pos += 1
        }
        return v
    }
}

private func hexValue(_ b: UInt8) -> UInt8? {
    switch b {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return b - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return b - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return b - UInt8(ascii: "A") + 10
    default: return nil
    }
}

private func hex4String(_ v: UInt16) -> String {
    hex2(UInt8(v >> 8)).uppercased() + hex2(UInt8(v & 0xFF)).uppercased()
}

/// Two lowercase hex digits.
func hex2(_ b: UInt8) -> String {
    let digits = Array("0123456789abcdef".utf8)
    return String(decoding: [digits[Int(b >> 4)], digits[Int(b & 0xF)]], as: UTF8.self)
}

/// Strict UTF-8 validation (Unicode Table 3-7: no overlong forms, no surrogates, at most U+10FFFF).
package enum UTF8Check {
    /// The length of the well-formed UTF-8 sequence starting at `i`, or `nil` if it is
    /// ill-formed or truncated.
    static func sequenceLength(_ bytes: [UInt8], at i: Int) -> Int? {
        let b0 = bytes[i]
        func cont(_ k: Int, _ range: ClosedRange<UInt8> = 0x80...0xBF) -> Bool {
            i + k < bytes.count && range.contains(bytes[i + k])
        }
        switch b0 {
        case 0x00...0x7F: return 1
        case 0xC2...0xDF: return cont(1) ? 2 : nil
        case 0xE0: return cont(1, 0xA0...0xBF) && cont(2) ? 3 : nil
        case 0xE1...0xEC, 0xEE...0xEF: return cont(1) && cont(2) ? 3 : nil
        case 0xED: return cont(1, 0x80...0x9F) && cont(2) ? 3 : nil
        case 0xF0: return cont(1, 0x90...0xBF) && cont(2) && cont(3) ? 4 : nil
        case 0xF1...0xF3: return cont(1) && cont(2) && cont(3) ? 4 : nil
        case 0xF4: return cont(1, 0x80...0x8F) && cont(2) && cont(3) ? 4 : nil
        default: return nil
        }
    }

    /// Decodes `bytes` as strict UTF-8; `nil` if ill-formed.
    ///
    /// Stored strings are mostly ASCII (field names, ids), which cannot be ill-formed: those
    /// take `String(decoding:)` on the contiguous bytes, about four times faster than the
    /// generic `String(validating:)` on a slice. Anything else is validated strictly.
    package static func string(_ bytes: some Collection<UInt8>) -> String? {
        let decoded = bytes.withContiguousStorageIfAvailable { buffer -> String? in
            var high: UInt8 = 0
            for byte in buffer { high |= byte }
            return high < 0x80 ? String(decoding: buffer, as: UTF8.self) : String(validating: buffer, as: UTF8.self)
        }
        return decoded ?? String(validating: bytes, as: UTF8.self)
    }
}

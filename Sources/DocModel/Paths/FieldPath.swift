/// A path to a field inside a document: `address.city`, or with backquoted segments for
/// names that are not simple identifiers: `` `first.name`.initial ``.
///
/// Inside backquotes, `` \` `` and `\\` escape a backquote and a backslash.
public struct FieldPath: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The field names from the outermost in, unquoted; never empty.
    public let segments: [String]

    /// The longest field path, in UTF-8 bytes of its canonical form (Firestore's limit).
    public static let maxBytes = 1_500

    /// The special field path naming the document key (`__name__`).
    public static let documentID = FieldPath(unchecked: ["__name__"])

    /// Builds a path from explicit segments (no parsing); each segment must be non-empty.
    public init(segments: [String]) throws(DocError) {
        guard !segments.isEmpty else { throw .invalid("a field path needs at least one segment") }
        for (i, s) in segments.enumerated() where s.isEmpty {
            throw .invalid("field path segment \(i + 1) is empty", at: "field path \(segments)")
        }
        self.segments = segments
        try checkLength()
    }

    /// Parses a dotted field path with optional backquoted segments. Parsing works on Unicode
    /// scalars, so a `.` followed by a combining mark still separates segments.
    public init(_ text: String) throws(DocError) {
        var segments: [String] = []
        var current = ""
        var quoted = false
        var sawQuote = false
        var iterator = text.unicodeScalars.makeIterator()
        let at = "field path \"\(text)\""
        while let c = iterator.next() {
            if quoted {
                switch c {
                case "\\":
                    guard let next = iterator.next() else {
                        throw .invalid("field path ends inside an escape", at: at)
                    }
                    current.unicodeScalars.append(next)
                case "`":
                    quoted = false
                default:
                    current.unicodeScalars.append(c)
                }
            } else {
                switch c {
                case "`":
                    guard current.isEmpty, !sawQuote else {
                        throw .invalid("a backquote may only open a segment", at: at)
                    }
                    quoted = true
                    sawQuote = true
                case ".":
                    guard !current.isEmpty else {
                        throw .invalid("field path segment \(segments.count + 1) is empty", at: at)
                    }
                    segments.append(current)
                    current = ""
                    sawQuote = false
                case "~", "*", "/", "[", "]":
                    throw .invalid("'\(c)' is not allowed in a field path; backquote the segment", at: at)
                default:
                    guard !sawQuote else {
                        throw .invalid("characters after a closing backquote", at: at)
                    }
                    current.unicodeScalars.append(c)
                }
            }
        }
        guard !quoted else { throw .invalid("unterminated backquote", at: at) }
        guard !current.isEmpty else {
            throw .invalid("field path segment \(segments.count + 1) is empty", at: at)
        }
        segments.append(current)
        self.segments = segments
        try checkLength()
    }

    package init(unchecked segments: [String]) {
        self.segments = segments
    }

    private func checkLength() throws(DocError) {
        let bytes = canonicalByteCount
        guard bytes <= Self.maxBytes else {
            throw .invalid("field path is \(bytes) bytes; the limit is \(Self.maxBytes)",
                           at: "field path \"\(canonicalString.prefix(80))…\"")
        }
    }

    /// The UTF-8 length of ``canonicalString``, computed without building it.
    package var canonicalByteCount: Int {
        var total = max(0, segments.count - 1)   // the dots
        for segment in segments { total += Self.canonicalByteCount(ofSegment: segment) }
        return total
    }

    /// The UTF-8 length of one segment in ``canonicalString`` (backquoted unless it is a
    /// simple identifier, with backquotes and backslashes escaped).
    package static func canonicalByteCount(ofSegment segment: String) -> Int {
        if isSimpleIdentifier(segment) { return segment.utf8.count }
        var total = 2 + segment.utf8.count   // the backquotes
        for byte in segment.utf8 where byte == UInt8(ascii: "`") || byte == UInt8(ascii: "\\") { total += 1 }
        return total
    }

    /// Whether this is ``documentID`` (`__name__`), which names the document key rather than
    /// a field.
    public var isDocumentID: Bool { segments.count == 1 && segments[0] == "__name__" }
    /// The number of segments (at least 1).
    public var count: Int { segments.count }
    /// The top-level field name.
    public var firstSegment: String { segments[0] }
    /// The innermost field name.
    public var lastSegment: String { segments[segments.count - 1] }

    /// The path without its last segment; `nil` for a single-segment path.
    public var parent: FieldPath? {
        segments.count > 1 ? FieldPath(unchecked: Array(segments.dropLast())) : nil
    }

    /// This path with `segment` appended, not validated: `segment` should be non-empty and the
    /// result within ``maxBytes``.
    public func appending(_ segment: String) -> FieldPath { FieldPath(unchecked: segments + [segment]) }

    /// Whether `self` is a prefix of (or equal to) `other`.
    public func isPrefix(of other: FieldPath) -> Bool {
        segments.count <= other.segments.count
            && zip(segments, other.segments).allSatisfy { equalUTF8($0, $1) }
    }

    /// The canonical text form: simple identifiers bare, everything else backquoted.
    public var canonicalString: String {
        segments.map(Self.canonicalSegment).joined(separator: ".")
    }

    /// One segment as ``canonicalString`` writes it: as it is when it is a simple identifier,
    /// else in backquotes with `\` and `` ` `` escaped.
    package static func canonicalSegment(_ s: String) -> String {
        isSimpleIdentifier(s) ? s : "`" + s.replacing("\\", with: "\\\\").replacing("`", with: "\\`") + "`"
    }

    public var description: String { canonicalString }

    /// Whether `s` is a letter or `_` followed by letters, digits and `_` (ASCII), which the
    /// canonical form leaves unquoted. Reads a native string's stored bytes directly.
    static func isSimpleIdentifier(_ s: String) -> Bool {
        func check(_ bytes: some Collection<UInt8>) -> Bool {
            guard let first = bytes.first,
                  first == UInt8(ascii: "_") || (first | 0x20) >= UInt8(ascii: "a") && (first | 0x20) <= UInt8(ascii: "z")
            else { return false }
            return bytes.allSatisfy { c in
                c == UInt8(ascii: "_") || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9"))
                    || ((c | 0x20) >= UInt8(ascii: "a") && (c | 0x20) <= UInt8(ascii: "z"))
            }
        }
        return s.utf8.withContiguousStorageIfAvailable(check) ?? check(s.utf8)
    }

    public static func == (a: FieldPath, b: FieldPath) -> Bool {
        a.segments.count == b.segments.count && zip(a.segments, b.segments).allSatisfy { equalUTF8($0, $1) }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(segments.count)
        for s in segments { hashUTF8(s, into: &hasher) }
    }

    public static func < (a: FieldPath, b: FieldPath) -> Bool {
        for (x, y) in zip(a.segments, b.segments) {
            let c = compareUTF8(x, y)
            if c != 0 { return c < 0 }
        }
        return a.segments.count < b.segments.count
    }
}

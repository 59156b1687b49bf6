internal import DocModel

// Primitives of the persistence layer's record encodings (LevelDB values, not keys: keys use
// DocModel's order-preserving `KeyEncoder`).
//
//   varint      unsigned LEB128, minimal
//   zigzag      a signed integer as a varint of (v << 1) ^ (v >> 63)
//   bytes       varint length, then the bytes
//   string      bytes of the UTF-8 encoding
//   flag        one byte, 0 or 1
//   value       bytes of `Value.binaryEncoded()` (DocModel's binary value encoding)
//
// The reader accepts exactly what the writer produces (minimal varints, valid UTF-8, no
// trailing bytes) and reports anything else as `dataLoss` with the byte offset and the kind
// of record it was reading. It never traps on corrupt input.

/// Appends the primitives of the persistence record encodings to a byte array.
struct ByteWriter {
    /// The record so far.
    var bytes: [UInt8] = []

    /// Starts a record, optionally with a format byte.
    init(format: UInt8? = nil, capacity: Int = 64) {
        bytes.reserveCapacity(capacity)
        if let format { bytes.append(format) }
    }

    /// Appends one raw byte.
    mutating func byte(_ b: UInt8) { bytes.append(b) }

    /// Appends a `Bool` as one byte (0 or 1).
    mutating func flag(_ b: Bool) { bytes.append(b ? 1 : 0) }

    /// Appends an unsigned LEB128 varint.
    mutating func varint(_ v: UInt64) { Varint.append(v, to: &bytes) }

    /// Appends a signed integer as a zigzag varint (small magnitudes take one byte).
    mutating func zigzag(_ v: Int64) {
        varint(Varint.zigzag(v))
    }

    /// Appends a length-prefixed byte string.
    mutating func lengthPrefixed(_ b: [UInt8]) {
        varint(UInt64(b.count))
        bytes.append(contentsOf: b)
    }

    /// Appends a length-prefixed UTF-8 string.
    mutating func string(_ s: String) {
        varint(UInt64(s.utf8.count))
        bytes.append(contentsOf: s.utf8)
    }

    /// Appends the segments of a path: a count, then each segment as a string.
    mutating func segments(_ segments: [String]) {
        varint(UInt64(segments.count))
        for s in segments { string(s) }
    }

    /// Appends a value in DocModel's binary encoding, length-prefixed.
    mutating func value(_ v: Value) {
        lengthPrefixed(v.binaryEncoded())
    }

    /// Appends a timestamp: zigzag seconds, varint nanos.
    mutating func timestamp(_ t: Timestamp) {
        zigzag(t.seconds)
        varint(UInt64(t.nanos))
    }
}

/// Reads what ``ByteWriter`` wrote; every read throws `dataLoss` on malformed input.
struct ByteReader {
    private let bytes: [UInt8]
    /// The offset of the next byte to read.
    private(set) var offset: Int
    /// What is being decoded, for error messages ("mutation batch", "target data", …).
    let record: String

    /// Starts reading `bytes` at `offset`.
    init(_ bytes: [UInt8], record: String, offset: Int = 0) {
        self.bytes = bytes
        self.record = record
        self.offset = offset
    }

    /// Whether every byte has been read.
    var isAtEnd: Bool { offset >= bytes.count }

    /// The error for malformed input at `position` (default: the current offset).
    func fail(_ message: String, at position: Int? = nil) -> DocError {
        DocError(.dataLoss, "corrupt stored \(record): \(message)", at: "byte offset \(position ?? offset)")
    }

    /// Throws unless every byte has been read.
    func finish() throws(DocError) {
        guard offset == bytes.count else {
            throw fail("\(bytes.count - offset) unexpected trailing byte(s)")
        }
    }

    /// Reads one byte.
    mutating func byte() throws(DocError) -> UInt8 {
        guard offset < bytes.count else { throw fail("unexpected end of data") }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// Reads a one-byte flag (0 or 1).
    mutating func flag() throws(DocError) -> Bool {
        let at = offset
        switch try byte() {
        case 0: return false
        case 1: return true
        case let b: throw fail("invalid flag byte \(b)", at: at)
        }
    }

    /// Reads a minimal unsigned LEB128 varint.
    mutating func varint() throws(DocError) -> UInt64 {
        let start = offset
        do {
            return try Varint.read(bytes, at: &offset)
        } catch {
            throw fail(error.message, at: error == .truncated ? offset : start)
        }
    }

    /// Reads a zigzag varint.
    mutating func zigzag() throws(DocError) -> Int64 {
        Varint.unzigzag(try varint())
    }

    /// Reads a zigzag varint that must fit in `Int32`.
    mutating func int32() throws(DocError) -> Int32 {
        let at = offset
        let v = try zigzag()
        guard let i = Int32(exactly: v) else { throw fail("\(v) does not fit in 32 bits", at: at) }
        return i
    }

    /// Reads a zigzag varint as an `Int`.
    mutating func int() throws(DocError) -> Int {
        let at = offset
        let v = try zigzag()
        guard let i = Int(exactly: v) else { throw fail("\(v) does not fit in Int", at: at) }
        return i
    }

    /// Reads a count or length that cannot exceed the remaining bytes (each element takes at
    /// least one byte), checked before anything is allocated.
    mutating func count(_ what: String) throws(DocError) -> Int {
        let at = offset
        let n = try varint()
        guard n <= UInt64(bytes.count - offset) else {
            throw fail("\(what) \(n) exceeds the \(bytes.count - offset) remaining bytes", at: at)
        }
        return Int(n)
    }

    /// Reads a length-prefixed byte string.
    mutating func lengthPrefixed() throws(DocError) -> [UInt8] {
        let n = try count("length")
        defer { offset += n }
        return Array(bytes[offset..<(offset + n)])
    }

    /// Reads the rest of the record.
    mutating func rest() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(bytes[min(offset, bytes.count)...])
    }

    /// Reads a length-prefixed UTF-8 string.
    mutating func string() throws(DocError) -> String {
        let at = offset
        let raw = try lengthPrefixed()
        guard let s = UTF8Check.string(raw) else { throw fail("invalid UTF-8 in a string", at: at) }
        return s
    }

    /// Reads path segments (each non-empty and without `/`).
    mutating func segments() throws(DocError) -> [String] {
        let n = try count("segment count")
        var out: [String] = []
        out.reserveCapacity(n)
        for _ in 0..<n {
            let at = offset
            let s = try string()
            guard !s.isEmpty, !s.utf8.contains(UInt8(ascii: "/")) else {
                throw fail("invalid path segment \"\(s)\"", at: at)
            }
            out.append(s)
        }
        return out
    }

    /// Reads a document key (an even, non-zero number of segments).
    mutating func documentKey() throws(DocError) -> DocumentKey {
        let at = offset
        let segments = try segments()
        guard segments.count >= 2, segments.count % 2 == 0 else {
            throw fail("a document key needs an even, non-zero number of segments, got \(segments.count)", at: at)
        }
        return DocumentKey(unchecked: ResourcePath(unchecked: segments))
    }

    /// Reads a field path (at least one segment, each non-empty).
    mutating func fieldPath() throws(DocError) -> FieldPath {
        let at = offset
        let n = try count("field path segment count")
        guard n >= 1 else { throw fail("a field path needs at least one segment", at: at) }
        var out: [String] = []
        out.reserveCapacity(n)
        for _ in 0..<n {
            let sat = offset
            let s = try string()
            guard !s.isEmpty else { throw fail("empty field path segment", at: sat) }
            out.append(s)
        }
        return FieldPath(unchecked: out)
    }

    /// Reads a value written in DocModel's binary encoding.
    mutating func value() throws(DocError) -> Value {
        let at = offset
        let raw = try lengthPrefixed()
        do {
            return try Value(binary: raw)
        } catch {
            throw fail("bad value (\(error.message))", at: at)
        }
    }

    /// Reads a timestamp (seconds in Firestore's range, nanos below 10⁹).
    mutating func timestamp() throws(DocError) -> Timestamp {
        let at = offset
        let seconds = try zigzag()
        let nanos = try varint()
        guard nanos < 1_000_000_000, let t = try? Timestamp(seconds: seconds, nanos: Int32(nanos)) else {
            throw fail("invalid timestamp (\(seconds) s, \(nanos) ns)", at: at)
        }
        return t
    }
}

extension ByteWriter {
    /// Appends a field path: its segments.
    mutating func fieldPath(_ p: FieldPath) { segments(p.segments) }
    /// Appends a document key: its path segments.
    mutating func documentKey(_ k: DocumentKey) { segments(k.path.segments) }
}

extension ByteWriter {
    /// Appends an error: zigzag code, message, flag + location.
    mutating func error(_ e: DocError) {
        zigzag(Int64(e.code.rawValue))
        string(e.message)
        flag(e.location != nil)
        if let location = e.location { string(location) }
    }
}

extension ByteReader {
    /// Reads what ``ByteWriter/error(_:)`` wrote.
    mutating func error() throws(DocError) -> DocError {
        let raw = try int()
        guard let code = DocError.Code(rawValue: raw) else { throw fail("unknown error code \(raw)") }
        let message = try string()
        let location = try flag() ? try string() : nil
        return DocError(code, message, at: location)
    }
}

// Order-preserving byte encodings for LevelDB keys, in the spirit of Firestore's OrderedCode.
//
// Every component encoding is prefix-free (no encoding is a proper prefix of another of the
// same kind), so for a concatenation of components, bytewise (memcmp) order is the
// component-wise order. A descending component is the ascending encoding with every byte
// inverted; prefix-freeness makes that exactly the reverse order.
//
// Ascending primitives:
//   string / bytes  each 0x00 → 0x00 0xFF, each 0xFF → 0xFF 0x00, other bytes as-is, then the
//                   terminator 0x00 0x01. The terminator sorts below every escaped or plain
//                   byte, so a string sorts before its extensions.
//   UInt64          one byte 0x01 + n (n = number of significant bytes, 0…8), then the n
//                   bytes big-endian (0 is the single byte 0x01).
//   Int64           v ≥ 0: 0x80 + n, then the n significant bytes of v big-endian
//                   (0 is the single byte 0x80).
//                   v < 0: 0x7F − n where n is the number of significant bytes of ~v
//                   (= −v − 1), then the low n bytes of v big-endian (−1 is the single 0x7F).
//                   Headers run 0x77…0x88, so small magnitudes take 1–2 bytes.
//   path            each segment as 0x02 + string, then 0x01: a path sorts before its
//                   extensions and segments compare by UTF-8 bytes (`ResourcePath.<`).
//   infinity        0xFF 0xFF: greater than every other component, ascending or descending
//                   (no component encoding starts with 0xFF 0xFF or is the single byte 0xFF).
//                   Direction-independent; use it as an exclusive range upper bound.

/// Order-preserving key encodings ("ordered code") for LevelDB keys: the bytewise order of
/// encodings equals the order of what they encode, component by component. Build keys with
/// ``KeyEncoder`` and read them back with ``KeyDecoder``.
public enum OrderedCode {
    /// A component that sorts after every other component at the same position (in either
    /// direction): append it to a prefix to get an upper bound for range scans.
    public static let infinity: [UInt8] = [0xFF, 0xFF]

    /// Bytewise (memcmp) comparison, LevelDB's default key order: -1, 0 or 1.
    public static func compare(_ a: [UInt8], _ b: [UInt8]) -> Int { Value.compareBytes(a, b) }

    /// The smallest byte string greater than every string that starts with `prefix` (the
    /// prefix with trailing 0xFF bytes dropped and the last byte incremented), or `nil` when
    /// there is none (the prefix is empty or all 0xFF).
    public static func prefixSuccessor(_ prefix: [UInt8]) -> [UInt8]? {
        var out = prefix
        while let last = out.last {
            if last != 0xFF {
                out[out.count - 1] = last + 1
                return out
            }
            out.removeLast()
        }
        return nil
    }

    // MARK: Primitives (ascending)

    static let stringTerminator: (UInt8, UInt8) = (0x00, 0x01)
    static let pathSegment: UInt8 = 0x02
    static let pathEnd: UInt8 = 0x01

    /// Appends `s` with its 0x00 and 0xFF bytes escaped (0x00 0xFF, 0xFF 0x00), then the
    /// terminator 0x00 0x01.
    static func appendString(_ s: some Sequence<UInt8>, to out: inout [UInt8]) {
        // Every key and index row is built from strings: the bytes of a contiguous one (a
        // native `String`'s UTF-8, an array) are copied in runs between the bytes to escape
        // (usually one run) instead of one append (and capacity check) per byte.
        let contiguous: Void? = s.withContiguousStorageIfAvailable { appendEscaped($0, to: &out) }
        if contiguous == nil {
            for b in s {
                out.append(b)
                if b == 0x00 || b == 0xFF { out.append(~b) }
            }
        }
        out.append(stringTerminator.0)
        out.append(stringTerminator.1)
    }

    private static func appendEscaped(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        var run = 0
        for i in bytes.indices where bytes[i] == 0x00 || bytes[i] == 0xFF {
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run...i]))
            out.append(~bytes[i])
            run = i + 1
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run...]))
    }

    /// The number of significant bytes of `v` (0 for 0).
    static func significantBytes(_ v: UInt64) -> Int { (64 - v.leadingZeroBitCount + 7) / 8 }

    static func appendBigEndian(_ v: UInt64, count: Int, to out: inout [UInt8]) {
        var shift = 8 * (count - 1)
        while shift >= 0 {
            out.append(UInt8(truncatingIfNeeded: v >> UInt64(shift)))
            shift -= 8
        }
    }

    static func appendUInt64(_ v: UInt64, to out: inout [UInt8]) {
        let n = significantBytes(v)
        out.append(0x01 + UInt8(n))
        appendBigEndian(v, count: n, to: &out)
    }

    static func appendInt64(_ v: Int64, to out: inout [UInt8]) {
        if v >= 0 {
            let n = significantBytes(UInt64(v))
            out.append(0x80 + UInt8(n))
            appendBigEndian(UInt64(v), count: n, to: &out)
        } else {
            let n = significantBytes(UInt64(bitPattern: ~v))
            out.append(0x7F - UInt8(n))
            appendBigEndian(UInt64(bitPattern: v), count: n, to: &out)
        }
    }

    static func appendPath(_ path: ResourcePath, to out: inout [UInt8]) {
        appendPath(segments: path.segments[...], to: &out)
    }

    static func appendPath(segments: ArraySlice<String>, to out: inout [UInt8]) {
        for s in segments {
            out.append(pathSegment)
            appendString(s.utf8, to: &out)
        }
        out.append(pathEnd)
    }

    /// Inverts the bytes from `start` on: turns an ascending encoding into a descending one.
    static func invert(_ out: inout [UInt8], from start: Int) {
        for i in start..<out.count { out[i] = ~out[i] }
    }
}

/// Builds an ordered key by appending components; the bytewise order of two keys built with
/// the same sequence of component kinds is the component-wise order of their contents.
///
/// ```swift
/// var key = KeyEncoder()
/// key.append(string: "remote_documents")
/// key.append(key: documentKey)
/// db.put(key.bytes, document.binaryEncoded())
/// ```
public struct KeyEncoder: Sendable {
    /// The key built so far.
    public private(set) var bytes: [UInt8]

    /// Starts a key, optionally after raw `prefix` bytes (which are not encoded).
    public init(prefix: [UInt8] = []) {
        bytes = prefix
        bytes.reserveCapacity(prefix.count + 32)
    }

    private mutating func appending(descending: Bool, _ body: (inout [UInt8]) -> Void) {
        let start = bytes.count
        body(&bytes)
        if descending { OrderedCode.invert(&bytes, from: start) }
    }

    /// Appends a string, ordered by its UTF-8 bytes.
    public mutating func append(string: String, descending: Bool = false) {
        appending(descending: descending) { OrderedCode.appendString(string.utf8, to: &$0) }
    }

    /// Appends a byte string, ordered bytewise (shorter prefixes first).
    public mutating func append(bytes value: [UInt8], descending: Bool = false) {
        appending(descending: descending) { OrderedCode.appendString(value, to: &$0) }
    }

    /// Appends a signed integer (1 byte for -1 and 0, 2 bytes up to ±255, at most 9 bytes).
    public mutating func append(int64 value: Int64, descending: Bool = false) {
        appending(descending: descending) { OrderedCode.appendInt64(value, to: &$0) }
    }

    /// Appends an unsigned integer (1 byte for 0, at most 9 bytes).
    public mutating func append(uint64 value: UInt64, descending: Bool = false) {
        appending(descending: descending) { OrderedCode.appendUInt64(value, to: &$0) }
    }

    /// Appends a resource path, ordered exactly as `ResourcePath.<`: segment by segment by
    /// UTF-8 bytes, a path before its extensions.
    public mutating func append(path: ResourcePath, descending: Bool = false) {
        appending(descending: descending) { OrderedCode.appendPath(path, to: &$0) }
    }

    /// Appends the path made of `segments` (the bytes ``append(path:descending:)`` appends for
    /// that path), without building the path: e.g. a document's collection path.
    public mutating func append(pathSegments segments: ArraySlice<String>) {
        OrderedCode.appendPath(segments: segments, to: &bytes)
    }

    /// Appends a document key (its path; see ``append(path:descending:)``).
    public mutating func append(key: DocumentKey, descending: Bool = false) {
        append(path: key.path, descending: descending)
    }

    /// Appends a value in index order (see ``Value/indexEncoded(descending:)``).
    public mutating func append(indexValue value: Value, descending: Bool = false) {
        appending(descending: descending) { IndexValueEncoding.append(value, to: &$0) }
    }

    /// Appends ``OrderedCode/infinity``, which sorts after every other component.
    public mutating func appendInfinity() {
        bytes.append(contentsOf: OrderedCode.infinity)
    }

    /// Appends raw bytes, not encoded (they take part in the order as they are).
    public mutating func append(raw: [UInt8]) {
        bytes.append(contentsOf: raw)
    }
}

/// Reads the components of a key built by ``KeyEncoder``, in the same order and with the
/// same directions they were appended.
///
/// Every read throws `dataLoss` (with the byte offset) on malformed input; none traps.
public struct KeyDecoder: Sendable {
    /// The whole key.
    public let bytes: [UInt8]
    /// The offset of the next component.
    public private(set) var offset: Int

    /// Starts reading `bytes` at `offset` (e.g. after a raw prefix; clamped to `0...bytes.count`).
    public init(_ bytes: [UInt8], offset: Int = 0) {
        self.bytes = bytes
        self.offset = min(max(offset, 0), bytes.count)
    }

    /// Whether every byte has been read.
    public var isAtEnd: Bool { offset == bytes.count }

    /// Throws unless every byte has been read.
    public func finish() throws(DocError) {
        guard isAtEnd else { throw fail("\(bytes.count - offset) unexpected trailing bytes") }
    }

    func fail(_ message: String, at position: Int? = nil) -> DocError {
        DocError(.dataLoss, "corrupt key encoding: " + message, at: "byte offset \(position ?? offset)")
    }

    mutating func byte(_ mask: UInt8) throws(DocError) -> UInt8 {
        guard offset < bytes.count else { throw fail("unexpected end of key") }
        defer { offset += 1 }
        return bytes[offset] ^ mask
    }

    func peek(_ mask: UInt8, _ ahead: Int = 0) -> UInt8? {
        offset + ahead < bytes.count ? bytes[offset + ahead] ^ mask : nil
    }

    static func mask(_ descending: Bool) -> UInt8 { descending ? 0xFF : 0x00 }

    /// Consumes ``OrderedCode/infinity`` if it comes next; returns whether it did.
    public mutating func readInfinity() -> Bool {
        guard offset + 1 < bytes.count, bytes[offset] == 0xFF, bytes[offset + 1] == 0xFF else { return false }
        offset += 2
        return true
    }

    /// Reads a byte string component.
    public mutating func readBytes(descending: Bool = false) throws(DocError) -> [UInt8] {
        try rawString(Self.mask(descending))
    }

    /// Reads a string component (which must be valid UTF-8).
    public mutating func readString(descending: Bool = false) throws(DocError) -> String {
        try string(Self.mask(descending))
    }

    /// Reads a signed integer component.
    public mutating func readInt64(descending: Bool = false) throws(DocError) -> Int64 {
        try int64(Self.mask(descending))
    }

    /// Reads an unsigned integer component.
    public mutating func readUInt64(descending: Bool = false) throws(DocError) -> UInt64 {
        try uint64(Self.mask(descending))
    }

    /// Reads a resource path component.
    public mutating func readPath(descending: Bool = false) throws(DocError) -> ResourcePath {
        try path(Self.mask(descending))
    }

    /// Reads a document key component (a path with an even, non-zero number of segments).
    public mutating func readKey(descending: Bool = false) throws(DocError) -> DocumentKey {
        try key(Self.mask(descending))
    }

    /// Reads a value written with ``KeyEncoder/append(indexValue:descending:)``. The result
    /// equals (`==`) the encoded value but need not be identical: numbers come back as doubles
    /// (except integers a double cannot hold), and a pending server timestamp comes back
    /// without its previous value.
    public mutating func readIndexValue(descending: Bool = false) throws(DocError) -> Value {
        try IndexValueEncoding.read(&self, mask: Self.mask(descending), depth: 0)
    }

    // MARK: Primitives

    mutating func rawString(_ mask: UInt8) throws(DocError) -> [UInt8] {
        let start = offset
        var out: [UInt8] = []
        while true {
            guard offset < bytes.count else { throw fail("unterminated string (it starts at byte offset \(start))") }
            let b = bytes[offset] ^ mask
            offset += 1
            switch b {
            case 0x00:
                let next = try byte(mask)
                switch next {
                case 0x01: return out
                case 0xFF: out.append(0x00)
                default: throw fail("invalid escape 0x00 0x\(hex2(next)) in a string", at: offset - 2)
                }
            case 0xFF:
                let next = try byte(mask)
                guard next == 0x00 else { throw fail("invalid escape 0xFF 0x\(hex2(next)) in a string", at: offset - 2) }
                out.append(0xFF)
            default:
                out.append(b)
            }
        }
    }

    mutating func string(_ mask: UInt8) throws(DocError) -> String {
        let start = offset
        let raw = try rawString(mask)
        guard let s = UTF8Check.string(raw) else { throw fail("invalid UTF-8 in a string", at: start) }
        return s
    }

    mutating func bigEndian(_ count: Int, _ mask: UInt8) throws(DocError) -> UInt64 {
        guard bytes.count - offset >= count else { throw fail("unexpected end of key (expected \(count) more bytes)") }
        var v: UInt64 = 0
        for _ in 0..<count { v = v << 8 | UInt64(bytes[offset] ^ mask); offset += 1 }
        return v
    }

    mutating func uint64(_ mask: UInt8) throws(DocError) -> UInt64 {
        let start = offset
        let header = try byte(mask)
        guard header >= 0x01, header <= 0x09 else { throw fail("invalid unsigned integer header 0x\(hex2(header))", at: start) }
        let n = Int(header - 0x01)
        let v = try bigEndian(n, mask)
        guard OrderedCode.significantBytes(v) == n else { throw fail("non-canonical unsigned integer", at: start) }
        return v
    }

    mutating func int64(_ mask: UInt8) throws(DocError) -> Int64 {
        let start = offset
        let header = try byte(mask)
        switch header {
        case 0x80...0x88:
            let n = Int(header - 0x80)
            let v = try bigEndian(n, mask)
            guard OrderedCode.significantBytes(v) == n, v <= UInt64(Int64.max) else {
                throw fail("non-canonical integer", at: start)
            }
            return Int64(v)
        case 0x77...0x7F:
            let n = Int(0x7F - header)
            let low = try bigEndian(n, mask)
            // Sign-extend the low n bytes; their complement must need exactly n bytes.
            let v = n == 8 ? low : low | (UInt64.max << UInt64(8 * n))
            guard OrderedCode.significantBytes(~v) == n else { throw fail("non-canonical integer", at: start) }
            return Int64(bitPattern: v)
        default:
            throw fail("invalid integer header 0x\(hex2(header))", at: start)
        }
    }

    mutating func path(_ mask: UInt8) throws(DocError) -> ResourcePath {
        var segments: [String] = []
        while true {
            let at = offset
            switch try byte(mask) {
            case OrderedCode.pathEnd:
                return ResourcePath(unchecked: segments)
            case OrderedCode.pathSegment:
                let s = try string(mask)
                guard !s.isEmpty, !s.utf8.contains(UInt8(ascii: "/")) else {
                    throw fail("invalid path segment \"\(s)\"", at: at)
                }
                segments.append(s)
            case let b:
                throw fail("expected a path segment or the end of the path, found 0x\(hex2(b))", at: at)
            }
        }
    }

    mutating func key(_ mask: UInt8) throws(DocError) -> DocumentKey {
        let start = offset
        let p = try path(mask)
        guard p.count >= 2, p.count % 2 == 0 else {
            throw fail("a document key needs an even, non-zero number of segments, got \(p.count)", at: start)
        }
        return DocumentKey(unchecked: p)
    }
}

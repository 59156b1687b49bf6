// Compact binary encoding for storage (LevelDB values).
//
// Every top-level encoding starts with a two-byte header: the format version
// (`BinaryEncoding.formatVersion`, now 1) and a record kind:
//   0x01 value            header, value
//   0x02 object value     header, map body
//   0x03 document         header, key, version, createTime, flags, map body
//   0x04 no document      header, key, version, flags
//   0x05 unknown document header, key, version
//
// A value is a tag byte and a payload:
//   0x00 null   0x01 false   0x02 true
//   0x03 integer    zigzag LEB128 varint
//   0x04 double     8 bytes, the IEEE bit pattern little-endian (NaN payloads and -0.0 survive)
//   0x05 timestamp  zigzag varint seconds, varint nanos (nanos < 10^9; seconds are not
//                   range-checked, as Timestamp(microseconds:) can go beyond 0001…9999)
//   0x06 string     varint byte count, UTF-8
//   0x07 bytes      varint byte count, bytes
//   0x08 reference  key (below)
//   0x09 geo point  latitude, longitude: 8 bytes each as for doubles
//   0x0A array      varint count, values
//   0x0B map        map body: varint count, then (key as varint length + UTF-8, value) pairs
//                   in strictly increasing UTF-8 byte order of the keys
//   0x0C attachment the 32 bytes of the SHA-256 the id spells
// A key is a varint segment count and the segments (varint length + UTF-8).
// Versions are zigzag varints of microseconds. Flags: bit 0 hasLocalMutations,
// bit 1 hasCommittedMutations (other bits must be zero).
//
// The decoder accepts exactly what the encoder writes (minimal varints, sorted unique keys,
// valid UTF-8, no trailing bytes), so one value has one encoding.

/// Parameters of the compact binary storage encoding (``Value/binaryEncoded()``).
public enum BinaryEncoding {
    /// The format version written as the first byte of every top-level encoding.
    public static let formatVersion: UInt8 = 1

    /// The deepest nesting of arrays and maps the decoder accepts (documents are limited to
    /// ``Value/maxDepth``; this bound only protects the decoder's stack from corrupt input).
    public static let maxDepth = 128

    enum Kind: UInt8 {
        case value = 1, object, document, noDocument, unknownDocument

        var name: String {
            switch self {
            case .value: return "value"
            case .object: return "object value"
            case .document: return "document"
            case .noDocument: return "no-document"
            case .unknownDocument: return "unknown-document"
            }
        }
    }

    enum Tag {
        static let null: UInt8 = 0x00
        static let `false`: UInt8 = 0x01
        static let `true`: UInt8 = 0x02
        static let integer: UInt8 = 0x03
        static let double: UInt8 = 0x04
        static let timestamp: UInt8 = 0x05
        static let string: UInt8 = 0x06
        static let bytes: UInt8 = 0x07
        static let reference: UInt8 = 0x08
        static let geoPoint: UInt8 = 0x09
        static let array: UInt8 = 0x0A
        static let map: UInt8 = 0x0B
        static let attachment: UInt8 = 0x0C
    }

    static let localMutationsFlag: UInt8 = 0x01
    static let committedMutationsFlag: UInt8 = 0x02
}

// MARK: - Public API

extension Value {
    /// The compact binary storage encoding: a format header, then a tag byte per value with
    /// varint lengths, zigzag varint integers and raw 8-byte doubles. Map entries are sorted
    /// by key, so identical values have identical encodings. ``init(binary:)`` reads it back
    /// identically (``isIdentical(to:)``).
    public func binaryEncoded() -> [UInt8] {
        var w = BinaryWriter(kind: .value)
        w.value(self)
        return w.bytes
    }

    /// Decodes ``binaryEncoded()`` output.
    ///
    /// - Throws: `dataLoss` with the byte offset on corrupt, truncated or non-canonical input,
    ///   an unsupported format version, or a record of another kind. Never traps.
    public init(binary: [UInt8]) throws(DocError) {
        var r = try BinaryReader(binary, kind: .value)
        self = try r.value(depth: 0)
        try r.finish()
    }
}

extension ObjectValue {
    /// The compact binary storage encoding of the fields (see ``Value/binaryEncoded()``).
    public func binaryEncoded() -> [UInt8] {
        var w = BinaryWriter(kind: .object)
        w.mapBody(fields)
        return w.bytes
    }

    /// Decodes ``binaryEncoded()`` output; throws `dataLoss` on corrupt input.
    public init(binary: [UInt8]) throws(DocError) {
        var r = try BinaryReader(binary, kind: .object)
        let fields = try r.mapBody(depth: 1)
        try r.finish()
        self.init(fields)
    }
}

extension Document {
    /// The storage encoding of a document: key, version, create time, the pending-write flags
    /// and the fields. The same bytes as ``MaybeDocument/binaryEncoded()`` of
    /// `.document(self)`.
    public func binaryEncoded() -> [UInt8] { MaybeDocument.document(self).binaryEncoded() }

    /// Decodes a document; throws `dataLoss` on corrupt input or when the bytes hold a
    /// no-document or unknown-document record.
    public init(binary: [UInt8]) throws(DocError) {
        var r = try BinaryReader(binary, kind: .document)
        self = try r.documentBody()
        try r.finish()
    }
}

extension MaybeDocument {
    /// The storage encoding of what is known about a document key (a document, a deletion,
    /// or an acknowledged write of unknown contents).
    public func binaryEncoded() -> [UInt8] { binaryEncoded(after: []) }

    /// ``binaryEncoded()`` appended to `prefix`: records that wrap a document (a header, then
    /// the document) are written in one buffer, without copying the encoding.
    package func binaryEncoded(after prefix: [UInt8]) -> [UInt8] {
        switch self {
        case .document(let d):
            var w = BinaryWriter(prefix: prefix, kind: .document, capacity: 32 + 16 * d.data.fields.count)
            w.key(d.key)
            w.zigzag(d.version.microseconds)
            w.zigzag(d.createTime.microseconds)
            w.bytes.append((d.hasLocalMutations ? BinaryEncoding.localMutationsFlag : 0)
                | (d.hasCommittedMutations ? BinaryEncoding.committedMutationsFlag : 0))
            w.mapBody(d.data.fields)
            return w.bytes
        case .noDocument(let d):
            var w = BinaryWriter(prefix: prefix, kind: .noDocument)
            w.key(d.key)
            w.zigzag(d.version.microseconds)
            w.bytes.append(d.hasCommittedMutations ? BinaryEncoding.committedMutationsFlag : 0)
            return w.bytes
        case .unknown(let d):
            var w = BinaryWriter(prefix: prefix, kind: .unknownDocument)
            w.key(d.key)
            w.zigzag(d.version.microseconds)
            return w.bytes
        }
    }

    /// Decodes any of the three records; throws `dataLoss` on corrupt input.
    public init(binary: [UInt8]) throws(DocError) {
        try self.init(binary: binary, projecting: nil)
    }

    /// Decodes any of the three records, a document holding only the top-level fields in
    /// `projection` (all of them when `nil`): enough to match and order it by a query that
    /// reads only those, without building the rest. The other fields are skipped with their
    /// structure checked but not their contents (string encodings, key order); decode the
    /// document in full before handing it out.
    package init(binary: [UInt8], projecting projection: FieldProjection?) throws(DocError) {
        var r = try BinaryReader(binary, kind: nil)
        switch r.kind {
        case .document:
            self = .document(try r.documentBody(projecting: projection))
        case .noDocument:
            let key = try r.key()
            let version = SnapshotVersion(microseconds: try r.zigzag())
            let flags = try r.flags(allowed: BinaryEncoding.committedMutationsFlag)
            self = .noDocument(NoDocument(key: key, version: version, hasCommittedMutations: flags != 0))
        case .unknownDocument:
            let key = try r.key()
            self = .unknown(UnknownDocument(key: key, version: SnapshotVersion(microseconds: try r.zigzag())))
        case .value, .object:
            throw r.fail("expected a document record, found a \(r.kind.name) record", at: 1)
        }
        try r.finish()
    }
}

// MARK: - Writer

struct BinaryWriter {
    var bytes: [UInt8] = []

    init(kind: BinaryEncoding.Kind) {
        bytes.reserveCapacity(64)
        bytes.append(BinaryEncoding.formatVersion)
        bytes.append(kind.rawValue)
    }

    /// A writer whose output starts with `prefix`, then the header of `kind`.
    init(prefix: [UInt8], kind: BinaryEncoding.Kind, capacity: Int = 64) {
        bytes = prefix
        bytes.reserveCapacity(prefix.count + capacity)
        bytes.append(BinaryEncoding.formatVersion)
        bytes.append(kind.rawValue)
    }

    mutating func varint(_ v: UInt64) { Varint.append(v, to: &bytes) }

    mutating func zigzag(_ v: Int64) {
        varint(Varint.zigzag(v))
    }

    mutating func raw64(_ v: UInt64) {
        for i in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * i))) }
    }

    mutating func string(_ s: String) {
        // Native strings (the usual case) are copied from their UTF-8 storage in one go.
        let copied: Void? = s.utf8.withContiguousStorageIfAvailable { utf8 in
            varint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
        if copied == nil {
            varint(UInt64(s.utf8.count))
            bytes.append(contentsOf: s.utf8)
        }
    }

    mutating func key(_ k: DocumentKey) {
        varint(UInt64(k.path.count))
        for s in k.path.segments { string(s) }
    }

    mutating func value(_ v: Value) {
        typealias Tag = BinaryEncoding.Tag
        switch v {
        case .null: bytes.append(Tag.null)
        case .boolean(let b): bytes.append(b ? Tag.true : Tag.false)
        case .integer(let i):
            bytes.append(Tag.integer)
            zigzag(i)
        case .double(let d):
            bytes.append(Tag.double)
            raw64(d.bitPattern)
        case .timestamp(let t):
            bytes.append(Tag.timestamp)
            zigzag(t.seconds)
            varint(UInt64(t.nanos))
        case .string(let s):
            bytes.append(Tag.string)
            string(s)
        case .bytes(let b):
            bytes.append(Tag.bytes)
            varint(UInt64(b.count))
            bytes.append(contentsOf: b)
        case .reference(let k):
            bytes.append(Tag.reference)
            key(k)
        case .attachment(let id):
            bytes.append(Tag.attachment)
            bytes.append(contentsOf: id.digestBytes)
        case .geoPoint(let g):
            bytes.append(Tag.geoPoint)
            raw64(g.latitude.bitPattern)
            raw64(g.longitude.bitPattern)
        case .array(let a):
            bytes.append(Tag.array)
            varint(UInt64(a.count))
            for e in a { value(e) }
        case .map(let m):
            bytes.append(Tag.map)
            mapBody(m)
        }
    }

    mutating func mapBody(_ m: [String: Value]) {
        varint(UInt64(m.count))
        Self.forEachInKeyOrder(m) { k, v in
            string(k)
            value(v)
        }
    }

    /// Calls `body` with the entries of `m` in increasing UTF-8 byte order of their keys, the
    /// order of a map body. A small map (the usual case) has its indices insertion-sorted in
    /// scratch space on the stack, comparing keys only: no entries are copied and no key is
    /// looked up again.
    static func forEachInKeyOrder<E: Error>(_ m: [String: Value], _ body: (String, Value) throws(E) -> Void) throws(E) {
        if m.count == 1, let (k, v) = m.first {
            try body(k, v)
            return
        }
        guard m.count <= smallMapCount else {
            for (k, v) in m.sorted(by: { compareUTF8($0.key, $1.key) < 0 }) { try body(k, v) }
            return
        }
        let failure: E? = withUnsafeTemporaryAllocation(of: Dictionary<String, Value>.Index.self, capacity: m.count) { scratch in
            let order = scratch.baseAddress!
            let keys = m.keys
            var n = 0
            var i = m.startIndex
            while i != m.endIndex {
                let key = keys[i]
                var j = n
                while j > 0, compareUTF8(keys[order[j - 1]], key) > 0 { j -= 1 }
                (order + j + 1).moveInitialize(from: order + j, count: n - j)
                (order + j).initialize(to: i)
                n += 1
                m.formIndex(after: &i)
            }
            defer { order.deinitialize(count: n) }
            let values = m.values
            do throws(E) {
                for k in 0..<n { try body(keys[order[k]], values[order[k]]) }
            } catch {
                return error
            }
            return nil
        }
        if let failure { throw failure }
    }

    /// Maps up to this many entries are sorted in stack scratch space.
    static let smallMapCount = 32
}

// MARK: - Reader

struct BinaryReader {
    private let bytes: [UInt8]
    private(set) var pos = 0
    let kind: BinaryEncoding.Kind

    /// Reads the header; `expected` nil accepts any kind.
    init(_ bytes: [UInt8], kind expected: BinaryEncoding.Kind?) throws(DocError) {
        self.bytes = bytes
        guard bytes.count >= 2 else {
            throw Self.fail("truncated header (\(bytes.count) byte\(bytes.count == 1 ? "" : "s"))", at: bytes.count)
        }
        guard bytes[0] == BinaryEncoding.formatVersion else {
            throw Self.fail("unsupported format version \(bytes[0]) (this build reads version \(BinaryEncoding.formatVersion))", at: 0)
        }
        guard let kind = BinaryEncoding.Kind(rawValue: bytes[1]) else {
            throw Self.fail("unknown record kind 0x\(hex2(bytes[1]))", at: 1)
        }
        if let expected, expected != kind {
            throw Self.fail("expected a \(expected.name) record, found a \(kind.name) record", at: 1)
        }
        self.kind = kind
        pos = 2
    }

    static func fail(_ message: String, at offset: Int) -> DocError {
        DocError(.dataLoss, "corrupt binary encoding: " + message, at: "byte offset \(offset)")
    }

    func fail(_ message: String, at offset: Int? = nil) -> DocError { Self.fail(message, at: offset ?? pos) }

    func finish() throws(DocError) {
        guard pos == bytes.count else {
            throw fail("\(bytes.count - pos) unexpected trailing byte\(bytes.count - pos == 1 ? "" : "s")")
        }
    }

    private mutating func byte() throws(DocError) -> UInt8 {
        guard pos < bytes.count else { throw fail("unexpected end of data") }
        defer { pos += 1 }
        return bytes[pos]
    }

    mutating func varint() throws(DocError) -> UInt64 {
        let start = pos
        do {
            return try Varint.read(bytes, at: &pos)
        } catch {
            throw fail(error.message, at: error == .truncated ? pos : start)
        }
    }

    mutating func zigzag() throws(DocError) -> Int64 {
        Varint.unzigzag(try varint())
    }

    /// A length or count that must not exceed the remaining bytes (each element takes at
    /// least one byte), checked before anything is allocated.
    private mutating func length(_ what: String) throws(DocError) -> Int {
        let start = pos
        let n = try varint()
        guard n <= UInt64(bytes.count - pos) else {
            throw fail("\(what) \(n) exceeds the \(bytes.count - pos) remaining bytes", at: start)
        }
        return Int(n)
    }

    private mutating func raw64() throws(DocError) -> UInt64 {
        guard bytes.count - pos >= 8 else { throw fail("unexpected end of data (expected 8 bytes)") }
        var v: UInt64 = 0
        for i in 0..<8 { v |= UInt64(bytes[pos + i]) << (8 * i) }
        pos += 8
        return v
    }

    mutating func string() throws(DocError) -> String {
        try string(length: try length("string length"))
    }

    /// The string of `n` bytes at the read position (its length already read).
    private mutating func string(length n: Int) throws(DocError) -> String {
        guard let s = UTF8Check.string(bytes[pos..<(pos + n)]) else { throw fail("invalid UTF-8 in a string") }
        pos += n
        return s
    }

    mutating func key() throws(DocError) -> DocumentKey {
        let start = pos
        let count = try length("segment count")
        guard count >= 2, count % 2 == 0 else {
            throw fail("a document key needs an even, non-zero number of segments, got \(count)", at: start)
        }
        var segments: [String] = []
        segments.reserveCapacity(count)
        for _ in 0..<count {
            let at = pos
            let s = try string()
            guard !s.isEmpty, !s.utf8.contains(UInt8(ascii: "/")) else {
                throw fail("invalid document key segment \"\(s)\"", at: at)
            }
            segments.append(s)
        }
        return DocumentKey(unchecked: ResourcePath(unchecked: segments))
    }

    mutating func flags(allowed: UInt8) throws(DocError) -> UInt8 {
        let f = try byte()
        guard f & ~allowed == 0 else { throw fail("unknown flags 0x\(hex2(f))", at: pos - 1) }
        return f
    }

    mutating func value(depth: Int) throws(DocError) -> Value {
        typealias Tag = BinaryEncoding.Tag
        let start = pos
        let tag = try byte()
        switch tag {
        case Tag.null: return .null
        case Tag.false: return .boolean(false)
        case Tag.true: return .boolean(true)
        case Tag.integer: return .integer(try zigzag())
        case Tag.double: return .double(Double(bitPattern: try raw64()))
        case Tag.timestamp:
            let seconds = try zigzag()
            let at = pos
            let nanos = try varint()
            guard nanos < 1_000_000_000 else { throw fail("timestamp nanos \(nanos) out of range", at: at) }
            return .timestamp(Timestamp(uncheckedSeconds: seconds, nanos: Int32(nanos)))
        case Tag.string: return .string(try string())
        case Tag.bytes:
            let n = try length("bytes length")
            defer { pos += n }
            return .bytes(Array(bytes[pos..<(pos + n)]))
        case Tag.reference: return .reference(try key())
        case Tag.attachment:
            guard bytes.count - pos >= 32 else { throw fail("truncated attachment id", at: start) }
            defer { pos += 32 }
            return .attachment(AttachmentID(digest: bytes[pos..<(pos + 32)]))
        case Tag.geoPoint:
            let lat = Double(bitPattern: try raw64())
            let lng = Double(bitPattern: try raw64())
            // Reject what GeoPoint would normalize (-0.0) so the encoding stays canonical.
            guard let g = try? GeoPoint(latitude: lat, longitude: lng),
                  g.latitude.bitPattern == lat.bitPattern, g.longitude.bitPattern == lng.bitPattern
            else { throw fail("invalid geo point (\(lat), \(lng))", at: start + 1) }
            return .geoPoint(g)
        case Tag.array:
            guard depth < BinaryEncoding.maxDepth else { throw fail("nested deeper than \(BinaryEncoding.maxDepth) levels", at: start) }
            let n = try length("array count")
            var out: [Value] = []
            out.reserveCapacity(n)
            for _ in 0..<n { out.append(try value(depth: depth + 1)) }
            return .array(out)
        case Tag.map:
            guard depth < BinaryEncoding.maxDepth else { throw fail("nested deeper than \(BinaryEncoding.maxDepth) levels", at: start) }
            return .map(try mapBody(depth: depth + 1))
        default:
            throw fail("unknown value tag 0x\(hex2(tag))", at: start)
        }
    }

    /// A top-level map body with only the entries `projection` names; the others skipped.
    mutating func projectedMapBody(_ projection: FieldProjection) throws(DocError) -> [String: Value] {
        let n = try length("map entry count")
        var out: [String: Value] = [:]
        for _ in 0..<n {
            let keyLength = try length("string length")
            let keyBytes = bytes[pos..<(pos + keyLength)]
            if projection.contains(keyBytes) {
                let k = try string(length: keyLength)
                out[k] = try value(depth: 1)
            } else {
                pos += keyLength
                try skipValue(depth: 1)
            }
        }
        return out
    }

    /// Moves past one value, checking its structure (tags, lengths, depth) only.
    mutating func skipValue(depth: Int) throws(DocError) {
        typealias Tag = BinaryEncoding.Tag
        let start = pos
        let tag = try byte()
        func skip(_ n: Int) throws(DocError) {
            guard bytes.count - pos >= n else { throw fail("unexpected end of data (expected \(n) bytes)") }
            pos += n
        }
        switch tag {
        case Tag.null, Tag.false, Tag.true: return
        case Tag.integer: _ = try varint()
        case Tag.double: try skip(8)
        case Tag.timestamp: _ = try varint(); _ = try varint()
        case Tag.string, Tag.bytes: try skip(try length("string length"))
        case Tag.reference:
            let count = try length("segment count")
            for _ in 0..<count { try skip(try length("string length")) }
        case Tag.attachment: try skip(32)
        case Tag.geoPoint: try skip(16)
        case Tag.array, Tag.map:
            guard depth < BinaryEncoding.maxDepth else { throw fail("nested deeper than \(BinaryEncoding.maxDepth) levels", at: start) }
            let n = try length(tag == Tag.array ? "array count" : "map entry count")
            for _ in 0..<n {
                if tag == Tag.map { try skip(try length("string length")) }
                try skipValue(depth: depth + 1)
            }
        default:
            throw fail("unknown value tag 0x\(hex2(tag))", at: start)
        }
    }

    mutating func mapBody(depth: Int) throws(DocError) -> [String: Value] {
        let n = try length("map entry count")
        var out: [String: Value] = [:]
        out.reserveCapacity(n)
        var previous: String?
        for _ in 0..<n {
            let at = pos
            let k = try string()
            if let previous, compareUTF8(previous, k) >= 0 {
                throw fail("map keys out of order or repeated (\"\(previous)\" then \"\(k)\")", at: at)
            }
            // Byte-distinct but canonically equivalent keys cannot share a Swift dictionary.
            guard out.updateValue(try value(depth: depth), forKey: k) == nil else {
                throw fail("map key \"\(k)\" collides with a canonically equivalent earlier key", at: at)
            }
            previous = k
        }
        return out
    }

    mutating func documentBody(projecting projection: FieldProjection? = nil) throws(DocError) -> Document {
        let key = try key()
        let version = SnapshotVersion(microseconds: try zigzag())
        let createTime = SnapshotVersion(microseconds: try zigzag())
        let flags = try flags(allowed: BinaryEncoding.localMutationsFlag | BinaryEncoding.committedMutationsFlag)
        let fields: [String: Value]
        if let projection { fields = try projectedMapBody(projection) } else { fields = try mapBody(depth: 1) }
        return Document(key: key, data: ObjectValue(fields), version: version, createTime: createTime,
                        hasLocalMutations: flags & BinaryEncoding.localMutationsFlag != 0,
                        hasCommittedMutations: flags & BinaryEncoding.committedMutationsFlag != 0)
    }
}

/// The top-level fields a partial decode keeps (``MaybeDocument/init(binary:projecting:)``),
/// as UTF-8 bytes.
package struct FieldProjection: Sendable {
    private let names: [[UInt8]]

    /// The top-level fields of `paths` (a nested path keeps its whole top-level field).
    package init(_ paths: some Sequence<FieldPath>) {
        var names = Set<[UInt8]>()
        for path in paths where !path.isDocumentID { names.insert(Array(path.segments[0].utf8)) }
        self.names = Array(names)
    }

    /// Whether the field named by these UTF-8 bytes is kept.
    func contains(_ name: ArraySlice<UInt8>) -> Bool {
        names.contains { $0.elementsEqual(name) }
    }
}

// Index value encoding: bytewise order of encodings == Value.compare order.
//
// A value is a type tag (in Firestore's type order, with gaps for future types) and a body:
//   0x05 null
//   0x0A boolean          0x00 false / 0x01 true
//   0x0F number           8-byte key, then 0x00 — or 0x01 and a 2-byte remainder (below)
//   0x14 timestamp        Int64 seconds, UInt64 nanos (OrderedCode)
//   0x19 server timestamp the local write time as for timestamps (the previous value is not
//                         part of the order)
//   0x1E string           OrderedCode string of the UTF-8 bytes
//   0x23 bytes            OrderedCode string
//   0x28 reference        OrderedCode path
//   0x2A attachment       the 32 digest bytes the id spells (fixed length: prefix-free)
//   0x2D geo point        8-byte keys of latitude and longitude
//   0x32 array            the elements, then 0x00 (below every tag: shorter arrays first)
//   0x37 map              (OrderedCode key string, value) per entry in UTF-8 key order, then
//                         0x00 0x00 (below every key encoding: fewer entries first)
//
// Numbers. The 8-byte key of a double d is its IEEE bit pattern, big-endian, with the sign bit
// set for d ≥ 0 and all bits inverted for d < 0; -0.0 is first turned into 0.0, and NaN is
// eight 0x00 bytes (below -∞, whose key is 00 0F FF …). An integer that a double represents
// exactly is encoded as that double, so `1` and `1.0` encode identically. An integer i that no
// double represents (|i| > 2^53) is encoded as the largest double d < i, then 0x01 and the
// remainder i − d (1 … 1023, two bytes big-endian): it sorts after d (whose marker is 0x00),
// before the next double up, and among the integers between the two by its remainder.
//
// Every encoding is prefix-free and starts with its tag (0x05…0x37), so values followed by
// further components (a document key) order component-wise, and inverting the bytes gives the
// descending order.

extension Value {
    /// An encoding whose bytewise (memcmp) order is ``compare(_:_:)`` order: type order first,
    /// integers and doubles in one exact numeric order (NaN first, `1` and `1.0` alike,
    /// `-0.0` like `0.0`, `2^53 + 1` above `2^53`), strings and bytes bytewise, arrays and
    /// maps element-wise and then by size. Values that are equal (`==`) have identical
    /// encodings.
    ///
    /// The encoding is self-delimiting: append more components after it (e.g. with
    /// ``KeyEncoder``) and keys still order by this value first. `descending: true` inverts
    /// every byte, reversing the order (for `orderBy … desc` indexes).
    public func indexEncoded(descending: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(32)   // most values: one allocation, not a few growing ones
        IndexValueEncoding.append(self, to: &out)
        if descending { OrderedCode.invert(&out, from: 0) }
        return out
    }
}

enum IndexValueEncoding {
    enum Tag {
        static let null: UInt8 = 0x05
        static let boolean: UInt8 = 0x0A
        static let number: UInt8 = 0x0F
        static let timestamp: UInt8 = 0x14
        static let serverTimestamp: UInt8 = 0x19
        static let string: UInt8 = 0x1E
        static let bytes: UInt8 = 0x23
        static let reference: UInt8 = 0x28
        static let attachment: UInt8 = 0x2A
        static let geoPoint: UInt8 = 0x2D
        static let array: UInt8 = 0x32
        static let map: UInt8 = 0x37
    }

    static let arrayEnd: UInt8 = 0x00
    static let exactNumber: UInt8 = 0x00
    static let integerRemainder: UInt8 = 0x01

    /// The deepest nesting the decoder accepts (stack protection against corrupt keys).
    static let maxDepth = 128

    static func append(_ value: Value, to out: inout [UInt8]) {
        switch value {
        case .null:
            out.append(Tag.null)
        case .boolean(let b):
            out.append(Tag.boolean)
            out.append(b ? 1 : 0)
        case .integer(let i):
            out.append(Tag.number)
            appendInteger(i, to: &out)
        case .double(let d):
            out.append(Tag.number)
            OrderedCode.appendBigEndian(orderedBits(d), count: 8, to: &out)
            out.append(exactNumber)
        case .timestamp(let t):
            out.append(Tag.timestamp)
            appendTimestamp(t, to: &out)
        case .string(let s):
            out.append(Tag.string)
            OrderedCode.appendString(s.utf8, to: &out)
        case .bytes(let b):
            out.append(Tag.bytes)
            OrderedCode.appendString(b, to: &out)
        case .reference(let k):
            out.append(Tag.reference)
            OrderedCode.appendPath(k.path, to: &out)
        case .attachment(let id):
            out.append(Tag.attachment)
            out.append(contentsOf: id.digestBytes)
        case .geoPoint(let g):
            out.append(Tag.geoPoint)
            OrderedCode.appendBigEndian(orderedBits(g.latitude), count: 8, to: &out)
            OrderedCode.appendBigEndian(orderedBits(g.longitude), count: 8, to: &out)
        case .array(let a):
            out.append(Tag.array)
            for e in a { append(e, to: &out) }
            out.append(arrayEnd)
        case .map(let m):
            if let t = value.serverTimestampLocalWriteTime {
                out.append(Tag.serverTimestamp)
                appendTimestamp(t, to: &out)
                return
            }
            out.append(Tag.map)
            for k in m.keys.sorted(by: { compareUTF8($0, $1) < 0 }) {
                OrderedCode.appendString(k.utf8, to: &out)
                append(m[k]!, to: &out)
            }
            out.append(0x00)
            out.append(0x00)
        }
    }

    static func appendTimestamp(_ t: Timestamp, to out: inout [UInt8]) {
        OrderedCode.appendInt64(t.seconds, to: &out)
        OrderedCode.appendUInt64(UInt64(t.nanos), to: &out)
    }

    /// The order-preserving 64-bit key of a double (NaN lowest, -0.0 as 0.0).
    static func orderedBits(_ d: Double) -> UInt64 {
        if d.isNaN { return 0 }
        let bits = (d + 0.0).bitPattern
        return bits >> 63 == 1 ? ~bits : bits | (1 << 63)
    }

    /// The inverse of ``orderedBits(_:)`` for keys other than 0 (NaN).
    static func double(fromOrderedBits u: UInt64) -> Double {
        Double(bitPattern: u >> 63 == 1 ? u & ~(1 << 63) : ~u)
    }

    static func appendInteger(_ i: Int64, to out: inout [UInt8]) {
        // The largest double ≤ i (Double(i) rounds to nearest, which may be above i).
        var d = Double(i)
        if Value.compareIntegerToDouble(i, d) < 0 { d = d.nextDown }
        OrderedCode.appendBigEndian(orderedBits(d), count: 8, to: &out)
        if Value.compareIntegerToDouble(i, d) == 0 {
            out.append(exactNumber)
        } else {
            // |i| > 2^53 here, so d is an integer in Int64 range and i − d < 2^10.
            let r = UInt64(i - Int64(d))
            out.append(integerRemainder)
            OrderedCode.appendBigEndian(r, count: 2, to: &out)
        }
    }

    // MARK: Decoding

    static func read(_ r: inout KeyDecoder, mask: UInt8, depth: Int) throws(DocError) -> Value {
        let start = r.offset
        let tag = try r.byte(mask)
        switch tag {
        case Tag.null:
            return .null
        case Tag.boolean:
            let b = try r.byte(mask)
            guard b <= 1 else { throw r.fail("invalid boolean 0x\(hex2(b))", at: start + 1) }
            return .boolean(b == 1)
        case Tag.number:
            return try readNumber(&r, mask: mask)
        case Tag.timestamp:
            return .timestamp(try readTimestamp(&r, mask: mask))
        case Tag.serverTimestamp:
            return .pendingServerTimestamp(localWriteTime: try readTimestamp(&r, mask: mask), previous: nil)
        case Tag.string:
            return .string(try r.string(mask))
        case Tag.bytes:
            return .bytes(try r.rawString(mask))
        case Tag.reference:
            return .reference(try r.key(mask))
        case Tag.attachment:
            var digest: [UInt8] = []
            digest.reserveCapacity(32)
            for _ in 0..<32 { digest.append(try r.byte(mask)) }
            return .attachment(AttachmentID(digest: digest))
        case Tag.geoPoint:
            let lat = try r.bigEndian(8, mask), lng = try r.bigEndian(8, mask)
            let latitude = double(fromOrderedBits: lat), longitude = double(fromOrderedBits: lng)
            guard lat != 0, lng != 0, let g = try? GeoPoint(latitude: latitude, longitude: longitude),
                  orderedBits(g.latitude) == lat, orderedBits(g.longitude) == lng
            else { throw r.fail("invalid geo point", at: start + 1) }
            return .geoPoint(g)
        case Tag.array:
            guard depth < maxDepth else { throw r.fail("nested deeper than \(maxDepth) levels", at: start) }
            var out: [Value] = []
            while true {
                guard let next = r.peek(mask) else { throw r.fail("unterminated array") }
                if next == arrayEnd {
                    _ = try r.byte(mask)
                    return .array(out)
                }
                out.append(try read(&r, mask: mask, depth: depth + 1))
            }
        case Tag.map:
            guard depth < maxDepth else { throw r.fail("nested deeper than \(maxDepth) levels", at: start) }
            var out: [String: Value] = [:]
            var previous: String?
            while true {
                guard let a = r.peek(mask), let b = r.peek(mask, 1) else { throw r.fail("unterminated map") }
                if a == 0x00, b == 0x00 {
                    _ = try r.byte(mask)
                    _ = try r.byte(mask)
                    return .map(out)
                }
                let at = r.offset
                let key = try r.string(mask)
                if let previous, compareUTF8(previous, key) >= 0 {
                    throw r.fail("map keys out of order or repeated", at: at)
                }
                guard out[key] == nil else { throw r.fail("map key collides with a canonically equivalent key", at: at) }
                out[key] = try read(&r, mask: mask, depth: depth + 1)
                previous = key
            }
        default:
            throw r.fail("unknown index value tag 0x\(hex2(tag))", at: start)
        }
    }

    static func readTimestamp(_ r: inout KeyDecoder, mask: UInt8) throws(DocError) -> Timestamp {
        let seconds = try r.int64(mask)
        let at = r.offset
        let nanos = try r.uint64(mask)
        guard nanos < 1_000_000_000 else { throw r.fail("timestamp nanos \(nanos) out of range", at: at) }
        return Timestamp(uncheckedSeconds: seconds, nanos: Int32(nanos))
    }

    static func readNumber(_ r: inout KeyDecoder, mask: UInt8) throws(DocError) -> Value {
        let start = r.offset
        let bits = try r.bigEndian(8, mask)
        let marker = try r.byte(mask)
        if bits == 0 {
            guard marker == exactNumber else { throw r.fail("invalid NaN encoding", at: start) }
            return .double(.nan)
        }
        let d = double(fromOrderedBits: bits)
        guard !d.isNaN, orderedBits(d) == bits else { throw r.fail("non-canonical number", at: start) }
        switch marker {
        case exactNumber:
            return .double(d)
        case integerRemainder:
            let remainder = try r.bigEndian(2, mask)
            // d must be an integer-valued double in Int64 range with a gap above it > remainder.
            guard d >= -9.223372036854775808e18, d < 9.223372036854775808e18, d == d.rounded(.towardZero),
                  remainder >= 1, Double(remainder) < d.nextUp - d
            else { throw r.fail("invalid integer remainder", at: start) }
            let (i, overflow) = Int64(d).addingReportingOverflow(Int64(remainder))
            guard !overflow else { throw r.fail("invalid integer remainder", at: start) }
            return .integer(i)
        default:
            throw r.fail("invalid number marker 0x\(hex2(marker))", at: start + 8)
        }
    }
}

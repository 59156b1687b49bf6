/// Unsigned LEB128 varints and zigzag signed integers: the integer coding of every binary
/// record (DocModel's value encoding and the client's persistence records).
package enum Varint {
    /// Why bytes are not a varint.
    package enum Failure: Error {
        case truncated, overflow, nonMinimal

        package var message: String {
            switch self {
            case .truncated: return "unexpected end of data"
            case .overflow: return "varint overflows 64 bits"
            case .nonMinimal: return "non-minimal varint"
            }
        }
    }

    /// Appends `value` as a varint (7 bits per byte, low bits first).
    package static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    /// Reads a minimal varint at `offset`, advancing it. Only the canonical (shortest) form is
    /// accepted, so every value has exactly one encoding.
    package static func read(_ bytes: [UInt8], at offset: inout Int) throws(Failure) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard offset < bytes.count else { throw .truncated }
            let b = bytes[offset]
            offset += 1
            if shift == 63, b > 1 { throw .overflow }
            result |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 {
                if b == 0, shift > 0 { throw .nonMinimal }
                return result
            }
            shift += 7
        }
    }

    /// Zigzag: small magnitudes of either sign become small unsigned numbers.
    package static func zigzag(_ v: Int64) -> UInt64 { UInt64(bitPattern: (v << 1) ^ (v >> 63)) }

    package static func unzigzag(_ u: UInt64) -> Int64 { Int64(bitPattern: u >> 1) ^ -Int64(bitPattern: u & 1) }
}

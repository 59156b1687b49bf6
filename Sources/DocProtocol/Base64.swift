/// Standard base64 (RFC 4648 §4, `=` padding, no line breaks), strict when decoding: the
/// encoding of resume and stream tokens on the wire.
enum Base64 {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = UInt8(i) }
        return table
    }()

    /// Encodes `bytes` with padding.
    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
            out.append(alphabet[Int(n & 63)])
            i += 3
        }
        switch bytes.count - i {
        case 1:
            let n = UInt32(bytes[i]) << 16
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(contentsOf: "==".utf8)
        case 2:
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
            out.append(UInt8(ascii: "="))
        default:
            break
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes padded base64; `nil` for anything else (wrong length, bytes outside the
    /// alphabet, misplaced padding, non-zero bits in the last character before padding).
    static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 4 * 3)
        var i = 0
        while i < chars.count {
            let last = i + 4 == chars.count
            let pad = last ? (chars[i + 3] == UInt8(ascii: "=") ? (chars[i + 2] == UInt8(ascii: "=") ? 2 : 1) : 0) : 0
            var n: UInt32 = 0
            for j in 0..<4 {
                let c = chars[i + j]
                if j >= 4 - pad {
                    n <<= 6
                    continue
                }
                let v = decodeTable[Int(c)]
                guard v != 0xFF else { return nil }
                n = n << 6 | UInt32(v)
            }
            out.append(UInt8(truncatingIfNeeded: n >> 16))
            if pad < 2 { out.append(UInt8(truncatingIfNeeded: n >> 8)) }
            if pad < 1 { out.append(UInt8(truncatingIfNeeded: n)) }
            // Canonical form: the bits the padding hides must be zero.
            if pad == 2, n & 0xFFFF != 0 { return nil }
            if pad == 1, n & 0xFF != 0 { return nil }
            i += 4
        }
        return out
    }
}

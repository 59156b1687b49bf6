/// Standard base64 (RFC 4648 §4: `A–Z a–z 0–9 + /`, `=` padding), strict in both directions.
/// Shared by the `$bytes` escape of the JSON encoding and the wire protocol's tokens.
package enum Base64 {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// 0xFF marks bytes outside the alphabet.
    private static let decodeTable: [UInt8] = {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { t[Int(c)] = UInt8(i) }
        return t
    }()

    /// Encodes with padding, no line breaks.
    package static func encode(_ data: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((data.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= data.count {
            let n = UInt32(data[i]) << 16 | UInt32(data[i + 1]) << 8 | UInt32(data[i + 2])
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
            out.append(alphabet[Int(n & 63)])
            i += 3
        }
        switch data.count - i {
        case 1:
            let n = UInt32(data[i]) << 16
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(contentsOf: "==".utf8)
        case 2:
            let n = UInt32(data[i]) << 16 | UInt32(data[i + 1]) << 8
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
            out.append(UInt8(ascii: "="))
        default:
            break
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes base64url (RFC 4648 §5, as in JWTs): `-` and `_` for `+` and `/`, padding
    /// optional; otherwise as strict as ``decode(_:)``. Standard base64 is accepted too.
    package static func decodeURLSafe(_ text: some StringProtocol) -> Result<[UInt8], Base64Error> {
        var standard = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        let remainder = standard.utf8.count % 4
        if remainder != 0 { standard += String(repeating: "=", count: 4 - remainder) }
        return decode(standard)
    }

    /// Decodes strictly: the length must be a multiple of 4, only alphabet characters with
    /// `=` padding at the very end (at most two), no whitespace, and the unused bits of the
    /// last group must be zero (so every byte string has exactly one accepted encoding).
    /// The error message names the problem and its character position (from 0).
    package static func decode(_ text: String) -> Result<[UInt8], Base64Error> {
        let s = Array(text.utf8)
        guard s.count % 4 == 0 else {
            return .failure(Base64Error("base64 length \(s.count) is not a multiple of 4 (padding with '=' is required)"))
        }
        var out: [UInt8] = []
        out.reserveCapacity(s.count / 4 * 3)
        var i = 0
        while i < s.count {
            var group: UInt32 = 0
            var padding = 0
            for k in 0..<4 {
                let c = s[i + k]
                if c == UInt8(ascii: "=") {
                    // '=' only in the last one or two positions of the last group.
                    guard i + 4 == s.count, k >= 2 else {
                        return .failure(Base64Error("misplaced '=' padding at position \(i + k)"))
                    }
                    padding += 1
                    group <<= 6
                    continue
                }
                guard padding == 0 else {
                    return .failure(Base64Error("misplaced '=' padding at position \(i + k - 1)"))
                }
                let v = decodeTable[Int(c)]
                guard v != 0xFF else {
                    let shown = c >= 0x21 && c < 0x7F ? "'\(Character(Unicode.Scalar(c)))'" : "byte 0x" + hex2(c)
                    return .failure(Base64Error("invalid base64 character \(shown) at position \(i + k)"))
                }
                group = group << 6 | UInt32(v)
            }
            out.append(UInt8(group >> 16 & 0xFF))
            if padding < 2 { out.append(UInt8(group >> 8 & 0xFF)) }
            if padding < 1 { out.append(UInt8(group & 0xFF)) }
            let unusedBits: UInt32 = padding == 2 ? 0xFFFF : (padding == 1 ? 0xFF : 0)
            guard group & unusedBits == 0 else {
                return .failure(Base64Error("non-zero bits in the base64 padding (not the canonical encoding)"))
            }
            i += 4
        }
        return .success(out)
    }
}

/// Why a base64 string was rejected.
package struct Base64Error: Error {
    package var message: String
    init(_ message: String) { self.message = message }
}

/// Writes JSON text as UTF-8 bytes.
///
/// Compact output has no whitespace at all; pretty output puts every array element and object
/// member on its own line, indented by two spaces, with `": "` after keys. Empty arrays and
/// objects are written `[]` and `{}` in both modes. The writer does not sort or check
/// anything: callers write members in the order they want.
struct JSONWriter {
    private(set) var bytes: [UInt8] = []
    let pretty: Bool
    private var indent = 0

    init(pretty: Bool = false) {
        self.pretty = pretty
        bytes.reserveCapacity(64)
    }

    var string: String { String(decoding: bytes, as: UTF8.self) }

    mutating func writeNull() { bytes.append(contentsOf: "null".utf8) }

    mutating func writeBool(_ b: Bool) { bytes.append(contentsOf: (b ? "true" : "false").utf8) }

    /// Writes an integer's decimal digits (no `String` in between: versions, counts and ids
    /// are most of the numbers of a frame).
    mutating func writeInteger(_ i: Int64) {
        if i < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = i.magnitude
        // At most 20 digits (UInt64.max), written from the last.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }

    /// Writes a finite double in its shortest round-trip form, always with a `.` or an
    /// exponent so that it reads back as a double: `1.0`, `-0.0`, `0.1`, `1e+16`, `5e-324`.
    mutating func writeDouble(_ d: Double) {
        precondition(d.isFinite, "JSON has no literal for \(d)")
        let text = d.description
        bytes.append(contentsOf: text.utf8)
        if !text.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }) {
            bytes.append(contentsOf: ".0".utf8)
        }
    }

    /// Writes a string literal: `"` and `\` escaped, control characters as `\b \f \n \r \t`
    /// or `\u00xx` (lowercase hex), everything else (including non-ASCII) as UTF-8 as-is.
    mutating func writeString(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        // The bytes between the ones to escape are copied in runs (usually one run), not one
        // append and capacity check per byte.
        if s.utf8.withContiguousStorageIfAvailable({ appendEscaped($0) }) == nil {
            var contiguous = s
            contiguous.makeContiguousUTF8()
            contiguous.utf8.withContiguousStorageIfAvailable { appendEscaped($0) }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>) {
        var run = 0
        for i in utf8.indices {
            let b = utf8[i]
            guard b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else { continue }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run..<i]))
            appendEscape(of: b)
            run = i + 1
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run...]))
    }

    private mutating func appendEscape(of b: UInt8) {
        switch b {
        case UInt8(ascii: "\""): bytes.append(contentsOf: [0x5C, 0x22])
        case UInt8(ascii: "\\"): bytes.append(contentsOf: [0x5C, 0x5C])
        case 0x08: bytes.append(contentsOf: [0x5C, UInt8(ascii: "b")])
        case 0x0C: bytes.append(contentsOf: [0x5C, UInt8(ascii: "f")])
        case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
        case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
        case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
        default:
            bytes.append(contentsOf: "\\u00".utf8)
            bytes.append(contentsOf: hex2(b).utf8)
        }
    }

    /// Opens an array (`[`) or an object (`{`).
    mutating func open(_ bracket: UInt8) {
        bytes.append(bracket)
        indent += 1
    }

    /// Closes the innermost array or object; `empty` says whether anything was written in it.
    mutating func close(_ bracket: UInt8, empty: Bool) {
        indent -= 1
        if pretty, !empty { newline() }
        bytes.append(bracket)
    }

    /// Starts an array element or object member: a comma unless it is the first, then (pretty)
    /// a new line.
    mutating func item(first: Bool) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        if pretty { newline() }
    }

    /// Writes an object member's key and the colon.
    mutating func key(_ k: String) {
        writeString(k)
        bytes.append(UInt8(ascii: ":"))
        if pretty { bytes.append(UInt8(ascii: " ")) }
    }

    private mutating func newline() {
        bytes.append(UInt8(ascii: "\n"))
        for _ in 0..<(2 * indent) { bytes.append(UInt8(ascii: " ")) }
    }
}

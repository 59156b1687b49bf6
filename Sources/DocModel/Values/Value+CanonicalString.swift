extension Value: CustomStringConvertible {
    /// A compact, deterministic text form: map keys sorted by UTF-8 bytes, integers and
    /// doubles distinguished (`1` vs `1.0`), strings quoted. Used for query canonical ids and
    /// messages; two values have the same canonical string exactly when they are identical
    /// (``isIdentical(to:)``).
    public var canonicalString: String {
        var out = ""
        write(to: &out)
        return out
    }

    public var description: String { canonicalString }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .boolean(let b): out += b ? "true" : "false"
        case .integer(let i): out += String(i)
        case .double(let d):
            if d.isNaN { out += "NaN" }
            else if d.isInfinite { out += d < 0 ? "-Infinity" : "Infinity" }
            else { out += "\(d)" }   // shortest round-trip form: 1.0, -0.0, 1e+16
        case .timestamp(let t): out += "time(\(t.seconds),\(t.nanos))"
        case .string(let s): out += "\"" + s.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"") + "\""
        case .bytes(let b):
            out += "bytes(" + b.map { byte in
                let h = String(byte, radix: 16)
                return h.count == 1 ? "0" + h : h
            }.joined() + ")"
        case .reference(let k): out += "ref(\(k))"
        case .attachment(let id): out += "attachment(\(id.hex))"
        case .geoPoint(let g): out += "geo(\(g.latitude),\(g.longitude))"
        case .array(let a):
            out += "["
            for (i, v) in a.enumerated() {
                if i > 0 { out += "," }
                v.write(to: &out)
            }
            out += "]"
        case .map(let m):
            out += "{"
            for (i, k) in m.keys.sorted(by: { compareUTF8($0, $1) < 0 }).enumerated() {
                if i > 0 { out += "," }
                out += "\"" + k.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"") + "\":"
                m[k]!.write(to: &out)
            }
            out += "}"
        }
    }
}

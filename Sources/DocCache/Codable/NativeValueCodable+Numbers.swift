import DocModel

// Integers of every width are stored as `.integer` (Int64). Writing a value outside Int64
// (a `UInt64` or `UInt` above `Int64.max`, an `Int128`) is an error, and so is reading a value
// that does not fit the property's width (300 into an `Int8`, -1 into a `UInt`): nothing wraps
// or truncates silently. A stored double is read into an integer only when it is a whole
// number that fits (`3.0`, as some clients write integers); `2.5` is an error.
//
// Floating-point numbers are stored as `.double`. An integer is read into a `Double` or a
// `Float` (rounded to the nearest when it has more digits than the type holds, as any
// conversion); a finite double too large for a `Float` is an error.

extension NativeValueCodable where Self: FixedWidthInteger {
    func nativeValue(at site: CodingSite) throws(DocError) -> Value {
        guard let stored = Int64(exactly: self) else {
            throw site.error("\(Self.self) value \(self) does not fit in a stored integer (Int64, \(Int64.min)…\(Int64.max))")
        }
        return .integer(stored)
    }

    static func decodeNative(_ value: Value, at site: CodingSite) throws(DocError) -> Self {
        switch value {
        case .integer(let i):
            guard let fitted = Self(exactly: i) else {
                throw site.error("\(i) does not fit in \(Self.self) (\(Self.min)…\(Self.max))")
            }
            return fitted
        case .double(let d):
            guard let fitted = Self(exactly: d) else {
                throw site.error(d.rounded() == d && d.isFinite
                    ? "\(d) does not fit in \(Self.self) (\(Self.min)…\(Self.max))"
                    : "\(d) is not a whole number, expected an integer for \(Self.self)")
            }
            return fitted
        default:
            throw mismatch(value, expected: "an integer", at: site)
        }
    }
}

extension Int: NativeValueCodable {}
extension Int8: NativeValueCodable {}
extension Int16: NativeValueCodable {}
extension Int32: NativeValueCodable {}
extension Int64: NativeValueCodable {}
extension UInt: NativeValueCodable {}
extension UInt8: NativeValueCodable {}
extension UInt16: NativeValueCodable {}
extension UInt32: NativeValueCodable {}
extension UInt64: NativeValueCodable {}
extension Int128: NativeValueCodable {}
extension UInt128: NativeValueCodable {}

extension Double: NativeValueCodable {
    func nativeValue(at site: CodingSite) throws(DocError) -> Value { .double(self) }

    static func decodeNative(_ value: Value, at site: CodingSite) throws(DocError) -> Double {
        switch value {
        case .double(let d): return d
        case .integer(let i): return Double(i)
        default: throw mismatch(value, expected: "a number", at: site)
        }
    }
}

extension Float: NativeValueCodable {
    func nativeValue(at site: CodingSite) throws(DocError) -> Value { .double(Double(self)) }

    static func decodeNative(_ value: Value, at site: CodingSite) throws(DocError) -> Float {
        switch value {
        case .double(let d):
            let f = Float(d)
            guard f.isFinite || !d.isFinite else {
                throw site.error("\(d) is too large for Float (±\(Float.greatestFiniteMagnitude))")
            }
            return f
        case .integer(let i):
            return Float(i)
        default:
            throw mismatch(value, expected: "a number", at: site)
        }
    }
}

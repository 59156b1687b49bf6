import DocModel
import Foundation

// Foundation's types, stored as the Value a Firestore user expects rather than through their
// own Codable forms (a Date as a Double, a URL as a keyed container, a Decimal as its parts):
//
// - `Date` ↔ `.timestamp`, to the nanosecond (see `Timestamp+Date.swift` for the precision).
// - `Data` ↔ `.bytes`.
// - `URL` ↔ `.string`, its absolute string; a string that is not a URL is an error when read.
// - `Decimal` ↔ `.string`, its exact decimal text (see `DecimalText`). Reading accepts a stored
//   string or integer; a double is refused, since the digits it was meant to hold are lost.

extension Date: NativeValueCodable {
    func nativeValue(at site: CodingSite) throws(DocError) -> Value {
        do {
            return .timestamp(try Timestamp(date: self))
        } catch {
            throw site.error(error.message)
        }
    }

    static func decodeNative(_ value: Value, at site: CodingSite) throws(DocError) -> Date {
        guard case .timestamp(let t) = value else { throw mismatch(value, expected: "a timestamp", at: site) }
        return t.dateValue
    }
}

extension Data: NativeValueCodable {
    func nativeValue(at site: CodingSite) throws(DocError) -> Value { .bytes([UInt8](self)) }

    static func decodeNative(_ value: Value, at site: CodingSite) throws(DocError) -> Data {
        guard case .bytes(let b) = value else { throw mismatch(value, expected: "bytes", at: site) }
        return Data(b)
    }
}

extension URL: NativeValueCodable {
    func nativeValue(at site: CodingSite) throws(DocError) -> Value { .string(absoluteString) }

    static func decodeNative(_ value: Value, at site: CodingSite) throws(DocError) -> URL {
        guard case .string(let s) = value else { throw mismatch(value, expected: "a URL string", at: site) }
        guard let url = URL(string: s) else { throw site.error("\"\(s)\" is not a URL") }
        return url
    }
}

extension Decimal: NativeValueCodable {
    func nativeValue(at site: CodingSite) throws(DocError) -> Value {
        guard let text = DecimalText.text(of: self) else { throw site.error("Decimal NaN cannot be stored: it is not a number") }
        return .string(text)
    }

    static func decodeNative(_ value: Value, at site: CodingSite) throws(DocError) -> Decimal {
        switch value {
        case .string(let s):
            guard let d = DecimalText.decimal(from: s) else {
                let shown = s.count > 60 ? String(s.prefix(60)) + "…" : s
                throw site.error("\"\(shown)\" is not a decimal number Decimal holds exactly "
                    + "(digits, an optional fraction and exponent; up to 38 significant digits)")
            }
            return d
        case .integer(let i):
            return Decimal(i)
        case .double(let d):
            throw site.error("the double \(d) cannot be read as a Decimal exactly: "
                + "store decimal amounts as Decimal (written as a string), not as Double")
        default:
            throw mismatch(value, expected: "a decimal string", at: site)
        }
    }
}

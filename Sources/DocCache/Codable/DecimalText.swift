import Foundation

/// The exact text form of `Decimal` values, as the document coders store them.
///
/// A `Decimal` is written as its plain decimal text (`"12345678901234567890.12"`, `"-0.5"`), so
/// money never passes through a binary floating-point number. Reading accepts only a complete
/// number — `-?digits[.digits][(e|E)[+|-]digits]` — and only when `Decimal` holds it exactly
/// (38 significant digits always fit, and an exponent in its range); `Decimal(string:)` alone
/// would read `"12abc"` as 12 and round a 40-digit number silently.
enum DecimalText {
    private static let posix = Locale(identifier: "en_US_POSIX")

    /// A number in a canonical shape: digits without leading or trailing zeros, and the power
    /// of ten of the last digit. Zero is `("", 0)`, whatever its sign or exponent.
    struct Canonical: Equatable {
        var negative: Bool
        var digits: [UInt8]
        var exponent: Int
    }

    /// The text stored for `value`, or nil for NaN (which has no number to store).
    static func text(of value: Decimal) -> String? {
        value.isNaN ? nil : value.description
    }

    /// The `Decimal` that `text` spells exactly; nil when `text` is not a number or `Decimal`
    /// cannot hold it without rounding.
    static func decimal(from text: String) -> Decimal? {
        guard let wanted = canonical(text),
              let value = Decimal(string: text, locale: posix), !value.isNaN,
              let got = canonical(value.description), got == wanted
        else { return nil }
        return value
    }

    /// Parses the strict grammar into its canonical shape.
    static func canonical(_ text: String) -> Canonical? {
        var bytes = Array(text.utf8)[...]
        var negative = false
        if bytes.first == UInt8(ascii: "-") {
            negative = true
            bytes = bytes.dropFirst()
        }
        var digits: [UInt8] = []
        var fractionDigits = 0
        var sawDigit = false
        while let c = bytes.first, c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") {
            digits.append(c)
            sawDigit = true
            bytes = bytes.dropFirst()
        }
        guard sawDigit else { return nil }
        if bytes.first == UInt8(ascii: ".") {
            bytes = bytes.dropFirst()
            var sawFraction = false
            while let c = bytes.first, c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") {
                digits.append(c)
                fractionDigits += 1
                sawFraction = true
                bytes = bytes.dropFirst()
            }
            guard sawFraction else { return nil }
        }
        var exponent = 0
        if let e = bytes.first, e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            var sign = 1
            if let s = bytes.first, s == UInt8(ascii: "+") || s == UInt8(ascii: "-") {
                sign = s == UInt8(ascii: "-") ? -1 : 1
                bytes = bytes.dropFirst()
            }
            var sawExponent = false
            while let c = bytes.first, c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") {
                // Far beyond any exponent Decimal holds; stop growing to stay in range.
                if exponent < 100_000 { exponent = exponent * 10 + Int(c - UInt8(ascii: "0")) }
                sawExponent = true
                bytes = bytes.dropFirst()
            }
            guard sawExponent else { return nil }
            exponent *= sign
        }
        guard bytes.isEmpty else { return nil }
        exponent -= fractionDigits
        let leading = digits.firstIndex { $0 != UInt8(ascii: "0") }
        guard let leading else { return Canonical(negative: false, digits: [], exponent: 0) }
        digits.removeFirst(leading)
        while digits.last == UInt8(ascii: "0") {
            digits.removeLast()
            exponent += 1
        }
        return Canonical(negative: negative, digits: digits, exponent: exponent)
    }
}

import DocModel
import DocTestSupport
import Foundation
@testable import DocCache

// Models of the Codable tests: an invoice (money and tax as Decimal, lines, dates, a
// reference, the id and server-timestamp wrappers) and a struct with a property of every
// supported type, and their seeded random generators.

enum InvoiceStatus: Int, Codable, CaseIterable {
    case draft = 0, sent = 1, paid = 2, cancelled = 3
}

enum Currency: String, Codable, CaseIterable, CodingKeyRepresentable {
    case eur = "EUR", usd = "USD", jpy = "JPY", chf = "CHF"
}

struct InvoiceLine: Codable, Equatable {
    var description: String
    var quantity: Int32
    var unitPrice: Decimal
    var taxRate: Decimal
    var discount: Decimal?
    var tags: [String]
}

struct Invoice: Codable, Equatable {
    @DocumentID var id: String?
    var number: String
    var status: InvoiceStatus
    var currency: Currency
    var issuedAt: Date
    var dueAt: Date?
    var customer: DocumentKey
    var lines: [InvoiceLine]
    var taxByRate: [String: Decimal]
    var totalsByCurrency: [Currency: Decimal]
    var note: String?
    var paid: Bool
    @ServerTimestamp var updatedAt: Date?
}

/// A property of every type the coders support, nested containers and optionals included.
struct EveryType: Codable, Equatable {
    struct Inner: Codable, Equatable {
        var label: String
        var weight: Double?
        var flags: [Bool]
    }

    var int: Int
    var int8: Int8
    var int16: Int16
    var int32: Int32
    var int64: Int64
    var uint: UInt
    var uint8: UInt8
    var uint16: UInt16
    var uint32: UInt32
    var uint64: UInt64
    var double: Double
    var float: Float
    var bool: Bool
    var string: String
    var date: Date
    var timestamp: Timestamp
    var data: Data
    var url: URL
    var decimal: Decimal
    var geo: GeoPoint
    var reference: DocumentKey
    var attachment: AttachmentID
    var status: InvoiceStatus
    var optionalInt: Int?
    var optionalString: String?
    var optionalInner: Inner?
    var inner: Inner
    var inners: [Inner]
    var grid: [[Int64?]]
    var byName: [String: [String: Double]]
    var optionalDates: [Date?]
    @ServerTimestamp var stamped: Timestamp?
}

/// Seeded random models; print the seed and iteration to reproduce a failure.
struct ModelGenerator {
    var rng: SplitMix64

    init(seed: UInt64) { rng = SplitMix64(seed: seed) }

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &rng) }
    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < p }
    mutating func pick<T>(_ items: [T]) -> T { items[int(0...(items.count - 1))] }

    /// An integer of `T`, often one of its extremes.
    mutating func integer<T: FixedWidthInteger>(_ type: T.Type) -> T {
        switch int(0...5) {
        case 0: return T.min
        case 1: return T.max
        case 2: return 0
        default: return T.random(in: T.min...T.max, using: &rng)
        }
    }

    mutating func string() -> String {
        let alphabet: [String] = ["a", "b", "z", "0", "9", " ", ".", "`", "é", "ß", "中", "🙂", "\u{0301}", "\n", "\"", "\\"]
        return (0..<int(0...12)).map { _ in pick(alphabet) }.joined()
    }

    /// A map key: any non-empty string (the store refuses empty names).
    mutating func fieldName() -> String { pick(["k", "é", "a b", "`"]) + string() }

    mutating func double() -> Double {
        switch int(0...7) {
        case 0: return 0
        case 1: return -0.0
        case 2: return .infinity
        case 3: return -.greatestFiniteMagnitude
        case 4: return .leastNonzeroMagnitude
        default: return Double(bitPattern: rng.next() & 0x7FEF_FFFF_FFFF_FFFF) * (chance(0.5) ? -1 : 1)
        }
    }

    /// A decimal amount of up to 38 significant digits, with up to 12 fraction digits; often
    /// a money-like value.
    mutating func decimal() -> Decimal {
        if chance(0.1) { return Decimal(string: "12345678901234567890.12")! }
        let digits = int(1...38)
        var text = String(int(1...9))
        for _ in 1..<digits { text += String(int(0...9)) }
        let fraction = min(int(0...12), digits - 1)
        if fraction > 0 { text.insert(".", at: text.index(text.endIndex, offsetBy: -fraction)) }
        return Decimal(string: (chance(0.3) ? "-" : "") + text, locale: Locale(identifier: "en_US_POSIX"))!
    }

    /// A date anywhere in the timestamp range, with sub-second digits (down to nanoseconds),
    /// at least 2^24 s (194 days) from 2001-01-01, where a Date resolves coarser than a
    /// nanosecond (closer dates are checked to the half nanosecond in `DateTimestampTests`).
    mutating func date() -> Date {
        while true {
            let seconds = Double(int(-63_113_904_000...252_423_993_598))   // 0001-01-01 … 9999-12-31
            guard abs(seconds) > 16_777_216 else { continue }
            let fraction = Double(int(0...999_999_999)) / 1e9
            return Date(timeIntervalSinceReferenceDate: seconds + fraction)
        }
    }

    mutating func timestamp() -> Timestamp {
        try! Timestamp(seconds: Int64(int(Int(Timestamp.minSeconds)...Int(Timestamp.maxSeconds))), nanos: Int32(int(0...999_999_999)))
    }

    mutating func bytes() -> Data { Data((0..<int(0...40)).map { _ in UInt8(int(0...255)) }) }

    mutating func url() -> URL {
        let base = pick(["https://example.com", "http://localhost:8080", "file:///tmp", "mailto:someone@example.com"])
        let path = (0..<int(0...3)).map { _ in pick(["a", "b%20c", "d-e", "x.pdf"]) }.joined(separator: "/")
        let query = chance(0.3) ? "?q=\(int(0...99))&r=%C3%A9" : ""
        return URL(string: path.isEmpty ? base + query : base + "/" + path + query)!
    }

    mutating func geo() -> GeoPoint {
        try! GeoPoint(latitude: Double.random(in: -90...90, using: &rng), longitude: Double.random(in: -180...180, using: &rng))
    }

    mutating func key() -> DocumentKey { try! DocumentKey("customers/c\(int(0...999))") }

    mutating func attachment() -> AttachmentID { AttachmentID(digest: (0..<32).map { _ in UInt8(int(0...255)) }) }

    mutating func inner() -> EveryType.Inner {
        EveryType.Inner(label: string(), weight: chance(0.5) ? double() : nil, flags: (0..<int(0...3)).map { _ in chance(0.5) })
    }

    mutating func line() -> InvoiceLine {
        InvoiceLine(description: string(), quantity: integer(Int32.self), unitPrice: decimal(), taxRate: decimal(),
                    discount: chance(0.5) ? decimal() : nil, tags: (0..<int(0...3)).map { _ in string() })
    }

    /// An invoice as read back: `id` nil (no document) and `updatedAt` set or nil.
    mutating func invoice() -> Invoice {
        var totals: [Currency: Decimal] = [:]
        for currency in Currency.allCases where chance(0.5) { totals[currency] = decimal() }
        var taxes: [String: Decimal] = [:]
        for _ in 0..<int(0...3) { taxes[fieldName()] = decimal() }
        return Invoice(
            id: nil, number: "INV-\(int(0...99_999))", status: pick(InvoiceStatus.allCases), currency: pick(Currency.allCases),
            issuedAt: date(), dueAt: chance(0.5) ? date() : nil, customer: key(), lines: (0..<int(0...5)).map { _ in line() },
            taxByRate: taxes, totalsByCurrency: totals, note: chance(0.5) ? string() : nil, paid: chance(0.5),
            updatedAt: chance(0.5) ? date() : nil)
    }

    mutating func everyType() -> EveryType {
        var byName: [String: [String: Double]] = [:]
        for _ in 0..<int(0...3) {
            var inner: [String: Double] = [:]
            for _ in 0..<int(0...3) { inner[fieldName()] = double() }
            byName[fieldName()] = inner
        }
        return EveryType(
            int: integer(Int.self), int8: integer(Int8.self), int16: integer(Int16.self), int32: integer(Int32.self),
            int64: integer(Int64.self), uint: UInt(int(0...Int.max)), uint8: integer(UInt8.self), uint16: integer(UInt16.self),
            uint32: integer(UInt32.self), uint64: UInt64(integer(Int64.self).magnitude & UInt64(Int64.max)),
            double: double(), float: Float(bitPattern: UInt32(truncatingIfNeeded: rng.next()) & 0x7F7F_FFFF),
            bool: chance(0.5), string: string(), date: date(), timestamp: timestamp(), data: bytes(), url: url(),
            decimal: decimal(), geo: geo(), reference: key(), attachment: attachment(), status: pick(InvoiceStatus.allCases),
            optionalInt: chance(0.5) ? integer(Int.self) : nil, optionalString: chance(0.5) ? string() : nil,
            optionalInner: chance(0.5) ? inner() : nil, inner: inner(), inners: (0..<int(0...3)).map { _ in inner() },
            grid: (0..<int(0...3)).map { _ in (0..<int(0...3)).map { _ in chance(0.3) ? nil : integer(Int64.self) } },
            byName: byName, optionalDates: (0..<int(0...3)).map { _ in chance(0.3) ? nil : date() },
            stamped: chance(0.5) ? timestamp() : nil)
    }
}

extension FieldValue {
    /// The value a reader sees before the server has answered, with pending server timestamps
    /// read as null (`ServerTimestampBehavior.none`); nil for other sentinels.
    var asReadValue: DocModel.Value? {
        switch self {
        case .value(let v): return v
        case .serverTimestampSentinel: return .null
        case .map(let m):
            var out: [String: DocModel.Value] = [:]
            for (name, field) in m {
                guard let v = field.asReadValue else { return nil }
                out[name] = v
            }
            return .map(out)
        default: return nil
        }
    }
}

extension Dictionary where Key == String, Value == FieldValue {
    /// The fields a reader sees (see ``FieldValue/asReadValue``).
    var asReadFields: [String: DocModel.Value] {
        compactMapValues(\.asReadValue)
    }
}

/// Whether `error` is a `DocError` with `code` whose location ends with `field`.
func isDocError(_ error: any Error, _ code: DocError.Code = .invalidArgument, at field: String, message: String? = nil) -> Bool {
    guard let error = error as? DocError, error.code == code, let location = error.location else { return false }
    guard location.hasSuffix(field) else { return false }
    if let message, !error.message.contains(message) { return false }
    return true
}

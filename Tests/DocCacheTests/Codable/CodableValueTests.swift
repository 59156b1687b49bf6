import DocModel
import Foundation
import Testing
@testable import DocCache
import DocTestTraits

/// What each Swift type is stored as, and the checks on the way in and out: integer widths,
/// Decimal text, Date precision, optionals (omit or null), map keys.
@Suite("Codable values", .cpuBound)
struct CodableValueTests {
    let encoder = DocumentEncoder()
    let decoder = DocumentDecoder()

    struct Scalars: Codable, Equatable {
        var i: Int8
        var u: UInt64
        var d: Double
        var f: Float
        var s: String
        var b: Bool
        var when: Date
        var at: Timestamp
        var bytes: Data
        var link: URL
        var money: Decimal
        var place: GeoPoint
        var owner: DocumentKey
        var file: AttachmentID
        var status: InvoiceStatus
        var currency: Currency
    }

    @Test func eachTypeIsStoredAsItsValue() throws {
        let file = AttachmentID(digest: [UInt8](repeating: 0xAB, count: 32))
        let at = try Timestamp(seconds: 1_714_564_800, nanos: 123_456_789)
        let model = Scalars(
            i: -8, u: 42, d: 2.5, f: 0.5, s: "ß", b: true, when: Date(timeIntervalSince1970: 1_714_564_800.25), at: at,
            bytes: Data([0, 255]), link: URL(string: "https://example.com/a?b=c")!,
            money: Decimal(string: "12345678901234567890.12")!, place: try GeoPoint(latitude: 48.85, longitude: 2.35),
            owner: try DocumentKey("customers/c1"), file: file, status: .paid, currency: .chf)
        let fields = try encoder.encode(model)
        #expect(fields == [
            "i": .value(.integer(-8)), "u": .value(.integer(42)), "d": .value(.double(2.5)), "f": .value(.double(0.5)),
            "s": "ß", "b": true, "when": .value(.timestamp(try Timestamp(seconds: 1_714_564_800, nanos: 250_000_000))),
            "at": .value(.timestamp(at)), "bytes": .value(.bytes([0, 255])), "link": "https://example.com/a?b=c",
            "money": "12345678901234567890.12", "place": .value(.geoPoint(try GeoPoint(latitude: 48.85, longitude: 2.35))),
            "owner": .value(.reference(try DocumentKey("customers/c1"))), "file": .value(.attachment(file)),
            "status": .value(.integer(2)), "currency": "CHF",
        ])
        #expect(try decoder.decode(Scalars.self, from: fields.asReadFields) == model)
        // Each value stores as a native value, not as the field's type name: identical, not just equal.
        #expect(fields["i"]?.asReadValue?.isIdentical(to: .integer(-8)) == true)
        #expect(try encoder.encodeValue(InvoiceStatus.sent) == .integer(1))
        #expect(try decoder.decodeValue(Currency.self, from: "JPY") == .jpy)
    }

    // MARK: - Integers

    struct Small: Codable { var small: Int8 }
    struct Unsigned: Codable { var count: UInt }
    struct Big: Codable { var big: UInt64 }
    struct Wide: Codable { var wide: Int64 }

    @Test func integersThatDoNotFitAreErrorsNamingTheField() throws {
        #expect { try decoder.decode(Small.self, from: ["small": 300]) } throws: {
            isDocError($0, at: "field small", message: "300 does not fit in Int8")
        }
        #expect { try decoder.decode(Small.self, from: ["small": -129]) } throws: { isDocError($0, at: "field small") }
        #expect(try decoder.decode(Small.self, from: ["small": -128]).small == -128)
        #expect { try decoder.decode(Unsigned.self, from: ["count": -1]) } throws: {
            isDocError($0, at: "field count", message: "does not fit in UInt")
        }
        #expect { try encoder.encode(Big(big: .max)) } throws: {
            isDocError($0, at: "field big", message: "18446744073709551615 does not fit in a stored integer")
        }
        #expect(try encoder.encode(Big(big: UInt64(Int64.max))) == ["big": .value(.integer(.max))])
        #expect(try decoder.decode(Big.self, from: ["big": .integer(.max)]).big == UInt64(Int64.max))
        #expect(try encoder.encode(Wide(wide: .min)) == ["wide": .value(.integer(.min))])
        #expect { try encoder.encodeValue(Int128(Int64.max) + 1) } throws: {
            ($0 as? DocError)?.message.contains("does not fit in a stored integer") == true
        }
        #expect(try decoder.decodeValue(UInt128.self, from: .integer(7)) == 7)
    }

    /// A timestamp outside 0001 … 9999 can reach a device (JSON reads any Int64 seconds; the
    /// server refuses it in new writes only): decoding it as a `Date` gives a date, never a trap.
    @Test func aTimestampOutOfRangeDecodesAsADate() throws {
        for seconds in [Int64.min, Int64.max] {
            let value = try Value(json: #"{"$timestamp":{"seconds":\#(seconds),"nanos":0}}"#)
            let date = try decoder.decodeValue(Date.self, from: value)
            #expect(seconds < 0 ? date < Date(timeIntervalSince1970: 0) : date > Date(timeIntervalSince1970: 0))
        }
    }

    @Test func wholeDoublesReadAsIntegersOthersDoNot() throws {
        #expect(try decoder.decode(Small.self, from: ["small": 3.0]).small == 3)
        #expect { try decoder.decode(Small.self, from: ["small": 2.5]) } throws: {
            isDocError($0, at: "field small", message: "not a whole number")
        }
        #expect { try decoder.decode(Wide.self, from: ["wide": 1e19]) } throws: { isDocError($0, at: "field wide", message: "does not fit") }
        #expect { try decoder.decode(Wide.self, from: ["wide": .double(.nan)]) } throws: { isDocError($0, at: "field wide") }
        #expect { try decoder.decode(Wide.self, from: ["wide": "7"]) } throws: {
            isDocError($0, at: "field wide", message: "expected an integer for Int64, found string")
        }
    }

    struct Reals: Codable, Equatable {
        var d: Double
        var f: Float
    }

    @Test func integersReadAsDoublesAndFloatsOverflowIsAnError() throws {
        #expect(try decoder.decode(Reals.self, from: ["d": 3, "f": 4]) == Reals(d: 3, f: 4))
        #expect { try decoder.decode(Reals.self, from: ["d": 1, "f": 1e300]) } throws: {
            isDocError($0, at: "field f", message: "too large for Float")
        }
        #expect(try decoder.decode(Reals.self, from: ["d": .double(.infinity), "f": .double(-.infinity)]) == Reals(d: .infinity, f: -.infinity))
    }

    // MARK: - Decimal

    struct Price: Codable, Equatable { var amount: Decimal }

    @Test(arguments: ["0", "-0.50", "12345678901234567890.12", "99999999999999999999999999999999999999", "1e-30", "2.5E+3", "0.000"])
    func decimalsAreStoredAsTheirExactText(_ text: String) throws {
        let amount = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))!
        let fields = try encoder.encode(Price(amount: amount))
        guard case .value(.string(let stored))? = fields["amount"] else {
            Issue.record("not a string: \(String(describing: fields["amount"]))")
            return
        }
        #expect(DecimalText.canonical(stored) == DecimalText.canonical(text), "\(text) stored as \(stored)")
        #expect(try decoder.decode(Price.self, from: fields.asReadFields).amount == amount)
        #expect(try decoder.decode(Price.self, from: ["amount": .string(text)]).amount == amount)
    }

    @Test(arguments: ["12abc", "", "-", "1.", ".5", "1e", "1e200", "+1", " 1", "1 ", "NaN", "0x10", "1,5",
                      "1234567890123456789012345678901234567891"])
    func decimalTextThatIsNotExactlyANumberIsRefused(_ text: String) {
        #expect { try decoder.decode(Price.self, from: ["amount": .string(text)]) } throws: {
            isDocError($0, at: "field amount", message: "is not a decimal number Decimal holds exactly")
        }
    }

    @Test func decimalsReadFromIntegersNotFromDoubles() throws {
        #expect(try decoder.decode(Price.self, from: ["amount": .integer(.min)]).amount == Decimal(Int64.min))
        #expect { try decoder.decode(Price.self, from: ["amount": 0.1]) } throws: {
            isDocError($0, at: "field amount", message: "cannot be read as a Decimal exactly")
        }
        #expect { try encoder.encode(Price(amount: .nan)) } throws: { isDocError($0, at: "field amount", message: "NaN") }
    }

    // MARK: - Dates

    struct When: Codable, Equatable { var at: Date }

    @Test func datesKeepTheirSubSecondDigits() throws {
        // Today's dates resolve about 0.1 µs: every digit a Date holds survives.
        let now = Date(timeIntervalSinceReferenceDate: 736_000_000.123_456_7)
        #expect(try decoder.decode(When.self, from: try encoder.encode(When(at: now)).asReadFields).at == now)
        // A timestamp with nanoseconds reads as the nearest Date.
        let t = try Timestamp(seconds: 1_714_564_800, nanos: 123_456_789)
        let date = try decoder.decode(When.self, from: ["at": .timestamp(t)]).at
        #expect(abs(date.timeIntervalSince1970 - 1_714_564_800.123_456_789) < 1e-6)
        #expect(try Timestamp(date: date).microseconds == t.microseconds)
    }

    @Test func datesNearTheReferenceDateRoundTripToTheHalfNanosecond() throws {
        var generator = ModelGenerator(seed: 7)
        for _ in 0..<2_000 {
            let interval = Double(generator.int(-20_000_000...20_000_000)) + Double(generator.int(0...999_999_999)) / 1e9
                + Double(generator.int(0...999)) / 1e12
            let date = Date(timeIntervalSinceReferenceDate: interval)
            let back = try decoder.decode(When.self, from: try encoder.encode(When(at: date)).asReadFields).at
            #expect(abs(back.timeIntervalSinceReferenceDate - interval) <= 0.5e-9 + interval.ulp, "\(interval)")
        }
    }

    @Test func datesOutsideTheTimestampRangeAreErrors() {
        #expect { try encoder.encode(When(at: Date(timeIntervalSince1970: 1e12))) } throws: {
            isDocError($0, at: "field at", message: "outside the timestamp range")
        }
        #expect { try encoder.encode(When(at: Date(timeIntervalSinceReferenceDate: .infinity))) } throws: {
            isDocError($0, at: "field at")
        }
        #expect { try decoder.decode(When.self, from: ["at": "2024-05-01T00:00:00Z"]) } throws: {
            isDocError($0, at: "field at", message: "expected a timestamp for Date, found string")
        }
    }

    // MARK: - URL, Data

    struct Link: Codable, Equatable { var url: URL }

    @Test func urlsAreStringsAndBadOnesAreErrors() throws {
        #expect(try decoder.decode(Link.self, from: ["url": "file:///tmp/a%20b"]).url == URL(fileURLWithPath: "/tmp/a b"))
        #expect { try decoder.decode(Link.self, from: ["url": ""]) } throws: { isDocError($0, at: "field url", message: "is not a URL") }
    }

    // MARK: - Optionals

    struct Note: Codable, Equatable {
        var title: String
        var body: String?
        var rating: Int?
        var due: Date?
    }

    @Test func nilOptionalsAreLeftOutByDefaultOrWrittenAsNull() throws {
        let note = Note(title: "t", body: nil, rating: nil, due: nil)
        #expect(try encoder.encode(note) == ["title": "t"])
        var nulls = DocumentEncoder()
        nulls.nilEncodingStrategy = .null
        #expect(try nulls.encode(note) == ["title": "t", "body": nil, "rating": nil, "due": nil])
        // Missing and null both read as nil.
        #expect(try decoder.decode(Note.self, from: ["title": "t"]) == note)
        #expect(try decoder.decode(Note.self, from: ["title": "t", "body": nil, "rating": nil, "due": nil]) == note)
        // A non-optional property: missing and null are errors.
        #expect { try decoder.decode(Note.self, from: [:]) } throws: { isDocError($0, at: "field title", message: "missing") }
        #expect { try decoder.decode(Note.self, from: ["title": nil]) } throws: {
            isDocError($0, at: "field title", message: "found null")
        }
    }

    struct Holes: Codable, Equatable { var values: [Int?] }

    @Test func nilsInsideArraysAreNulls() throws {
        let holes = Holes(values: [1, nil, 3])
        #expect(try encoder.encode(holes) == ["values": .value([1, nil, 3])])
        #expect(try decoder.decode(Holes.self, from: ["values": [1, nil, 3]]) == holes)
    }

    // MARK: - Maps

    struct ByID: Codable { var counts: [Int: String] }
    struct ByCurrency: Codable, Equatable { var totals: [Currency: Decimal] }

    @Test func mapKeysMustBeStrings() throws {
        #expect { try encoder.encode(ByID(counts: [1: "a"])) } throws: {
            isDocError($0, at: "field counts", message: "a map's keys must be strings")
        }
        #expect { try decoder.decode(ByID.self, from: ["counts": ["1": "a"]]) } throws: { isDocError($0, at: "field counts") }
        let totals = ByCurrency(totals: [.eur: 10, .usd: Decimal(string: "0.01")!])
        #expect(try encoder.encode(totals) == ["totals": .map(["EUR": "10", "USD": "0.01"])])
        #expect(try decoder.decode(ByCurrency.self, from: ["totals": ["EUR": "10", "USD": "0.01"]]) == totals)
    }

    @Test func aDocumentMustBeAMap() throws {
        #expect { try encoder.encode([1, 2]) } throws: { ($0 as? DocError)?.message.contains("a document is a map") == true }
        #expect { try encoder.encode("text") } throws: { ($0 as? DocError)?.code == .invalidArgument }
        #expect(try encoder.encode(["a": 1]) == ["a": .value(.integer(1))])
        #expect(try decoder.decode([String: Int].self, from: ["a": 1]) == ["a": 1])
    }

    @Test func enumsWithUnknownRawValuesAreErrorsNamingTheField() {
        struct Holder: Codable { var status: InvoiceStatus }
        #expect { try decoder.decode(Holder.self, from: ["status": 9]) } throws: {
            isDocError($0, at: "field status", message: "InvoiceStatus")
        }
    }

    // MARK: - Classes

    class Party: Codable {
        var name: String
        init(name: String) { self.name = name }
    }

    final class Company: Party {
        var vatID: String
        private enum CodingKeys: String, CodingKey { case vatID }

        init(name: String, vatID: String) {
            self.vatID = vatID
            super.init(name: name)
        }

        required init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            vatID = try container.decode(String.self, forKey: .vatID)
            try super.init(from: container.superDecoder())
        }

        override func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(vatID, forKey: .vatID)
            try super.encode(to: container.superEncoder())
        }
    }

    @Test func superclassesEncodeUnderSuper() throws {
        let fields = try encoder.encode(Company(name: "ACME", vatID: "CHE-1"))
        #expect(fields == ["vatID": "CHE-1", "super": .map(["name": "ACME"])])
        let company = try decoder.decode(Company.self, from: fields.asReadFields)
        #expect(company.name == "ACME" && company.vatID == "CHE-1")
        #expect { try decoder.decode(Company.self, from: ["vatID": "x", "super": ["name": 1]]) } throws: {
            isDocError($0, at: "field super.name", message: "expected a string")
        }
    }

    final class Loop: Encodable {
        var name = "loop"
        var next: Loop?
    }

    @Test func aValueThatRefersToItselfIsAnErrorNotAStackOverflow() {
        let loop = Loop()
        loop.next = loop
        #expect { try encoder.encode(loop) } throws: {
            ($0 as? DocError)?.message.contains("nests deeper than") == true
        }
        loop.next = nil
    }
}

/// A point in time with nanosecond precision, as Firestore stores it: seconds since the Unix
/// epoch and a non-negative nanosecond fraction.
///
/// The valid range is 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z.
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Whole seconds since the Unix epoch (negative before 1970); the throwing initializers keep
    /// it in ``minSeconds`` … ``maxSeconds``.
    public let seconds: Int64
    /// The fraction of the second, in nanoseconds: 0 ..< 1_000_000_000.
    public let nanos: Int32

    /// Seconds of 0001-01-01T00:00:00Z.
    public static let minSeconds: Int64 = -62_135_596_800
    /// Seconds of 9999-12-31T23:59:59Z.
    public static let maxSeconds: Int64 = 253_402_300_799

    /// Creates a timestamp, validating the range and the nanosecond fraction.
    public init(seconds: Int64, nanos: Int32 = 0) throws(DocError) {
        guard nanos >= 0, nanos < 1_000_000_000 else {
            throw .invalid("timestamp nanoseconds must be in 0..<1_000_000_000, got \(nanos)")
        }
        guard seconds >= Self.minSeconds, seconds <= Self.maxSeconds else {
            throw .invalid("timestamp seconds \(seconds) outside 0001-01-01 … 9999-12-31")
        }
        self.seconds = seconds
        self.nanos = nanos
    }

    /// Whether the timestamp is within 0001-01-01 … 9999-12-31, the range the throwing
    /// initializers keep to. Values read from JSON or storage may be outside it; document data
    /// written by users may not (``DocumentLimits``).
    public var isInValidRange: Bool { seconds >= Self.minSeconds && seconds <= Self.maxSeconds }

    init(uncheckedSeconds seconds: Int64, nanos: Int32) {
        self.seconds = seconds
        self.nanos = nanos
    }

    /// A timestamp from microseconds since the epoch (the unit of commit versions).
    public init(microseconds: Int64) {
        var s = microseconds / 1_000_000
        var us = microseconds % 1_000_000
        if us < 0 { us += 1_000_000; s -= 1 }
        self.init(uncheckedSeconds: s, nanos: Int32(us * 1000))
    }

    /// Microseconds since the epoch (sub-microsecond digits are truncated).
    public var microseconds: Int64 { seconds * 1_000_000 + Int64(nanos / 1000) }

    public static func < (a: Timestamp, b: Timestamp) -> Bool {
        (a.seconds, a.nanos) < (b.seconds, b.nanos)
    }

    /// RFC 3339 in UTC with as many fractional digits as needed (0, 3, 6 or 9):
    /// `2024-05-01T12:00:00.250Z`.
    public var description: String { rfc3339 }

    /// The same RFC 3339 text as ``description``: UTC, with 0, 3, 6 or 9 fractional digits.
    /// Never traps: a timestamp outside the valid range (read from a stored or received value)
    /// gets a year of more than four digits, or a negative one.
    public var rfc3339: String {
        // Floor division without an intermediate product: exact for any Int64 seconds.
        var (days, secOfDay) = seconds.quotientAndRemainder(dividingBy: 86_400)
        if secOfDay < 0 {
            days -= 1
            secOfDay += 86_400
        }
        let (y, m, d) = Self.civil(fromDays: days)
        let hh = secOfDay / 3600, mm = (secOfDay % 3600) / 60, ss = secOfDay % 60
        var out = pad(y, 4) + "-" + pad(m, 2) + "-" + pad(d, 2) + "T"
        out += pad(hh, 2) + ":" + pad(mm, 2) + ":" + pad(ss, 2)
        if nanos != 0 {
            var digits = pad(Int64(nanos), 9)
            while digits.count > 3, digits.hasSuffix("000") { digits.removeLast(3) }
            out += "." + digits
        }
        return out + "Z"
    }

    /// Parses RFC 3339 (`YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`), up to 9 fractional digits.
    public init(rfc3339 text: String) throws(DocError) {
        let b = Array(text.utf8)
        func fail() -> DocError { .invalid("not an RFC 3339 timestamp: \"\(text)\"") }
        func num(_ from: Int, _ count: Int) throws(DocError) -> Int64 {
            guard from + count <= b.count else { throw fail() }
            var v: Int64 = 0
            for i in from..<(from + count) {
                guard b[i] >= 48, b[i] <= 57 else { throw fail() }
                v = v * 10 + Int64(b[i] - 48)
            }
            return v
        }
        func expect(_ i: Int, _ c: UInt8) throws(DocError) {
            guard i < b.count, b[i] == c else { throw fail() }
        }
        let y = try num(0, 4); try expect(4, UInt8(ascii: "-"))
        let mo = try num(5, 2); try expect(7, UInt8(ascii: "-"))
        let d = try num(8, 2)
        guard b.count > 10, b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t") else { throw fail() }
        let h = try num(11, 2); try expect(13, UInt8(ascii: ":"))
        let mi = try num(14, 2); try expect(16, UInt8(ascii: ":"))
        let s = try num(17, 2)
        var i = 19
        var nanos: Int64 = 0
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            var digits = 0
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                guard digits < 9 else { throw fail() }
                nanos = nanos * 10 + Int64(b[i] - 48); digits += 1; i += 1
            }
            guard digits > 0 else { throw fail() }
            for _ in digits..<9 { nanos *= 10 }
        }
        var offset: Int64 = 0
        guard i < b.count else { throw fail() }
        if b[i] == UInt8(ascii: "Z") || b[i] == UInt8(ascii: "z") {
            i += 1
        } else if b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
            let sign: Int64 = b[i] == UInt8(ascii: "+") ? 1 : -1
            let oh = try num(i + 1, 2); try expect(i + 3, UInt8(ascii: ":"))
            let om = try num(i + 4, 2)
            guard oh < 24, om < 60 else { throw fail() }
            offset = sign * (oh * 3600 + om * 60)
            i += 6
        } else { throw fail() }
        guard i == b.count else { throw fail() }
        guard (1...12).contains(mo), d >= 1, d <= Self.daysIn(month: mo, year: y),
              h < 24, mi < 60, s < 60 else { throw fail() }
        let days = Self.days(fromCivil: y, mo, d)
        try self.init(seconds: days * 86_400 + h * 3600 + mi * 60 + s - offset, nanos: Int32(nanos))
    }

    // Howard Hinnant's civil-calendar algorithms (proleptic Gregorian), shared with DocRules.

    /// Days since 1970-01-01 of a civil date.
    package static func days(fromCivil y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The civil date (year, month, day) of a day number (days since 1970-01-01).
    package static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? yoe + era * 400 + 1 : yoe + era * 400, m, d)
    }

    /// The number of days of a month.
    package static func daysIn(month m: Int64, year y: Int64) -> Int64 {
        switch m {
        case 2: return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}

private func pad(_ v: Int64, _ width: Int) -> String {
    let s = String(v)
    return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
}

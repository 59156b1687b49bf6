internal import DocModel

/// Calendar arithmetic on timestamps (UTC, proleptic Gregorian calendar).
enum Time {
    static let nanosPerSecond: Int128 = 1_000_000_000
    static let nanosPerDay: Int128 = 86_400 * 1_000_000_000

    static func nanoseconds(_ t: Timestamp) -> Int128 {
        Int128(t.seconds) * nanosPerSecond + Int128(t.nanos)
    }

    /// The timestamp `ns` nanoseconds after the epoch; an error outside 0001 … 9999.
    static func timestamp(nanoseconds ns: Int128) throws(EvalError) -> Timestamp {
        var s = ns / nanosPerSecond
        var n = ns % nanosPerSecond
        if n < 0 { n += nanosPerSecond; s -= 1 }
        guard s >= Int128(Timestamp.minSeconds), s <= Int128(Timestamp.maxSeconds),
              let t = try? Timestamp(seconds: Int64(s), nanos: Int32(n)) else {
            throw EvalError("timestamp out of range (0001-01-01 … 9999-12-31)")
        }
        return t
    }

    static func add(_ t: Timestamp, _ ns: Int128) throws(EvalError) -> Timestamp {
        try timestamp(nanoseconds: nanoseconds(t) + ns)
    }

    /// Days since 1970-01-01 of a civil date.
    static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        // Count years from March so the leap day is the last day of the "year".
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let shiftedMonth = month > 2 ? month - 3 : month + 9
        let dayOfYear = (153 * shiftedMonth + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The civil date of a day number (days since 1970-01-01).
    static func civil(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    static func isLeap(_ y: Int64) -> Bool { (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 }

    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Day number and nanoseconds into that day.
    static func split(_ t: Timestamp) -> (days: Int64, nanosOfDay: Int128) {
        let ns = nanoseconds(t)
        var d = ns / nanosPerDay
        var r = ns % nanosPerDay
        if r < 0 { r += nanosPerDay; d -= 1 }
        return (Int64(d), r)
    }
}

/// Methods of `timestamp` and `duration` values.
enum TimeMethods {
    static func timestamp(_ t: Timestamp, _ name: String, _ args: [RulesValue]) throws(EvalError) -> RulesValue {
        guard args.isEmpty else {
            throw EvalError("timestamp.\(name)() takes no arguments (time zones are not supported)")
        }
        let (days, nanosOfDay) = Time.split(t)
        let (y, m, d) = Time.civil(days: days)
        switch name {
        case "date": return .timestamp(try Time.timestamp(nanoseconds: Int128(days) * Time.nanosPerDay))
        case "year": return .int(y)
        case "month": return .int(m)
        case "day": return .int(d)
        case "hours": return .int(Int64(nanosOfDay / (3_600 * Time.nanosPerSecond)))
        case "minutes": return .int(Int64(nanosOfDay / (60 * Time.nanosPerSecond) % 60))
        case "seconds": return .int(Int64(nanosOfDay / Time.nanosPerSecond % 60))
        case "nanos": return .int(Int64(t.nanos))
        case "dayOfWeek":
            // ISO 8601: Monday = 1 … Sunday = 7. 1970-01-01 was a Thursday.
            var w = (days + 3) % 7
            if w < 0 { w += 7 }
            return .int(w + 1)
        case "dayOfYear": return .int(days - Time.days(year: y, month: 1, day: 1) + 1)
        case "time": return .duration(RulesDuration(nanoseconds: nanosOfDay)!)
        case "toMillis":
            let ns = Time.nanoseconds(t)
            var ms = ns / 1_000_000
            if ns % 1_000_000 < 0 { ms -= 1 }
            return .int(Int64(ms))
        default:
            throw EvalError("timestamp has no method '\(name)'")
        }
    }

    static func duration(_ d: RulesDuration, _ name: String, _ args: [RulesValue]) throws(EvalError) -> RulesValue {
        guard args.isEmpty else { throw EvalError("duration.\(name)() takes no arguments") }
        switch name {
        case "seconds": return .int(d.seconds)
        case "nanos": return .int(d.nanos)
        default: throw EvalError("duration has no method '\(name)'")
        }
    }

    /// `duration.value(magnitude, unit)`: units `w`, `d`, `h`, `m`, `s`, `ms`, `us`, `ns`.
    static func durationValue(_ magnitude: Int64, _ unit: String) throws(EvalError) -> RulesValue {
        let scale: Int128
        switch unit {
        case "w": scale = 7 * 86_400 * Time.nanosPerSecond
        case "d": scale = 86_400 * Time.nanosPerSecond
        case "h": scale = 3_600 * Time.nanosPerSecond
        case "m": scale = 60 * Time.nanosPerSecond
        case "s": scale = Time.nanosPerSecond
        case "ms": scale = 1_000_000
        case "us": scale = 1_000
        case "ns": scale = 1
        default: throw EvalError("unknown duration unit '\(unit)' (w, d, h, m, s, ms, us, ns)")
        }
        guard let d = RulesDuration(nanoseconds: Int128(magnitude) * scale) else { throw EvalError("duration out of range") }
        return .duration(d)
    }
}

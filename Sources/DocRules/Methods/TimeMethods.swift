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
        let (y, m, d) = Timestamp.civil(fromDays: days)
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
        case "dayOfYear": return .int(days - Timestamp.days(fromCivil: y, 1, 1) + 1)
        case "time": return .duration(RulesDuration(nanoseconds: nanosOfDay)!)
        case "toMillis":
            let ns = Time.nanoseconds(t)
            var ms = ns / 1_000_000
            if ns % 1_000_000 < 0 { ms -= 1 }
            // A timestamp outside the valid range (written as data) can be beyond an int's.
            guard let millis = Int64(exactly: ms) else { throw EvalError("timestamp \(t.seconds)s is out of range for toMillis()") }
            return .int(millis)
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

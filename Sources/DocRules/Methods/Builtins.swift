internal import DocModel
#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif

/// Global functions (`get`, `exists`, `int`, …) and the namespaces `math`, `duration`,
/// `timestamp`, `latlng` and `hashing`.
enum Builtins {
    static func call(_ name: String, _ args: [RulesValue], _ ev: Evaluator) throws(EvalError) -> RulesValue {
        if ev.symbolic, args.contains(where: \.containsUnknown), name != "debug" { return .anyUnknown }
        func one() throws(EvalError) -> RulesValue {
            guard args.count == 1 else { throw EvalError("\(name)() takes 1 argument, got \(args.count)") }
            return args[0]
        }
        switch name {
        case "get", "getAfter":
            guard let doc = try ev.fetch(try one(), after: name == "getAfter") else { return .null }
            return Evaluator.resourceValue(doc, database: ev.database, time: ev.time)
        case "exists", "existsAfter":
            return .bool(try ev.fetch(try one(), after: name == "existsAfter") != nil)
        case "int": return try toInt(try one())
        case "float": return try toFloat(try one())
        case "string": return .string(try toText(try one()))
        case "bool":
            switch try one() {
            case .bool(let b): return .bool(b)
            case .string("true"): return .bool(true)
            case .string("false"): return .bool(false)
            case let v: throw EvalError("bool() cannot convert \(v)")
            }
        case "path":
            guard case .string(let s) = try one() else { throw EvalError("path() needs a string") }
            let segments = s.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            let trimmed = Array(segments.drop { $0.isEmpty }.reversed().drop { $0.isEmpty }.reversed())
            guard !trimmed.isEmpty, !trimmed.contains(where: \.isEmpty) else { throw EvalError("invalid path '\(s)'") }
            return .path(RulesPath(segments: trimmed))
        case "debug":
            return try one()
        default:
            throw EvalError("unknown function '\(name)'")
        }
    }

    static func toInt(_ v: RulesValue) throws(EvalError) -> RulesValue {
        switch v {
        case .int: return v
        case .float(let d):
            let t = d.rounded(.towardZero)
            guard t.isFinite, t >= -9.223372036854775808e18, t < 9.223372036854775808e18 else {
                throw EvalError("int() cannot convert \(d)")
            }
            return .int(Int64(t))
        case .string(let s):
            guard let i = Int64(s) else { throw EvalError("int() cannot convert '\(s)'") }
            return .int(i)
        default:
            throw EvalError("int() cannot convert a \(v.typeName)")
        }
    }

    static func toFloat(_ v: RulesValue) throws(EvalError) -> RulesValue {
        switch v {
        case .int(let i): return .float(Double(i))
        case .float: return v
        case .string(let s):
            guard let d = Double(s) else { throw EvalError("float() cannot convert '\(s)'") }
            return .float(d)
        default:
            throw EvalError("float() cannot convert a \(v.typeName)")
        }
    }

    static func toText(_ v: RulesValue) throws(EvalError) -> String {
        switch v {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .float(let d): return "\(d)"
        case .string(let s): return s
        case .path(let p): return p.description
        case .timestamp(let t): return t.rfc3339
        case .bytes(let b): return String(decoding: b, as: UTF8.self)
        default: throw EvalError("string() cannot convert a \(v.typeName)")
        }
    }

    // MARK: - Namespaces

    static func namespace(_ ns: RulesValue.Namespace, _ name: String, _ args: [RulesValue], _ ev: Evaluator) throws(EvalError) -> RulesValue {
        switch ns {
        case .math: return try math(name, args)
        case .duration:
            switch name {
            case "value":
                try Methods.arity("duration", name, args, 2)
                guard case .int(let n) = args[0], case .string(let unit) = args[1] else {
                    throw EvalError("duration.value() needs an int and a unit string")
                }
                return try TimeMethods.durationValue(n, unit)
            case "time":
                try Methods.arity("duration", name, args, 4)
                var total: Int128 = 0
                for (v, scale) in zip(args, [Int128(3_600_000_000_000), 60_000_000_000, 1_000_000_000, 1]) {
                    guard case .int(let x) = v else { throw EvalError("duration.time() needs ints") }
                    total += Int128(x) * scale
                }
                guard let d = RulesDuration(nanoseconds: total) else { throw EvalError("duration out of range") }
                return .duration(d)
            case "abs":
                try Methods.arity("duration", name, args, 1)
                guard case .duration(let d) = args[0] else { throw EvalError("duration.abs() needs a duration") }
                return .duration(RulesDuration(nanoseconds: d.nanoseconds < 0 ? -d.nanoseconds : d.nanoseconds)!)
            default: throw EvalError("duration has no function '\(name)'")
            }
        case .timestamp:
            switch name {
            case "value":
                try Methods.arity("timestamp", name, args, 1)
                guard case .int(let ms) = args[0] else { throw EvalError("timestamp.value() needs an int (milliseconds)") }
                return .timestamp(try Time.timestamp(nanoseconds: Int128(ms) * 1_000_000))
            case "date":
                try Methods.arity("timestamp", name, args, 3)
                guard case .int(let y) = args[0], case .int(let m) = args[1], case .int(let d) = args[2] else {
                    throw EvalError("timestamp.date() needs ints (year, month, day)")
                }
                guard (1...9999).contains(y), (1...12).contains(m), d >= 1, d <= Timestamp.daysIn(month: m, year: y) else {
                    throw EvalError("timestamp.date(\(y), \(m), \(d)) is not a valid date")
                }
                return .timestamp(try Time.timestamp(nanoseconds: Int128(Timestamp.days(fromCivil: y, m, d)) * Time.nanosPerDay))
            default: throw EvalError("timestamp has no function '\(name)'")
            }
        case .latlng:
            guard name == "value" else { throw EvalError("latlng has no function '\(name)'") }
            try Methods.arity("latlng", name, args, 2)
            guard let lat = args[0].doubleValue, let lng = args[1].doubleValue else {
                throw EvalError("latlng.value() needs two numbers")
            }
            do {
                return .latlng(try GeoPoint(latitude: lat, longitude: lng))
            } catch {
                throw EvalError(error.message)
            }
        case .hashing:
            throw EvalError("hashing.\(name)() is not supported")
        }
    }

    private static func math(_ name: String, _ args: [RulesValue]) throws(EvalError) -> RulesValue {
        func number(_ i: Int) throws(EvalError) -> RulesValue {
            guard args[i].isNumber else { throw EvalError("math.\(name)() needs numbers, not \(args[i].typeName)") }
            return args[i]
        }
        func toInt(_ d: Double) throws(EvalError) -> RulesValue {
            guard d.isFinite, d >= -9.223372036854775808e18, d < 9.223372036854775808e18 else {
                throw EvalError("math.\(name)() result \(d) is not a representable int")
            }
            return .int(Int64(d))
        }
        switch name {
        case "abs":
            try Methods.arity("math", name, args, 1)
            switch try number(0) {
            case .int(let i):
                guard i != .min else { throw EvalError("integer overflow in math.abs") }
                return .int(i < 0 ? -i : i)
            case let v: return .float(abs(v.doubleValue!))
            }
        case "ceil", "floor", "round":
            try Methods.arity("math", name, args, 1)
            let v = try number(0)
            if case .int = v { return v }
            let rule: FloatingPointRoundingRule = name == "ceil" ? .up : (name == "floor" ? .down : .toNearestOrAwayFromZero)
            return try toInt(v.doubleValue!.rounded(rule))
        case "isInfinite":
            try Methods.arity("math", name, args, 1)
            return .bool(try number(0).doubleValue!.isInfinite)
        case "isNaN":
            try Methods.arity("math", name, args, 1)
            return .bool(try number(0).doubleValue!.isNaN)
        case "pow":
            try Methods.arity("math", name, args, 2)
            return .float(pow(try number(0).doubleValue!, try number(1).doubleValue!))
        case "sqrt":
            try Methods.arity("math", name, args, 1)
            return .float(try number(0).doubleValue!.squareRoot())
        default:
            throw EvalError("math has no function '\(name)'")
        }
    }
}

internal import DocModel

/// The operators: arithmetic, comparison, equality, `in`, `is`, and ranges.
enum Operators {
    static func unary(_ op: UnaryOp, _ v: RulesValue) throws(EvalError) -> RulesValue {
        switch (op, v) {
        case (.not, .bool(let b)): return .bool(!b)
        case (.negate, .int(let i)):
            guard i != .min else { throw EvalError("integer overflow in negation") }
            return .int(-i)
        case (.negate, .float(let d)): return .float(-d)
        case (.negate, .duration(let d)): return .duration(RulesDuration(nanoseconds: -d.nanoseconds)!)
        case (_, .unknown), (_, .partialMap): return .anyUnknown
        default: throw EvalError("'\(op.rawValue)' cannot be applied to a \(v.typeName)")
        }
    }

    static func binary(_ op: BinaryOp, _ a: RulesValue, _ b: RulesValue) throws(EvalError) -> RulesValue {
        switch op {
        case .equal:
            guard let r = triEqual(a, b) else { return .anyUnknown }
            return .bool(r)
        case .notEqual:
            guard let r = triEqual(a, b) else { return .anyUnknown }
            return .bool(!r)
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            return try compare(op, a, b)
        case .in:
            return try contains(b, a)
        case .add: return try add(a, b)
        case .subtract: return try subtract(a, b)
        case .multiply, .divide, .modulo: return try arithmetic(op, a, b)
        }
    }

    // MARK: Equality

    /// Three-valued equality: `nil` when unknown values make the answer depend on the document.
    static func triEqual(_ a: RulesValue, _ b: RulesValue) -> Bool? {
        switch (a, b) {
        case let (.unknown(s), other), let (other, .unknown(s)):
            if other.isUnknown { return nil }
            return s.equals(other)
        case let (.partialMap(p), other), let (other, .partialMap(p)):
            switch other {
            case .map(let m):
                // Known entries that differ decide; otherwise it depends on the rest.
                for (k, v) in p.known {
                    guard let w = m[k] else { return false }
                    if triEqual(v, w) == false { return false }
                }
                return nil
            case .partialMap, .unknown: return nil
            default: return false
            }
        case let (.list(x), .list(y)):
            guard x.count == y.count else { return false }
            var unknown = false
            for (l, r) in zip(x, y) {
                switch triEqual(l, r) {
                case false?: return false
                case nil: unknown = true
                case true?: break
                }
            }
            return unknown ? nil : true
        case let (.map(x), .map(y)):
            guard x.count == y.count else { return false }
            var unknown = false
            for (k, v) in x {
                guard let w = y[k] else { return false }
                switch triEqual(v, w) {
                case false?: return false
                case nil: unknown = true
                case true?: break
                }
            }
            return unknown ? nil : true
        default:
            return RulesValue.equal(a, b)
        }
    }

    // MARK: Comparison

    static func compare(_ op: BinaryOp, _ a: RulesValue, _ b: RulesValue) throws(EvalError) -> RulesValue {
        if case .unknown(let s) = a {
            if b.isUnknown { return .anyUnknown }
            return s.compare(op, b).map(RulesValue.bool) ?? .anyUnknown
        }
        if case .unknown(let s) = b {
            if a.isUnknown { return .anyUnknown }
            return s.compare(op.flipped, a).map(RulesValue.bool) ?? .anyUnknown
        }
        if a.isUnknown || b.isUnknown { return .anyUnknown }
        guard let c = RulesValue.order(a, b) else {
            if case .float(let x) = a, x.isNaN, b.isNumber { return .bool(false) }
            if case .float(let y) = b, y.isNaN, a.isNumber { return .bool(false) }
            throw EvalError("cannot compare \(a.typeName) with \(b.typeName) using '\(op.rawValue)'")
        }
        return .bool(holds(op, c))
    }

    /// Whether `op` holds for an ordering result `c` (-1, 0, 1).
    static func holds(_ op: BinaryOp, _ c: Int) -> Bool {
        switch op {
        case .less: return c < 0
        case .lessOrEqual: return c <= 0
        case .greater: return c > 0
        case .greaterOrEqual: return c >= 0
        case .equal: return c == 0
        case .notEqual: return c != 0
        default: return false
        }
    }

    // MARK: in

    /// `element in container`.
    static func contains(_ container: RulesValue, _ element: RulesValue) throws(EvalError) -> RulesValue {
        switch container {
        case .list(let l):
            var unknown = false
            for x in l {
                switch triEqual(x, element) {
                case true?: return .bool(true)
                case nil: unknown = true
                case false?: break
                }
            }
            return unknown ? .anyUnknown : .bool(false)
        case .set(let s):
            if element.isUnknown { return .anyUnknown }
            return .bool(s.contains(element))
        case .map(let m):
            guard case .string(let k) = element else {
                if element.isUnknown { return .anyUnknown }
                throw EvalError("'in' on a map needs a string key, not \(element.typeName)")
            }
            return .bool(m[k] != nil)
        case .partialMap(let p):
            guard case .string(let k) = element else { return .anyUnknown }
            return p.known[k] != nil ? .bool(true) : .anyUnknown
        case .unknown(let s):
            if !element.isUnknown, s.arrayContains.contains(where: { triEqual($0, element) == true }) { return .bool(true) }
            return .anyUnknown
        default:
            throw EvalError("'in' needs a list, set or map on the right, not \(container.typeName)")
        }
    }

    // MARK: is

    static func isType(_ v: RulesValue, _ t: RulesType) -> RulesValue {
        switch v {
        case .unknown(let s):
            return s.isType(t).map(RulesValue.bool) ?? .anyUnknown
        case .partialMap:
            return .bool(t == .map)
        default:
            break
        }
        let r: Bool
        switch t {
        case .bool: if case .bool = v { r = true } else { r = false }
        case .bytes: if case .bytes = v { r = true } else { r = false }
        case .duration: if case .duration = v { r = true } else { r = false }
        case .float: if case .float = v { r = true } else { r = false }
        case .int: if case .int = v { r = true } else { r = false }
        case .latlng: if case .latlng = v { r = true } else { r = false }
        case .list: if case .list = v { r = true } else { r = false }
        case .map: if case .map = v { r = true } else { r = false }
        case .number: r = v.isNumber
        case .path: if case .path = v { r = true } else { r = false }
        case .set: if case .set = v { r = true } else { r = false }
        case .string: if case .string = v { r = true } else { r = false }
        case .timestamp: if case .timestamp = v { r = true } else { r = false }
        case .mapDiff: if case .mapDiff = v { r = true } else { r = false }
        }
        return .bool(r)
    }

    // MARK: Arithmetic

    static func add(_ a: RulesValue, _ b: RulesValue) throws(EvalError) -> RulesValue {
        switch (a, b) {
        case let (.int(x), .int(y)):
            let (r, o) = x.addingReportingOverflow(y)
            if o { throw EvalError("integer overflow in \(x) + \(y)") }
            return .int(r)
        case let (.float(x), .float(y)): return .float(x + y)
        case let (.int(x), .float(y)): return .float(Double(x) + y)
        case let (.float(x), .int(y)): return .float(x + Double(y))
        case let (.string(x), .string(y)): return .string(x + y)
        case let (.list(x), .list(y)): return .list(x + y)
        case let (.bytes(x), .bytes(y)): return .bytes(x + y)
        case let (.timestamp(t), .duration(d)), let (.duration(d), .timestamp(t)):
            return .timestamp(try Time.add(t, d.nanoseconds))
        case let (.duration(x), .duration(y)):
            guard let d = RulesDuration(nanoseconds: x.nanoseconds + y.nanoseconds) else { throw EvalError("duration out of range") }
            return .duration(d)
        default:
            if a.isUnknown || b.isUnknown { return .anyUnknown }
            throw EvalError("'+' cannot add \(a.typeName) and \(b.typeName)")
        }
    }

    static func subtract(_ a: RulesValue, _ b: RulesValue) throws(EvalError) -> RulesValue {
        switch (a, b) {
        case let (.int(x), .int(y)):
            let (r, o) = x.subtractingReportingOverflow(y)
            if o { throw EvalError("integer overflow in \(x) - \(y)") }
            return .int(r)
        case let (.float(x), .float(y)): return .float(x - y)
        case let (.int(x), .float(y)): return .float(Double(x) - y)
        case let (.float(x), .int(y)): return .float(x - Double(y))
        case let (.timestamp(t), .duration(d)):
            return .timestamp(try Time.add(t, -d.nanoseconds))
        case let (.timestamp(x), .timestamp(y)):
            guard let d = RulesDuration(nanoseconds: Time.nanoseconds(x) - Time.nanoseconds(y)) else {
                throw EvalError("duration out of range")
            }
            return .duration(d)
        case let (.duration(x), .duration(y)):
            guard let d = RulesDuration(nanoseconds: x.nanoseconds - y.nanoseconds) else { throw EvalError("duration out of range") }
            return .duration(d)
        default:
            if a.isUnknown || b.isUnknown { return .anyUnknown }
            throw EvalError("'-' cannot subtract \(b.typeName) from \(a.typeName)")
        }
    }

    static func arithmetic(_ op: BinaryOp, _ a: RulesValue, _ b: RulesValue) throws(EvalError) -> RulesValue {
        switch (a, b) {
        case let (.int(x), .int(y)):
            switch op {
            case .multiply:
                let (r, o) = x.multipliedReportingOverflow(by: y)
                if o { throw EvalError("integer overflow in \(x) * \(y)") }
                return .int(r)
            case .divide:
                guard y != 0 else { throw EvalError("integer division by zero") }
                let (r, o) = x.dividedReportingOverflow(by: y)
                if o { throw EvalError("integer overflow in \(x) / \(y)") }
                return .int(r)
            default:
                guard y != 0 else { throw EvalError("integer modulo by zero") }
                let (r, o) = x.remainderReportingOverflow(dividingBy: y)
                if o { throw EvalError("integer overflow in \(x) % \(y)") }
                return .int(r)
            }
        case (.int, .float), (.float, .int), (.float, .float):
            let x = a.doubleValue!, y = b.doubleValue!
            switch op {
            case .multiply: return .float(x * y)
            case .divide: return .float(x / y)
            default: return .float(x.truncatingRemainder(dividingBy: y))
            }
        default:
            if a.isUnknown || b.isUnknown { return .anyUnknown }
            throw EvalError("'\(op.rawValue)' cannot be applied to \(a.typeName) and \(b.typeName)")
        }
    }

    // MARK: Ranges

    /// `list[i:j]`, `string[i:j]` (Unicode scalars): `i` defaults to 0 and `j` to the size;
    /// `0 <= i <= j <= size` or it is an error.
    static func slice(_ base: RulesValue, _ lower: RulesValue?, _ upper: RulesValue?) throws(EvalError) -> RulesValue {
        if base.isUnknown || lower?.isUnknown == true || upper?.isUnknown == true { return .anyUnknown }
        func bound(_ v: RulesValue?, default d: Int) throws(EvalError) -> Int {
            guard let v else { return d }
            guard case .int(let i) = v else { throw EvalError("range bounds must be int, not \(v.typeName)") }
            return i > Int64(Int.max / 2) ? Int.max / 2 : (i < Int64(Int.min / 2) ? Int.min / 2 : Int(i))
        }
        func check(_ i: Int, _ j: Int, _ count: Int) throws(EvalError) {
            guard i >= 0, j <= count, i <= j else { throw EvalError("range [\(i):\(j)] out of bounds (size \(count))") }
        }
        switch base {
        case .list(let l):
            let i = try bound(lower, default: 0), j = try bound(upper, default: l.count)
            try check(i, j, l.count)
            return .list(Array(l[i..<j]))
        case .string(let s):
            let scalars = Array(s.unicodeScalars)
            let i = try bound(lower, default: 0), j = try bound(upper, default: scalars.count)
            try check(i, j, scalars.count)
            var out = String.UnicodeScalarView()
            out.append(contentsOf: scalars[i..<j])
            return .string(String(out))
        case .path(let p):
            let i = try bound(lower, default: 0), j = try bound(upper, default: p.segments.count)
            try check(i, j, p.segments.count)
            return .path(RulesPath(segments: Array(p.segments[i..<j])))
        default:
            throw EvalError("a range needs a list or string, not \(base.typeName)")
        }
    }
}

extension BinaryOp {
    /// The operator with its operands swapped (`a < b` is `b > a`).
    var flipped: BinaryOp {
        switch self {
        case .less: return .greater
        case .lessOrEqual: return .greaterOrEqual
        case .greater: return .less
        case .greaterOrEqual: return .lessOrEqual
        default: return self
        }
    }
}

extension RulesValue {
    var isNumber: Bool {
        switch self {
        case .int, .float: return true
        default: return false
        }
    }

    var doubleValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .float(let d): return d
        default: return nil
        }
    }

    /// Whether an unknown value occurs anywhere inside (lists and maps are searched).
    var containsUnknown: Bool {
        switch self {
        case .unknown, .partialMap: return true
        case .list(let l): return l.contains { $0.containsUnknown }
        case .map(let m): return m.values.contains { $0.containsUnknown }
        default: return false
        }
    }
}

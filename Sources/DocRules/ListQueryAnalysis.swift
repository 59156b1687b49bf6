internal import DocModel

// Rules are not filters: a `list` request is allowed only if the rules allow it for *every*
// document the query could return. The rules are evaluated once, symbolically, for "any
// document the query can return":
//
// - `resource.data` is a partial map. A field the query pins with `==` has that value. A
//   field with `<`, `<=`, `>`, `>=`, `!=`, `not-in` or `array-contains` filters is unknown
//   but constrained (a ``Symbol``): a comparison the constraints imply is decided (query
//   `age > 18` makes `resource.data.age >= 18` true and `resource.data.age < 10` false).
//   Every other field is unknown.
// - `in` and `array-contains-any` filters are split: the rules are evaluated once per
//   listed value (for every combination, at most ``ListQueryPlan/maxCombinations``), and
//   all must allow.
// - The document id is unknown, unless the query filters on `__name__` with `==` or `in`;
//   a literal path segment never matches it, a `{wildcard}` binds it as unknown.
// - Evaluation is three-valued: an unknown operand makes an operator unknown, except where
//   the other operand decides (`unknown || true` is `true`, `unknown && false` is `false`).
//   A rule allows the list only if it evaluates to `true`; unknown denies.
//
// This is sound (it never allows a list some returned document would be denied for) and
// decides the common patterns (`resource.data.owner == request.auth.uid` with a matching
// `where("owner", "==", uid)`, `request.query.limit <= 50`, `resource.data.public == true`
// with `where("public", "==", true)`), but is weaker than Firestore where rules need
// reasoning the constraints do not express directly (arithmetic on unknowns, `keys()` or
// `size()` of the unknown document, …): those deny.

/// What a query says about a field of every document it returns.
struct Symbol: Sendable {
    struct Bound: Sendable {
        var op: BinaryOp
        var value: RulesValue
    }

    /// `field op value` holds (inequality filters).
    var bounds: [Bound] = []
    /// `field != value` holds for each (`!=`, `not-in`).
    var excluded: [RulesValue] = []
    /// The field is a list containing each (`array-contains`).
    var arrayContains: [RulesValue] = []

    var isEmpty: Bool { bounds.isEmpty && excluded.isEmpty && arrayContains.isEmpty }

    /// `self == other`, when the constraints decide it.
    func equals(_ other: RulesValue) -> Bool? {
        if excluded.contains(where: { RulesValue.equal($0, other) }) { return false }
        for b in bounds {
            guard let c = RulesValue.order(other, b.value), Operators.holds(b.op, c) else { return false }
        }
        if !arrayContains.isEmpty {
            guard case .list(let l) = other else { return false }
            for x in arrayContains where !l.contains(where: { RulesValue.equal($0, x) }) { return false }
        }
        return nil
    }

    /// `self op c` for an ordering operator, when the bounds decide it.
    func compare(_ op: BinaryOp, _ c: RulesValue) -> Bool? {
        for b in bounds {
            if Self.implies(b, op, c) { return true }
            if Self.implies(b, op.negated, c) { return false }
        }
        return nil
    }

    /// Whether `x b.op b.value` implies `x op c`.
    private static func implies(_ b: Bound, _ op: BinaryOp, _ c: RulesValue) -> Bool {
        guard let k = RulesValue.order(b.value, c) else { return false }
        switch (op, b.op) {
        case (.greater, .greater): return k >= 0
        case (.greater, .greaterOrEqual): return k > 0
        case (.greaterOrEqual, .greater), (.greaterOrEqual, .greaterOrEqual): return k >= 0
        case (.less, .less): return k <= 0
        case (.less, .lessOrEqual): return k < 0
        case (.lessOrEqual, .less), (.lessOrEqual, .lessOrEqual): return k <= 0
        default: return false
        }
    }

    /// `self is t`, when the constraints decide it. Inequality filters only match values of
    /// the operand's type; `array-contains` only matches lists.
    func isType(_ t: RulesType) -> Bool? {
        if !arrayContains.isEmpty { return t == .list }
        guard let b = bounds.first else { return nil }
        switch b.value {
        case .int, .float:
            if t == .number { return true }
            return t == .int || t == .float ? nil : false
        case .string: return t == .string
        case .timestamp: return t == .timestamp
        case .bytes: return t == .bytes
        default: return nil
        }
    }
}

extension BinaryOp {
    /// The ordering operator that holds exactly when this one does not.
    var negated: BinaryOp {
        switch self {
        case .less: return .greaterOrEqual
        case .lessOrEqual: return .greater
        case .greater: return .lessOrEqual
        case .greaterOrEqual: return .less
        case .equal: return .notEqual
        case .notEqual: return .equal
        default: return self
        }
    }
}

/// A map of which only some entries are known; every other key may or may not be present.
struct PartialMap: Sendable {
    var known: [String: RulesValue]
}

/// Methods whose result is still known when some inputs are unknown.
enum SymbolicMethods {
    static func call(_ receiver: RulesValue, _ name: String, _ args: [RulesValue], _ ev: Evaluator) throws(EvalError) -> RulesValue? {
        switch receiver {
        case .partialMap(let p):
            guard name == "get", args.count == 2 else { return nil }
            switch args[0] {
            case .string(let k):
                return p.known[k]   // absent: may or may not exist in a document
            case .list(let keys) where !keys.isEmpty && !keys.contains(where: \.isUnknown):
                var current: RulesValue = receiver
                for k in keys {
                    guard case .string(let s) = k else { return nil }
                    switch current {
                    case .partialMap(let inner): guard let v = inner.known[s] else { return nil }; current = v
                    case .map(let inner): current = inner[s] ?? args[1]
                    default: return nil
                    }
                }
                return current
            default:
                return nil
            }
        case .unknown(let s):
            guard !s.arrayContains.isEmpty, args.count == 1, !args[0].containsUnknown else { return nil }
            guard let wanted = try? ListMethods.elements(args[0], name) else { return nil }
            let has = { (x: RulesValue) in s.arrayContains.contains { RulesValue.equal($0, x) } }
            switch name {
            case "hasAny": return wanted.contains(where: has) ? .bool(true) : nil
            case "hasAll": return wanted.allSatisfy(has) ? .bool(true) : nil
            default: return nil
            }
        default:
            return nil
        }
    }
}

/// The cases a `list` request is decided for: one per combination of `in` /
/// `array-contains-any` values.
struct ListQueryPlan {
    /// A bound on combinations (Firestore allows at most 30 disjunctions per query).
    static let maxCombinations = 100

    struct Case {
        /// The document id, when the query pins it (`__name__ ==` / `in`).
        var documentID: String?
        /// `resource.data`.
        var data: RulesValue
    }

    enum Failure: Error {
        case tooManyCombinations(Int)
        case invalid(String)
    }

    /// Builds the cases of a query on the collection `collection`: every disjunct of its
    /// filters, times every combination of `in` / `array-contains-any` values.
    static func cases(for query: RulesQuery, collection: ResourcePath, database: String, time: Timestamp) throws(Failure) -> [Case] {
        var out: [Case] = []
        for conjunction in try disjunctiveNormalForm(query.filters) {
            out += try cases(for: conjunction, collectionGroup: query.collectionGroup, collection: collection,
                             database: database, time: time)
            if out.count > maxCombinations { throw .tooManyCombinations(out.count) }
        }
        return out
    }

    /// The filters as an `or` of `and`s of field filters.
    static func disjunctiveNormalForm(_ filters: [Filter]) throws(Failure) -> [[FieldFilter]] {
        func dnf(_ f: Filter) throws(Failure) -> [[FieldFilter]] {
            switch f {
            case .field(let x): return [[x]]
            case .composite(let c):
                if c.isDisjunction {
                    var out: [[FieldFilter]] = []
                    for g in c.filters { out += try dnf(g) }
                    if out.count > maxCombinations { throw .tooManyCombinations(out.count) }
                    return out
                }
                return try product(c.filters)
            }
        }
        func product(_ fs: [Filter]) throws(Failure) -> [[FieldFilter]] {
            var acc: [[FieldFilter]] = [[]]
            for g in fs {
                let parts = try dnf(g)
                acc = acc.flatMap { prefix in parts.map { prefix + $0 } }
                if acc.count > maxCombinations { throw .tooManyCombinations(acc.count) }
            }
            return acc
        }
        return try product(filters)
    }

    private static func cases(for filters: [FieldFilter], collectionGroup: Bool, collection: ResourcePath,
                              database: String, time: Timestamp) throws(Failure) -> [Case] {
        // Each dimension is a list of alternatives; an alternative sets one field.
        typealias Alternative = (field: FieldPath, value: FieldState)
        var fixed: [(FieldPath, FieldState)] = []
        var dimensions: [[Alternative]] = []
        var idDimension: [String?] = [nil]
        func rv(_ v: Value) -> RulesValue { RulesValue(v, database: database, requestTime: time) }

        for f in filters {
            if f.field.isDocumentID {
                guard !collectionGroup else { continue }
                func id(_ v: Value) -> String? {
                    guard case .reference(let k) = v, k.collectionPath == collection else { return nil }
                    return k.documentID
                }
                switch f.op {
                case .equal:
                    guard let i = id(f.value) else { throw .invalid("__name__ filter must name a document in \(collection)") }
                    idDimension = [i]
                case .in:
                    guard case .array(let vs) = f.value else { throw .invalid("'in' needs a list") }
                    let ids = vs.compactMap(id)
                    guard ids.count == vs.count, !ids.isEmpty else { throw .invalid("__name__ filter must name documents in \(collection)") }
                    idDimension = ids
                default:
                    continue   // the id stays unknown
                }
                continue
            }
            switch f.op {
            case .equal:
                fixed.append((f.field, .value(rv(f.value))))
            case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual:
                let op: BinaryOp = [.lessThan: .less, .lessThanOrEqual: .lessOrEqual, .greaterThan: .greater,
                                    .greaterThanOrEqual: .greaterOrEqual][f.op]!
                fixed.append((f.field, .symbol(Symbol(bounds: [Symbol.Bound(op: op, value: rv(f.value))]))))
            case .notEqual:
                fixed.append((f.field, .symbol(Symbol(excluded: [rv(f.value)]))))
            case .notIn:
                guard case .array(let vs) = f.value else { throw .invalid("'not-in' needs a list") }
                fixed.append((f.field, .symbol(Symbol(excluded: vs.map(rv)))))
            case .arrayContains:
                fixed.append((f.field, .symbol(Symbol(arrayContains: [rv(f.value)]))))
            case .in:
                guard case .array(let vs) = f.value, !vs.isEmpty else { throw .invalid("'in' needs a non-empty list") }
                dimensions.append(vs.map { (f.field, FieldState.value(rv($0))) })
            case .arrayContainsAny:
                guard case .array(let vs) = f.value, !vs.isEmpty else { throw .invalid("'array-contains-any' needs a non-empty list") }
                dimensions.append(vs.map { (f.field, FieldState.symbol(Symbol(arrayContains: [rv($0)]))) })
            }
        }

        var total = idDimension.count
        for d in dimensions {
            total *= d.count
            if total > maxCombinations { throw .tooManyCombinations(total) }
        }

        var combos: [[Alternative]] = [[]]
        for d in dimensions {
            combos = combos.flatMap { prefix in d.map { prefix + [$0] } }
        }
        var out: [Case] = []
        for id in idDimension {
            for combo in combos {
                var fields: [FieldPath: FieldState] = [:]
                for (path, state) in fixed + combo {
                    fields[path] = fields[path].map { $0.merged(with: state) } ?? state
                }
                out.append(Case(documentID: id, data: partialMap(fields)))
            }
        }
        return out
    }

    /// What is known of one field.
    enum FieldState {
        case value(RulesValue)
        case symbol(Symbol)

        func merged(with other: FieldState) -> FieldState {
            switch (self, other) {
            case (.value, _): return self
            case (_, .value): return other
            case let (.symbol(a), .symbol(b)):
                return .symbol(Symbol(bounds: a.bounds + b.bounds, excluded: a.excluded + b.excluded,
                                      arrayContains: a.arrayContains + b.arrayContains))
            }
        }

        var rulesValue: RulesValue {
            switch self {
            case .value(let v): return v
            case .symbol(let s): return .unknown(s)
            }
        }
    }

    /// Nested partial maps for the constrained field paths.
    private static func partialMap(_ fields: [FieldPath: FieldState]) -> RulesValue {
        var top: [String: RulesValue] = [:]
        var nested: [String: [FieldPath: FieldState]] = [:]
        for (path, state) in fields {
            if path.count == 1 {
                top[path.firstSegment] = state.rulesValue
            } else {
                let rest = FieldPath(unchecked: Array(path.segments.dropFirst()))
                nested[path.firstSegment, default: [:]][rest] = state
            }
        }
        for (k, inner) in nested where top[k] == nil {
            top[k] = partialMap(inner)
        }
        return .partialMap(PartialMap(known: top))
    }
}

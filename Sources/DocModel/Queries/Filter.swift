/// A query filter: a single ``FieldFilter`` or a ``CompositeFilter`` of filters.
///
/// Build them with ``where(_:_:_:)``, ``and(_:)`` and ``or(_:)``:
///
/// ```swift
/// let f: Filter = .or([.where(age, .greaterThan, 65), .and([.where(city, .equal, "Oslo"), .where(vip, .equal, true)])])
/// ```
public enum Filter: Sendable, Hashable, CustomStringConvertible {
    /// A filter on one field.
    case field(FieldFilter)
    /// An `and` / `or` of filters.
    case composite(CompositeFilter)

    /// A field filter `field op value`.
    public static func `where`(_ field: FieldPath, _ op: FieldFilter.Operator, _ value: Value) -> Filter {
        .field(FieldFilter(field, op, value))
    }

    /// A conjunction: every filter must match.
    public static func and(_ filters: [Filter]) -> Filter { .composite(CompositeFilter(.and, filters)) }

    /// A disjunction: at least one filter must match.
    public static func or(_ filters: [Filter]) -> Filter { .composite(CompositeFilter(.or, filters)) }

    /// Whether `document` satisfies the filter.
    public func matches(_ document: Document) -> Bool {
        switch self {
        case .field(let f): return f.matches(document)
        case .composite(let c): return c.matches(document)
        }
    }

    /// Every field filter inside, depth first, in order.
    public var flattenedFilters: [FieldFilter] {
        switch self {
        case .field(let f): return [f]
        case .composite(let c): return c.flattenedFilters
        }
    }

    /// The field filter, when this is one.
    public var fieldFilter: FieldFilter? { if case .field(let f) = self { f } else { nil } }

    /// The composite filter, when this is one.
    public var compositeFilter: CompositeFilter? { if case .composite(let c) = self { c } else { nil } }

    /// A deterministic text form (see ``FieldFilter/canonicalID`` and
    /// ``CompositeFilter/canonicalID``).
    public var canonicalID: String {
        switch self {
        case .field(let f): return f.canonicalID
        case .composite(let c): return c.canonicalID
        }
    }

    public var description: String { canonicalID }

    /// Filters are equal when their canonical ids are.
    public static func == (a: Filter, b: Filter) -> Bool { a.canonicalID == b.canonicalID }

    public func hash(into hasher: inout Hasher) { hasher.combine(canonicalID) }

    /// The number of terms of the filter in disjunctive normal form, counting each value of an
    /// `in` or `array-contains-any` list as one term (Firestore's disjunction limit). Saturates
    /// at `Int.max / 2`.
    var disjunctionCount: Int {
        switch self {
        case .field(let f):
            if f.op == .in || f.op == .arrayContainsAny, case .array(let values) = f.value {
                return max(values.count, 1)
            }
            return 1
        case .composite(let c):
            switch c.op {
            case .or:
                return c.filters.reduce(0) { Filter.saturatingAdd($0, $1.disjunctionCount) }
            case .and:
                return Filter.conjunctionCount(c.filters)
            }
        }
    }

    /// The DNF term count of an `and` of `filters`.
    static func conjunctionCount(_ filters: [Filter]) -> Int {
        filters.reduce(1) { saturatingMultiply($0, $1.disjunctionCount) }
    }

    static func saturatingAdd(_ a: Int, _ b: Int) -> Int {
        let (r, o) = a.addingReportingOverflow(b)
        return o ? Int.max / 2 : min(r, Int.max / 2)
    }

    static func saturatingMultiply(_ a: Int, _ b: Int) -> Int {
        let (r, o) = a.multipliedReportingOverflow(by: b)
        return o ? Int.max / 2 : min(r, Int.max / 2)
    }
}

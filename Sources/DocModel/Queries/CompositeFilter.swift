/// A conjunction (`and`) or disjunction (`or`) of filters, which may nest.
///
/// An `and` of no filters matches every document and an `or` of no filters matches none; a
/// query drops empty composites and unwraps composites of a single filter when they are added
/// (`Query.filter(_:)`), as the Firestore SDKs do.
public struct CompositeFilter: Sendable, Hashable, CustomStringConvertible {
    /// How the member filters combine.
    public enum Operator: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// Every member filter must match.
        case and
        /// At least one member filter must match.
        case or

        public var description: String { rawValue }
    }

    /// How ``filters`` combine.
    public let op: Operator
    /// The member filters, in the order given.
    public let filters: [Filter]

    /// Creates a composite filter. No validation happens here; `Query.filter(_:)` validates.
    public init(_ op: Operator, _ filters: [Filter]) {
        self.op = op
        self.filters = filters
    }

    /// Whether this is an `and`.
    public var isConjunction: Bool { op == .and }
    /// Whether this is an `or`.
    public var isDisjunction: Bool { op == .or }
    /// Whether every member is a field filter (no nesting).
    public var isFlat: Bool { filters.allSatisfy { if case .field = $0 { true } else { false } } }
    /// Whether this is an `and` of field filters only.
    public var isFlatConjunction: Bool { isConjunction && isFlat }

    /// Whether `document` satisfies the filter.
    public func matches(_ document: Document) -> Bool {
        switch op {
        case .and: return filters.allSatisfy { $0.matches(document) }
        case .or: return filters.contains { $0.matches(document) }
        }
    }

    /// Every field filter inside, depth first, in order.
    public var flattenedFilters: [FieldFilter] { filters.flatMap(\.flattenedFilters) }

    /// A deterministic text form, e.g. `or(a == 1,b > 2)`.
    ///
    /// Both operators are commutative, associative and idempotent, so the id is normalized:
    /// nested composites of the same operator are merged into their parent, members are sorted
    /// by their ids and written once, and a composite with a single distinct member is written
    /// as that member. `and(a == 1, and(b == 2))` and `and(b == 2, a == 1)` have one id.
    public var canonicalID: String {
        let members = Self.canonicalMembers(of: filters, under: op)
        if members.count == 1 { return members[0] }
        return "\(op.rawValue)(" + members.joined(separator: ",") + ")"
    }

    /// The sorted, de-duplicated ids of the members of an `op` composite made of `filters`,
    /// with same-operator composites merged in.
    static func canonicalMembers(of filters: [Filter], under op: Operator) -> [String] {
        var ids: [String] = []
        func collect(_ filters: [Filter]) {
            for filter in filters {
                if case .composite(let c) = filter, c.op == op {
                    collect(c.filters)
                } else {
                    ids.append(filter.canonicalID)
                }
            }
        }
        collect(filters)
        ids.sort { compareUTF8($0, $1) < 0 }
        var unique: [String] = []
        for id in ids where unique.last.map({ !equalUTF8($0, id) }) ?? true {
            unique.append(id)
        }
        return unique
    }

    public var description: String { canonicalID }

    /// Composite filters are equal when their canonical ids are.
    public static func == (a: CompositeFilter, b: CompositeFilter) -> Bool { a.canonicalID == b.canonicalID }

    public func hash(into hasher: inout Hasher) { hasher.combine(canonicalID) }
}

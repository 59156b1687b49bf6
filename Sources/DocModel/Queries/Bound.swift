/// A query cursor: a position in the query's order where results start or end.
///
/// The ``position`` holds values for the first sort keys of the query's normalized order
/// (``Query/normalizedOrderBys``), in order; a key value for a `__name__` sort key is a
/// ``Value/reference(_:)``. A start bound is ``inclusive`` for `startAt` and not for
/// `startAfter`; an end bound is inclusive for `endAt` and not for `endBefore`.
public struct Bound: Sendable, Hashable, CustomStringConvertible {
    /// Values for the leading sort keys.
    public let position: [Value]
    /// Whether a document exactly at the position is included.
    public let inclusive: Bool

    /// Creates a cursor. No validation happens here; the query builders validate.
    public init(position: [Value], inclusive: Bool) {
        self.position = position
        self.inclusive = inclusive
    }

    /// Compares the position with `document` under `orderBys`: negative when the position sorts
    /// before the document, 0 when the document is at the position, positive when after; `nil`
    /// when the document lacks one of the compared fields. Only the first `position.count` sort
    /// keys are compared.
    public func compare(to document: Document, orderBys: [OrderBy]) -> Int? {
        for (value, orderBy) in zip(position, orderBys) {
            guard let docValue = document.value(at: orderBy.field) else { return nil }
            let c = orderBy.direction.apply(Value.compare(value, docValue))
            if c != 0 { return c }
        }
        return 0
    }

    /// Whether this bound, used as a start, lets `document` through: the position sorts before
    /// the document, or is at it and the bound is inclusive.
    public func sortsBeforeDocument(_ document: Document, orderBys: [OrderBy]) -> Bool {
        guard let c = compare(to: document, orderBys: orderBys) else { return false }
        return c < 0 || (c == 0 && inclusive)
    }

    /// Whether this bound, used as an end, lets `document` through: the position sorts after
    /// the document, or is at it and the bound is inclusive.
    public func sortsAfterDocument(_ document: Document, orderBys: [OrderBy]) -> Bool {
        guard let c = compare(to: document, orderBys: orderBys) else { return false }
        return c > 0 || (c == 0 && inclusive)
    }

    /// The position as text: `[v1,v2]` with ``Value/canonicalString``.
    public var positionString: String {
        "[" + position.map(\.canonicalString).joined(separator: ",") + "]"
    }

    /// A deterministic text form: the position, then `incl` or `excl`.
    public var canonicalID: String { positionString + (inclusive ? " incl" : " excl") }

    public var description: String { canonicalID }

    /// Bounds are equal when their canonical ids are (identical values, same inclusiveness).
    public static func == (a: Bound, b: Bound) -> Bool { a.canonicalID == b.canonicalID }

    public func hash(into hasher: inout Hasher) { hasher.combine(canonicalID) }
}

/// One sort key of a query: a field and a direction.
///
/// Ordering by ``FieldPath/documentID`` (`__name__`) orders by document key.
public struct OrderBy: Sendable, Hashable, CustomStringConvertible {
    /// A sort direction.
    public enum Direction: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// Smallest first, in Firestore's value order (`asc` in canonical ids).
        case ascending = "asc"
        /// Largest first (`desc` in canonical ids).
        case descending = "desc"

        /// The other direction.
        public var flipped: Direction { self == .ascending ? .descending : .ascending }

        /// Applies the direction to an ascending comparison result.
        public func apply(_ comparison: Int) -> Int { self == .ascending ? comparison : -comparison }

        public var description: String { rawValue }
    }

    /// The field sorted on.
    public let field: FieldPath
    /// The direction.
    public let direction: Direction

    /// Creates a sort key.
    public init(_ field: FieldPath, _ direction: Direction = .ascending) {
        self.field = field
        self.direction = direction
    }

    /// Whether the direction is descending.
    public var isDescending: Bool { direction == .descending }

    /// The same field in the other direction.
    public var flipped: OrderBy { OrderBy(field, direction.flipped) }

    /// Compares two documents on this key: -1, 0 or 1, with the direction applied.
    ///
    /// `__name__` compares keys; other fields compare with ``Value/compare(_:_:)``. A document
    /// that lacks the field (which a query never matches) sorts before any value, so the result
    /// is a total order on all documents.
    public func compare(_ a: Document, _ b: Document) -> Int {
        if field.isDocumentID { return direction.apply(a.key.path.compare(b.key.path)) }
        return compare(a.value(at: field), b.value(at: field))
    }

    /// Compares two documents' values of this key's field (not `__name__`), as
    /// the comparison of two documents does.
    func compare(_ x: Value?, _ y: Value?) -> Int {
        let result: Int
        switch (x, y) {
        case let (x?, y?): result = Value.compare(x, y)
        case (nil, nil): result = 0
        case (nil, _?): result = -1
        case (_?, nil): result = 1
        }
        return direction.apply(result)
    }

    /// A deterministic text form: `field asc` or `field desc`.
    public var canonicalID: String { "\(field.canonicalString) \(direction.rawValue)" }

    public var description: String { canonicalID }
}

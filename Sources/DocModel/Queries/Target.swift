/// A query in the form the store and the server run it (Firestore's `Target`): the full,
/// normalized sort order and, for a `limit(toLast:)` query, the order flipped and the cursors
/// swapped, so that a target's results are always its *first* `limit` documents.
///
/// Obtain one with ``Query/toTarget()``. A target is identified by its ``canonicalID``; the
/// local store keys its target cache by it.
public struct Target: Sendable, Hashable, CustomStringConvertible {
    /// The collection path, document path, or collection-group parent (see ``Query/path``).
    public let path: ResourcePath
    /// The collection id of a collection-group target.
    public let collectionGroup: String?
    /// The filters, all of which must match.
    public let filters: [Filter]
    /// The complete sort order (always ending with a `__name__` key).
    public let orderBys: [OrderBy]
    /// The maximum number of results, taken from the start of ``orderBys`` order.
    public let limit: Int?
    /// The start cursor, in target order.
    public let startAt: Bound?
    /// The end cursor, in target order.
    public let endAt: Bound?
    /// Whether tombstones match.
    public let includeDeleted: Bool

    /// Creates a target from its parts, e.g. when reading one back from storage. Prefer
    /// ``Query/toTarget()``, which normalizes and validates.
    public init(
        path: ResourcePath, collectionGroup: String?, filters: [Filter], orderBys: [OrderBy],
        limit: Int?, startAt: Bound?, endAt: Bound?, includeDeleted: Bool
    ) {
        self.path = path
        self.collectionGroup = collectionGroup
        self.filters = filters
        self.orderBys = orderBys
        self.limit = limit
        self.startAt = startAt
        self.endAt = endAt
        self.includeDeleted = includeDeleted
    }

    /// Whether the target names a single document: a document path, no collection group, no filters.
    public var isDocumentQuery: Bool {
        collectionGroup == nil && QueryEvaluation.isDocumentPath(path) && filters.isEmpty
    }

    /// Whether `document` satisfies the target (before the limit); same rules as
    /// ``Query/matches(_:)``, with the target's order and cursors. A `limit(toLast:)` query and
    /// its target match the same documents.
    public func matches(_ document: Document) -> Bool {
        QueryEvaluation.matches(
            document, path: path, collectionGroup: collectionGroup, filters: filters, orderBys: orderBys,
            startAt: startAt, endAt: endAt, includeDeleted: includeDeleted)
    }

    /// Compares two documents in target order: -1, 0 or 1.
    public func compare(_ a: Document, _ b: Document) -> Int {
        QueryEvaluation.compare(a, b, orderBys: orderBys)
    }

    /// A deterministic id built from every part:
    /// `path[|cg:group]|f:filters|ob:orderBys[|l:limit][|lb:start][|ub:end][|deleted]`.
    ///
    /// Filters are written as a normalized conjunction (see ``CompositeFilter/canonicalID``),
    /// values with ``Value/canonicalString``, field paths with ``FieldPath/canonicalString``,
    /// cursors as their position and `incl` / `excl`.
    public var canonicalID: String {
        QueryEvaluation.canonicalID(
            path: path, collectionGroup: collectionGroup, filters: filters, orderBys: orderBys,
            limit: limit, startAt: startAt, endAt: endAt, includeDeleted: includeDeleted)
    }

    public var description: String { "Target(\(canonicalID))" }

    /// Targets are equal when their canonical ids are.
    public static func == (a: Target, b: Target) -> Bool { a.canonicalID == b.canonicalID }

    public func hash(into hasher: inout Hasher) { hasher.combine(canonicalID) }
}

/// A query over the documents of a collection, a collection group or a single document, in
/// the Firestore model: filters, sort order, limit and cursors, plus doccache's implicit
/// tombstone filter.
///
/// Queries are values. Start from `init(collection:)`, ``init(collectionGroup:parent:)`` or
/// ``init(document:)`` and refine with the builders (`filter(_:)`, `order(by:descending:)`,
/// ``limit(to:)``, ``limit(toLast:)``, ``start(at:)``, ``start(after:)``, ``end(at:)``,
/// ``end(before:)``, the `…Document:` cursor variants, ``includingDeleted(_:)``),
/// which validate as the Firestore SDKs do and throw ``DocError`` (`invalidArgument`). The rules
/// are listed in `Query+Validation.swift`.
///
/// Everything here is pure: ``matches(_:)``, ``compare(_:_:)`` and ``results(from:)`` evaluate
/// the query over documents in memory.
///
/// ## Order
/// Results are sorted by ``normalizedOrderBys``: the explicit order-bys; then every inequality
/// filter field not explicitly ordered, in field-path order, in the direction of the last
/// explicit order-by; then `__name__` in that direction (ascending when there is no explicit
/// order-by), unless `__name__` is explicitly ordered.
///
/// ## Tombstones
/// Unless ``includeDeleted`` is set, documents that are tombstones (``Document/isTombstone``)
/// never match.
///
/// ## Equality
/// Two queries are equal (and hash equal) when their ``canonicalID``s are: when they are the
/// same query up to filter order, repeated filters, nesting of `and`s, implied sort keys, and the
/// order of `in` lists.
public struct Query: Sendable, Hashable, CustomStringConvertible {
    /// Which end of the result a limit keeps.
    public enum LimitType: String, Sendable, Hashable, CaseIterable {
        /// The first `limit` results (`limit(to:)`).
        case first
        /// The last `limit` results, still returned in query order (`limit(toLast:)`).
        case last
    }

    /// The collection path; the document path of a document query; for a collection-group
    /// query, the path under which the group is searched (the root or a document).
    public let path: ResourcePath
    /// The collection id of a collection-group query; `nil` otherwise.
    public let collectionGroup: String?
    /// The filters, all of which must match.
    public private(set) var filters: [Filter] {
        didSet { normalizedOrderBys = Self.normalize(explicitOrderBys, filters) }
    }
    /// The order-bys given, in order.
    public private(set) var explicitOrderBys: [OrderBy] {
        didSet { normalizedOrderBys = Self.normalize(explicitOrderBys, filters) }
    }
    /// The maximum number of results; `nil` for no limit.
    public private(set) var limit: Int?
    /// Which end of the results ``limit`` keeps; `.first` when there is no limit.
    public private(set) var limitType: LimitType
    /// Where results start (`startAt` / `startAfter`), in query order.
    public private(set) var startAt: Bound?
    /// Where results end (`endAt` / `endBefore`), in query order.
    public private(set) var endAt: Bound?
    /// Whether tombstones match. `false` by default: the implicit tombstone filter.
    public private(set) var includeDeleted: Bool
    /// The full sort order (see "Order" above). It always ends with a `__name__` key, so it
    /// orders any two distinct documents.
    public private(set) var normalizedOrderBys: [OrderBy]

    /// The query of every document directly in the collection at `path` (an odd number of
    /// segments). Documents of sub-collections are not included.
    public init(collection path: ResourcePath) throws(DocError) {
        guard path.count % 2 == 1 else {
            throw .invalid(
                "a collection path needs an odd number of segments, got \(path.count)", at: "path \"\(path)\"")
        }
        self.init(path: path, collectionGroup: nil)
    }

    /// The query of every document directly in the collection at `path`, e.g. `users/alice/orders`.
    public init(collection path: String) throws(DocError) {
        try self.init(collection: ResourcePath(path))
    }

    /// The query of every document in any collection with id `collectionID` at or below
    /// `parent` (the root, or a document path).
    public init(collectionGroup collectionID: String, parent: ResourcePath = .root) throws(DocError) {
        guard !collectionID.isEmpty, !collectionID.contains("/") else {
            throw .invalid(
                "invalid collection id \"\(collectionID)\" for a collection group: it must be non-empty and must not contain '/'")
        }
        try ResourcePath.validate(segment: collectionID, index: 0, in: collectionID)
        guard parent.count % 2 == 0 else {
            throw .invalid(
                "a collection group query is rooted at the database root or a document, but \"\(parent)\" is a collection path")
        }
        self.init(path: parent, collectionGroup: collectionID)
    }

    /// The query of the single document `key` (``isDocumentQuery``).
    public init(document key: DocumentKey) {
        self.init(path: key.path, collectionGroup: nil)
    }

    private init(path: ResourcePath, collectionGroup: String?) {
        self.path = path
        self.collectionGroup = collectionGroup
        self.filters = []
        self.explicitOrderBys = []
        self.limit = nil
        self.limitType = .first
        self.startAt = nil
        self.endAt = nil
        self.includeDeleted = false
        self.normalizedOrderBys = Self.normalize([], [])
    }

    // MARK: - Shape

    /// Whether this query names a single document: a document path, no collection group, no filters.
    public var isDocumentQuery: Bool {
        collectionGroup == nil && QueryEvaluation.isDocumentPath(path) && filters.isEmpty
    }

    /// Whether this is a collection-group query.
    public var isCollectionGroupQuery: Bool { collectionGroup != nil }

    /// Whether a limit is set (either end).
    public var hasLimit: Bool { limit != nil }

    /// Whether a `limit(toLast:)` is set.
    public var hasLimitToLast: Bool { limit != nil && limitType == .last }

    /// Whether the query selects its whole collection (or group): no filters, limit or cursors,
    /// and ordered by nothing or only by `__name__`. Such a query is best run as a scan of the
    /// collection rather than through an index.
    ///
    /// The implicit tombstone filter is not counted: a query that "matches all documents"
    /// still excludes tombstones unless ``includeDeleted`` is set.
    public var matchesAllDocuments: Bool {
        filters.isEmpty && limit == nil && startAt == nil && endAt == nil
            && (explicitOrderBys.isEmpty || (explicitOrderBys.count == 1 && explicitOrderBys[0].field.isDocumentID))
    }

    /// The fields of all inequality filters (`<`, `<=`, `>`, `>=`, `!=`, `not-in`), including
    /// those inside composite filters, each once, in field-path order.
    public var inequalityFilterFields: [FieldPath] { Self.inequalityFields(of: filters) }

    /// The fields every result has pinned to one value or a list of values: fields of `==` and
    /// `in` filters that are not inside an `or` (top-level filters and `and`s, however nested),
    /// each once, in field-path order. May include `__name__`. For index selection.
    public var equalityFields: [FieldPath] {
        var fields = Set<FieldPath>()
        func collect(_ filters: [Filter]) {
            for filter in filters {
                switch filter {
                case .field(let f) where f.op == .equal || f.op == .in:
                    fields.insert(f.field)
                case .field:
                    break
                case .composite(let c):
                    if c.op == .and { collect(c.filters) }
                }
            }
        }
        collect(filters)
        return fields.sorted()
    }

    /// The field filters of the query, composites flattened.
    public var flattenedFilters: [FieldFilter] { filters.flatMap(\.flattenedFilters) }

    // MARK: - Evaluation

    /// Whether `document` is a result of the query, before the limit: it is in the queried
    /// collection (group, or is the queried document), is not a tombstone (unless
    /// ``includeDeleted``), has every field of ``normalizedOrderBys``, satisfies every filter,
    /// and lies within the cursors.
    public func matches(_ document: Document) -> Bool {
        QueryEvaluation.matches(
            document, path: path, collectionGroup: collectionGroup, filters: filters,
            orderBys: normalizedOrderBys, startAt: startAt, endAt: endAt, includeDeleted: includeDeleted)
    }

    /// Compares two documents in query order (``normalizedOrderBys``): -1, 0 or 1. Descending
    /// keys invert; `__name__` compares keys, so only the same key compares 0.
    public func compare(_ a: Document, _ b: Document) -> Int {
        QueryEvaluation.compare(a, b, orderBys: normalizedOrderBys)
    }

    /// The query order as an "are in increasing order" predicate, for `sorted(by:)`.
    public var comparator: @Sendable (Document, Document) -> Bool {
        let orderBys = normalizedOrderBys
        return { QueryEvaluation.compare($0, $1, orderBys: orderBys) < 0 }
    }

    /// The query's results among `documents`: the matching documents, in query order, cut to
    /// the limit (the first `limit` for ``LimitType/first``, the last `limit` for
    /// ``LimitType/last``). `documents` should hold each key at most once.
    public func results(from documents: some Sequence<Document>) -> [Document] {
        let sorted = QueryEvaluation.sorted(documents.filter(matches), orderBys: normalizedOrderBys)
        guard let limit else { return sorted }
        return limitType == .first ? Array(sorted.prefix(limit)) : Array(sorted.suffix(limit))
    }

    // MARK: - Targets and ids

    /// Checks what can only be checked once the query is complete: a `limit(toLast:)` query
    /// needs at least one explicit order-by.
    public func validateForExecution() throws(DocError) {
        if hasLimitToLast && explicitOrderBys.isEmpty {
            throw .invalid("Invalid query. limit(toLast:) queries require specifying at least one order by clause.")
        }
    }

    /// The query as the store and the server run it (Firestore's `Query::ToTarget`): with the
    /// normalized order, and for a `limit(toLast:)` query every sort direction flipped and the
    /// cursors swapped (the start becomes the end and vice versa, keeping positions and
    /// inclusiveness), so the target's first `limit` results are the query's last, in reverse.
    ///
    /// Throws when ``validateForExecution()`` does.
    public func toTarget() throws(DocError) -> Target {
        try validateForExecution()
        return target
    }

    /// The target form without the execution check.
    var target: Target {
        if limitType == .last && limit != nil {
            return Target(
                path: path, collectionGroup: collectionGroup, filters: filters,
                orderBys: normalizedOrderBys.map(\.flipped), limit: limit,
                startAt: endAt, endAt: startAt, includeDeleted: includeDeleted)
        }
        return Target(
            path: path, collectionGroup: collectionGroup, filters: filters, orderBys: normalizedOrderBys,
            limit: limit, startAt: startAt, endAt: endAt, includeDeleted: includeDeleted)
    }

    /// A deterministic id: the target's ``Target/canonicalID``, plus the limit type (`|lt:f` or
    /// `|lt:l`) when there is a limit. Queries that differ only in ways that cannot change their
    /// results (see "Equality" above) share an id; a `limit(to:)` and a `limit(toLast:)` query
    /// never do.
    public var canonicalID: String {
        let id = target.canonicalID
        guard limit != nil else { return id }
        return id + (limitType == .first ? "|lt:f" : "|lt:l")
    }

    public var description: String { "Query(\(canonicalID))" }

    /// Queries are equal when their canonical ids are.
    public static func == (a: Query, b: Query) -> Bool { a.canonicalID == b.canonicalID }

    public func hash(into hasher: inout Hasher) { hasher.combine(canonicalID) }

    /// This query run against the single collection `collectionPath` instead of its path or
    /// group, keeping filters, order, limit and cursors (Firestore's `AsCollectionQueryAtPath`):
    /// how a collection-group query is run collection by collection.
    public func asCollectionQuery(at collectionPath: ResourcePath) -> Query {
        var q = Query(path: collectionPath, collectionGroup: nil)
        q.filters = filters
        q.explicitOrderBys = explicitOrderBys
        q.limit = limit
        q.limitType = limitType
        q.startAt = startAt
        q.endAt = endAt
        q.includeDeleted = includeDeleted
        return q
    }

    // MARK: - Normalization

    static func inequalityFields(of filters: [Filter]) -> [FieldPath] {
        Set(filters.flatMap(\.flattenedFilters).filter(\.isInequality).map(\.field)).sorted()
    }

    /// Firestore's normalized order: explicit order-bys, then unordered inequality fields (not
    /// `__name__`) in field-path order, then `__name__`; implicit keys take the direction of the
    /// last explicit order-by.
    static func normalize(_ explicit: [OrderBy], _ filters: [Filter]) -> [OrderBy] {
        var result = explicit
        let ordered = Set(explicit.map(\.field))
        let direction = explicit.last?.direction ?? .ascending
        for field in inequalityFields(of: filters) where !field.isDocumentID && !ordered.contains(field) {
            result.append(OrderBy(field, direction))
        }
        if !ordered.contains(.documentID) {
            result.append(OrderBy(.documentID, direction))
        }
        return result
    }

    // MARK: - Mutation for the builders

    /// Applies `change` to a copy. For the builders in this module.
    func with(_ change: (inout Query) -> Void) -> Query {
        var q = self
        change(&q)
        return q
    }

    mutating func append(_ filter: Filter) { filters.append(filter) }
    mutating func append(_ orderBy: OrderBy) { explicitOrderBys.append(orderBy) }
    mutating func setLimit(_ limit: Int, _ type: LimitType) { self.limit = limit; self.limitType = type }
    mutating func setStart(_ bound: Bound) { startAt = bound }
    mutating func setEnd(_ bound: Bound) { endAt = bound }
    mutating func setIncludeDeleted(_ include: Bool) { includeDeleted = include }
}

/// The rules the query builders enforce. They follow the Firestore SDKs (`api/query_core.cc`,
/// `FIRQuery.mm`) and the documented Firestore query limits; every violation throws
/// `DocError(.invalidArgument, …)` with a message starting "Invalid query.".
///
/// Filters (`Query.filter(_:)`):
/// - A document query cannot be filtered (nor ordered, nor given cursors).
/// - `in`, `not-in` and `array-contains-any` need a non-empty array of at most
///   ``Query/maxDisjunctionValues`` (30) values.
/// - `null` and NaN values are only allowed with `==` and `!=` (the server turns those into
///   its `IS_NULL` / `IS_NAN` unary filters and has no other comparisons with them).
/// - Operator conflicts, across the whole query (composites included): at most one
///   `array-contains`, and not together with `array-contains-any`; at most one `!=`; at most one
///   `not-in`; `not-in` not together with `!=`, `in`, `array-contains-any`, or any `or` filter.
/// - At most ``Query/maxDisjunctionValues`` (30) disjunctions once the filters are in
///   disjunctive normal form, each value of an `in` / `array-contains-any` list counting as one.
/// - Key filters (`__name__`): no array operators; the value (for `in` / `not-in`, each value)
///   must be a reference or a document id string. For a collection query a string must be a
///   plain id (no `/`), and the document must be directly in the queried collection; for a
///   collection group a string is a path relative to the group's parent and must name a
///   document.
/// - Several inequality fields are allowed, as Firestore now allows; the old rule that the
///   first order-by must be on the inequality field is *not* enforced. Each inequality field
///   not explicitly ordered is ordered implicitly (``Query/normalizedOrderBys``).
/// - A filter that would change the normalized order is refused while a cursor holds more
///   values than there are explicit order-bys (a cursor from a document), because the cursor's
///   values would no longer line up with the order.
///
/// Order (`Query.order(by:descending:)`): not after a cursor is set, and not
/// twice on the same field.
///
/// Limit: at least 1 and at most `Int32.max`. A `limit(toLast:)` query needs at least one
/// explicit order-by; that is checked when the query is run (``Query/validateForExecution()``,
/// ``Query/toTarget()``), so the builders can be called in any order.
///
/// Cursors from values: at least one value and no more values than explicit order-bys; a value
/// for a `__name__` order-by follows the key-filter rules above. Cursors from documents: the
/// document must have every field of the normalized order, and none may be a pending server
/// timestamp.
extension Query {
    /// The most values an `in`, `not-in` or `array-contains-any` list may hold, and the most
    /// disjunctions a query's filters may expand to.
    public static let maxDisjunctionValues = 30

    /// The largest limit (Firestore limits are 32-bit).
    public static let maxLimit = Int(Int32.max)

    /// A document path with no collection group: only limits and `includingDeleted` apply.
    var isDocumentPathQuery: Bool { collectionGroup == nil && QueryEvaluation.isDocumentPath(path) }

    func validateCanRefine(what: String) throws(DocError) {
        if isDocumentPathQuery {
            throw .invalid("Invalid query. A document query cannot \(what); query its collection instead.",
                           at: "document \(path)")
        }
    }

    // MARK: Filters

    /// Validates `filter` on its own and returns it normalized: key values as references,
    /// empty composites dropped (`nil` when nothing is left), single-member composites unwrapped.
    func parseFilter(_ filter: Filter) throws(DocError) -> Filter? {
        switch filter {
        case .field(let f):
            return .field(try parseFieldFilter(f))
        case .composite(let c):
            var members: [Filter] = []
            for member in c.filters {
                if let parsed = try parseFilter(member) { members.append(parsed) }
            }
            if members.isEmpty { return nil }
            if members.count == 1 { return members[0] }
            return .composite(CompositeFilter(c.op, members))
        }
    }

    func parseFieldFilter(_ filter: FieldFilter) throws(DocError) -> FieldFilter {
        let op = filter.op
        let at = "filter \(filter.field) \(op)"
        var value = filter.value
        if op.takesValueList {
            guard case .array(let values) = value else {
                throw .invalid("Invalid query. A non-empty array is required for '\(op)' filters, but the value is a \(value.typeName).", at: at)
            }
            guard !values.isEmpty else {
                throw .invalid("Invalid query. A non-empty array is required for '\(op)' filters.", at: at)
            }
            guard values.count <= Self.maxDisjunctionValues else {
                throw .invalid("Invalid query. '\(op)' filters support at most \(Self.maxDisjunctionValues) values, but \(values.count) were given.", at: at)
            }
        } else if (value.isNull || value.isNaN) && op != .equal && op != .notEqual {
            throw .invalid("Invalid query. \(value.isNull ? "Null" : "NaN") only supports '==' and '!=' comparisons, not '\(op)'.", at: at)
        }
        if filter.field.isDocumentID {
            if op.isArrayOperator {
                throw .invalid("Invalid query. You can't perform '\(op)' queries on document ID since document IDs are not arrays.", at: at)
            }
            if case .array(let values) = value, op.takesValueList {
                var references: [Value] = []
                for v in values { references.append(try parseDocumentIDValue(v, at: at)) }
                value = .array(references)
            } else {
                value = try parseDocumentIDValue(value, at: at)
            }
        }
        return FieldFilter(filter.field, op, value)
    }

    /// Turns a document id string or a reference into a reference to a document the query may
    /// name (see the key-filter rules above).
    func parseDocumentIDValue(_ value: Value, at: String) throws(DocError) -> Value {
        let key: DocumentKey
        switch value {
        case .reference(let k):
            key = k
        case .string(let id):
            guard !id.isEmpty else {
                throw .invalid("Invalid query. When querying by document ID you must provide a valid document ID, but it was an empty string.", at: at)
            }
            if !isCollectionGroupQuery && id.contains("/") {
                throw .invalid("Invalid query. When querying a collection by document ID you must provide a plain document ID, but '\(id)' contains a '/' character.", at: at)
            }
            let relative = try ResourcePath(id)
            let full = path.appending(relative)
            guard QueryEvaluation.isDocumentPath(full) else {
                throw .invalid("Invalid query. When querying a collection group by document ID, the value provided must result in a valid document path, but '\(full)' is not because it has an odd number of segments.", at: at)
            }
            key = DocumentKey(unchecked: full)
        default:
            throw .invalid("Invalid query. When querying by document ID you must provide a valid string or reference, but it was of type: \(value.typeName).", at: at)
        }
        if !isCollectionGroupQuery && !key.isIn(collection: path) {
            throw .invalid("Invalid query. When querying a collection by document ID, the document must be in the collection '\(path)', but '\(key)' is not.", at: at)
        }
        return .reference(key)
    }

    /// Operators that may not appear in the same query as `op`.
    static func conflictingOperators(_ op: FieldFilter.Operator) -> [FieldFilter.Operator] {
        switch op {
        case .notEqual: return [.notEqual, .notIn]
        case .in: return [.notIn]
        case .arrayContains: return [.arrayContains, .arrayContainsAny]
        case .arrayContainsAny: return [.arrayContains, .notIn]
        case .notIn: return [.arrayContainsAny, .in, .notIn, .notEqual]
        case .lessThan, .lessThanOrEqual, .equal, .greaterThanOrEqual, .greaterThan: return []
        }
    }

    /// Checks a parsed filter against the filters, order and cursors already in the query.
    func validateAdding(_ filter: Filter) throws(DocError) {
        var seen = flattenedFilters
        for f in filter.flattenedFilters {
            let conflicts = Self.conflictingOperators(f.op)
            if let other = seen.first(where: { conflicts.contains($0.op) }) {
                if other.op == f.op {
                    throw .invalid("Invalid query. You cannot use more than one '\(f.op)' filter.", at: "filter \(f)")
                }
                throw .invalid("Invalid query. You cannot use '\(f.op)' filters with '\(other.op)' filters.", at: "filter \(f)")
            }
            seen.append(f)
        }
        let all = filters + [filter]
        if seen.contains(where: { $0.op == .notIn }) && all.contains(where: Self.containsDisjunction) {
            throw .invalid("Invalid query. You cannot use 'not-in' filters with 'or' filters.", at: "filter \(filter)")
        }
        let disjunctions = Filter.conjunctionCount(all)
        if disjunctions > Self.maxDisjunctionValues {
            throw .invalid("Invalid query. The filters expand to \(disjunctions) disjunctions in disjunctive normal form; the limit is \(Self.maxDisjunctionValues).", at: "filter \(filter)")
        }
        let longestCursor = max(startAt?.position.count ?? 0, endAt?.position.count ?? 0)
        if longestCursor > explicitOrderBys.count && Self.normalize(explicitOrderBys, all) != normalizedOrderBys {
            throw .invalid("Invalid query. This filter adds an implicit order by, which would misalign the cursor taken from a document; add filters before setting the cursor.", at: "filter \(filter)")
        }
    }

    static func containsDisjunction(_ filter: Filter) -> Bool {
        guard case .composite(let c) = filter else { return false }
        return c.op == .or || c.filters.contains(where: containsDisjunction)
    }

    // MARK: Order and limit

    func validateNewOrderBy(_ field: FieldPath) throws(DocError) {
        if startAt != nil {
            throw .invalid("Invalid query. You must not specify a starting point before specifying the order by.", at: "order by \(field)")
        }
        if endAt != nil {
            throw .invalid("Invalid query. You must not specify an ending point before specifying the order by.", at: "order by \(field)")
        }
        if explicitOrderBys.contains(where: { $0.field == field }) {
            throw .invalid("Invalid query. The query is already ordered by '\(field)'; a field can be ordered by only once.", at: "order by \(field)")
        }
    }

    static func validateLimit(_ limit: Int) throws(DocError) {
        guard limit > 0 else {
            throw .invalid("Invalid query. Query limit (\(limit)) is invalid. Limit must be positive.")
        }
        guard limit <= maxLimit else {
            throw .invalid("Invalid query. Query limit (\(limit)) is invalid. Limit must be at most \(maxLimit).")
        }
    }

    // MARK: Cursors

    func bound(values: [Value], inclusive: Bool, method: String) throws(DocError) -> Bound {
        try validateCanRefine(what: "have cursors")
        guard !values.isEmpty else {
            throw .invalid("Invalid query. \(method) needs at least one value.")
        }
        guard values.count <= explicitOrderBys.count else {
            throw .invalid("Invalid query. You are trying to start or end a query using more values (\(values.count)) than were specified in the order by (\(explicitOrderBys.count)) in \(method).")
        }
        var position: [Value] = []
        for (value, orderBy) in zip(values, explicitOrderBys) {
            if orderBy.field.isDocumentID {
                position.append(try parseDocumentIDValue(value, at: "\(method) value for __name__"))
            } else {
                position.append(value)
            }
        }
        return Bound(position: position, inclusive: inclusive)
    }

    func bound(document: Document, inclusive: Bool) throws(DocError) -> Bound {
        try validateCanRefine(what: "have cursors")
        var position: [Value] = []
        for orderBy in normalizedOrderBys {
            if orderBy.field.isDocumentID {
                position.append(.reference(document.key))
                continue
            }
            guard let value = document.value(at: orderBy.field) else {
                throw .invalid("Invalid query. You are trying to start or end a query using a document for which the field '\(orderBy.field)' (used as the order by) does not exist.", at: document.key.description)
            }
            if value.isServerTimestamp {
                throw .invalid("Invalid query. You are trying to start or end a query using a document for which the field '\(orderBy.field)' is an uncommitted server timestamp. (Since the value of this field is unknown, you cannot start/end a query with it.)", at: document.key.description)
            }
            position.append(value)
        }
        return Bound(position: position, inclusive: inclusive)
    }
}

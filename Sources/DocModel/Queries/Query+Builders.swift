/// The query builders. Each returns a new query; the query it is called on is unchanged.
/// Each validates its input against the query so far (rules in `Query+Validation.swift`) and
/// throws `DocError(.invalidArgument, …)` with a message that says what to change.
extension Query {
    // MARK: Filters

    /// Adds a filter; results must match it and every earlier filter.
    ///
    /// Key filters (on `__name__`) may be given a document id string (for a collection query,
    /// a plain id; for a collection group, a path relative to the group's parent) or a
    /// reference; strings are turned into references. Composite filters with no members are
    /// ignored, and composites with one member are replaced by that member.
    public func filter(_ filter: Filter) throws(DocError) -> Query {
        try validateCanRefine(what: "have filters")
        guard let parsed = try parseFilter(filter) else { return self }
        try validateAdding(parsed)
        return with { $0.append(parsed) }
    }

    /// Adds the field filter `field op value`.
    public func filter(_ field: FieldPath, _ op: FieldFilter.Operator, _ value: Value) throws(DocError) -> Query {
        try filter(.where(field, op, value))
    }

    /// Adds the field filter `field op value`, parsing `field` as a dotted field path.
    public func filter(_ field: String, _ op: FieldFilter.Operator, _ value: Value) throws(DocError) -> Query {
        try filter(.where(FieldPath(field), op, value))
    }

    // MARK: Order

    /// Adds a sort key after the existing ones. Must come before any cursor, and each field may
    /// be ordered once.
    public func order(by field: FieldPath, descending: Bool = false) throws(DocError) -> Query {
        try validateCanRefine(what: "be ordered")
        try validateNewOrderBy(field)
        return with { $0.append(OrderBy(field, descending ? .descending : .ascending)) }
    }

    /// Adds a sort key, parsing `field` as a dotted field path (`__name__` for the key).
    public func order(by field: String, descending: Bool = false) throws(DocError) -> Query {
        try order(by: FieldPath(field), descending: descending)
    }

    // MARK: Limit

    /// Keeps only the first `limit` results (`limit` ≥ 1). Replaces any earlier limit.
    public func limit(to limit: Int) throws(DocError) -> Query {
        try Self.validateLimit(limit)
        return with { $0.setLimit(limit, .first) }
    }

    /// Keeps only the last `limit` results, still returned in query order (`limit` ≥ 1).
    /// Replaces any earlier limit. The query needs an explicit order-by by the time it is run
    /// (``validateForExecution()``, ``toTarget()``).
    public func limit(toLast limit: Int) throws(DocError) -> Query {
        try Self.validateLimit(limit)
        return with { $0.setLimit(limit, .last) }
    }

    // MARK: Cursors from values

    /// Starts the results at the given position (inclusive). The values are for the explicit
    /// order-bys, in order (fewer is allowed); a `__name__` key takes a document id string or a
    /// reference. Replaces any earlier start.
    public func start(at values: [Value]) throws(DocError) -> Query {
        let bound = try bound(values: values, inclusive: true, method: "start(at:)")
        return with { $0.setStart(bound) }
    }

    /// Starts the results just after the given position (exclusive). See ``start(at:)``.
    public func start(after values: [Value]) throws(DocError) -> Query {
        let bound = try bound(values: values, inclusive: false, method: "start(after:)")
        return with { $0.setStart(bound) }
    }

    /// Ends the results at the given position (inclusive). See ``start(at:)``.
    public func end(at values: [Value]) throws(DocError) -> Query {
        let bound = try bound(values: values, inclusive: true, method: "end(at:)")
        return with { $0.setEnd(bound) }
    }

    /// Ends the results just before the given position (exclusive). See ``start(at:)``.
    public func end(before values: [Value]) throws(DocError) -> Query {
        let bound = try bound(values: values, inclusive: false, method: "end(before:)")
        return with { $0.setEnd(bound) }
    }

    // MARK: Cursors from documents

    /// Starts the results at `document` (inclusive): the position is the document's values for
    /// every key of ``normalizedOrderBys``, ending with its key, so it is unambiguous. The
    /// document must have every ordered field, none of them a pending server timestamp.
    public func start(atDocument document: Document) throws(DocError) -> Query {
        let bound = try bound(document: document, inclusive: true)
        return with { $0.setStart(bound) }
    }

    /// Starts the results just after `document`. See ``start(atDocument:)``.
    public func start(afterDocument document: Document) throws(DocError) -> Query {
        let bound = try bound(document: document, inclusive: false)
        return with { $0.setStart(bound) }
    }

    /// Ends the results at `document` (inclusive). See ``start(atDocument:)``.
    public func end(atDocument document: Document) throws(DocError) -> Query {
        let bound = try bound(document: document, inclusive: true)
        return with { $0.setEnd(bound) }
    }

    /// Ends the results just before `document`. See ``start(atDocument:)``.
    public func end(beforeDocument document: Document) throws(DocError) -> Query {
        let bound = try bound(document: document, inclusive: false)
        return with { $0.setEnd(bound) }
    }

    // MARK: Tombstones

    /// The same query with tombstones included (`true`) or excluded (`false`, the default of
    /// every new query).
    public func includingDeleted(_ include: Bool = true) -> Query {
        with { $0.setIncludeDeleted(include) }
    }
}

public import DocModel

/// What a query is built from and run on: a ``DocumentQuery``, or a ``CollectionReference``
/// (whose query is every document of the collection). The builders, one-time reads and
/// listeners are written once, here, for both.
///
/// Builders return a new ``DocumentQuery`` and check their input at once (`invalidArgument`
/// naming what is wrong); nothing runs until you read or listen.
public protocol QueryBuilder: Sendable {
    /// The query the builders start from.
    var baseQuery: DocumentQuery { get }
}

extension DocumentQuery: QueryBuilder {
    public var baseQuery: DocumentQuery { self }
}

extension CollectionReference: QueryBuilder {
    public var baseQuery: DocumentQuery { query }
}

extension QueryBuilder {
    private func with(_ build: (Query) throws(DocError) -> Query) throws(DocError) -> DocumentQuery {
        let base = baseQuery
        return DocumentQuery(store: base.store, query: try build(base.query))
    }

    // MARK: - Filters and order

    /// Documents whose `field` compares to `value` with `op` (`==`, `!=`, `<`, `<=`, `>`, `>=`,
    /// `array-contains`, `array-contains-any`, `in`, `not-in`).
    public func whereField(_ field: String, _ op: FieldFilter.Operator, _ value: Value) throws(DocError) -> DocumentQuery {
        try with { (q) throws(DocError) in try q.filter(field, op, value) }
    }

    /// Documents whose `field` (a dotted field path) equals `value`: the `==` filter.
    public func whereField(_ field: String, isEqualTo value: Value) throws(DocError) -> DocumentQuery {
        try whereField(field, .equal, value)
    }

    /// Documents matching a composite filter (`.and`, `.or`).
    public func filter(_ filter: Filter) throws(DocError) -> DocumentQuery {
        try with { (q) throws(DocError) in try q.filter(filter) }
    }

    /// Sorts by `field` (a dotted field path; `__name__` for the document id) after the
    /// existing orders; ties are broken by document id, in the direction of the last order
    /// (``DocModel/Query``, "Order"). As in Firestore, a document without the field is not a
    /// result. Must come before any cursor; each field may be ordered once.
    public func order(by field: String, descending: Bool = false) throws(DocError) -> DocumentQuery {
        try with { (q) throws(DocError) in try q.order(by: field, descending: descending) }
    }

    /// Keeps the first `n` results (`n` ≥ 1), replacing any earlier limit. A listener's limit
    /// may be at most ``StoreSettings/maxListenLimit``.
    public func limit(to n: Int) throws(DocError) -> DocumentQuery {
        try with { (q) throws(DocError) in try q.limit(to: n) }
    }

    /// Keeps the last `n` results (`n` ≥ 1), still returned in the query's order, replacing
    /// any earlier limit. The query needs an ``order(by:descending:)`` by the time it runs.
    public func limit(toLast n: Int) throws(DocError) -> DocumentQuery {
        try with { (q) throws(DocError) in try q.limit(toLast: n) }
    }

    /// Also return tombstoned (deleted) documents.
    public func includeDeleted() -> DocumentQuery {
        let base = baseQuery
        return DocumentQuery(store: base.store, query: base.query.includingDeleted())
    }

    // MARK: - Cursors from values

    /// Starts at the position these values give for the query's order-bys, in order
    /// (inclusive; fewer values than order-bys is allowed; for `__name__`, a document id or a
    /// reference). Replaces any earlier start.
    public func start(at values: [Value]) throws(DocError) -> DocumentQuery {
        try with { (q) throws(DocError) in try q.start(at: values) }
    }

    /// Starts just after the position these values give (exclusive). See ``start(at:)``.
    public func start(after values: [Value]) throws(DocError) -> DocumentQuery {
        try with { (q) throws(DocError) in try q.start(after: values) }
    }

    /// Ends at the position these values give (inclusive). See ``start(at:)``.
    public func end(at values: [Value]) throws(DocError) -> DocumentQuery {
        try with { (q) throws(DocError) in try q.end(at: values) }
    }

    /// Ends just before the position these values give (exclusive). See ``start(at:)``.
    public func end(before values: [Value]) throws(DocError) -> DocumentQuery {
        try with { (q) throws(DocError) in try q.end(before: values) }
    }

    // MARK: - Cursors from documents

    /// Starts at `document` (inclusive), as Firestore's `start(atDocument:)`: the position is
    /// the document's value for every order-by, the implicit ones included, and its key, so
    /// it is unambiguous. Pages: `query.start(afterDocument: lastOfThePage)`.
    ///
    /// - Throws: `invalidArgument` when the snapshot's document does not exist (nothing to
    ///   start from), lacks an ordered field, or holds a pending server timestamp there.
    public func start(atDocument snapshot: DocumentSnapshot) throws(DocError) -> DocumentQuery {
        let document = try Self.cursorDocument(snapshot, "start(atDocument:)")
        return try with { (q) throws(DocError) in try q.start(atDocument: document) }
    }

    /// Starts just after `document`. See ``start(atDocument:)``.
    public func start(afterDocument snapshot: DocumentSnapshot) throws(DocError) -> DocumentQuery {
        let document = try Self.cursorDocument(snapshot, "start(afterDocument:)")
        return try with { (q) throws(DocError) in try q.start(afterDocument: document) }
    }

    /// Ends at `document` (inclusive). See ``start(atDocument:)``.
    public func end(atDocument snapshot: DocumentSnapshot) throws(DocError) -> DocumentQuery {
        let document = try Self.cursorDocument(snapshot, "end(atDocument:)")
        return try with { (q) throws(DocError) in try q.end(atDocument: document) }
    }

    /// Ends just before `document`. See ``start(atDocument:)``.
    public func end(beforeDocument snapshot: DocumentSnapshot) throws(DocError) -> DocumentQuery {
        let document = try Self.cursorDocument(snapshot, "end(beforeDocument:)")
        return try with { (q) throws(DocError) in try q.end(beforeDocument: document) }
    }

    private static func cursorDocument(_ snapshot: DocumentSnapshot, _ method: String) throws(DocError) -> Document {
        guard let document = snapshot.document else {
            throw DocError(.invalidArgument, "\(method) needs a document that exists; \(snapshot.path) does not",
                           at: snapshot.path)
        }
        return document
    }

    // MARK: - Reads and listeners

    /// Runs the query once.
    ///
    /// - `.server`: a fresh result from the server (a one-off listen that waits until the
    ///   server marks it current). The server only runs bounded listens, so the query needs a
    ///   limit within ``StoreSettings/maxListenLimit`` (else `invalidArgument`); `unavailable`
    ///   while offline.
    /// - `.cache`: the cache only, at once; any query.
    /// - `.default`: the server while the store is online and the query is bounded, the cache
    ///   otherwise.
    public func getDocuments(source: Source = .default) async throws(DocError) -> QuerySnapshot {
        try await baseQuery.runOnce(source: source)
    }

    /// Calls `callback` with the results now (from the cache) and after every change, on the
    /// store's ``DocumentStore/callbackQueue``.
    ///
    /// - Parameters:
    ///   - includeMetadataChanges: also call back when only the metadata changed
    ///     (`isFromCache`, `hasPendingWrites`).
    ///   - source: `.default` keeps the results in sync with the server; `.cache` never asks
    ///     the server (see ``ListenSource``).
    ///   - scope: stop and restart the listener with others (``ListenerScope``).
    /// - Throws: `invalidArgument` for a query without a limit within
    ///   ``StoreSettings/maxListenLimit`` (listeners are bounded, from the cache too).
    public func addSnapshotListener(
        includeMetadataChanges: Bool = false, source: ListenSource = .default, scope: ListenerScope? = nil,
        _ callback: @escaping @Sendable (Result<QuerySnapshot, DocError>) -> Void
    ) async throws(DocError) -> ListenerRegistration {
        let query = baseQuery
        return try await query.register(includeMetadataChanges: includeMetadataChanges, source: source, scope: scope,
                                        bounded: true, on: query.store.callbackQueue) { result in
            callback(result.map { QuerySnapshot($0, includeMetadataChanges: includeMetadataChanges) })
        }
    }

    /// The results now (from the cache) and after every change, as an async sequence that
    /// throws ``DocError``. Ending the iteration (or cancelling its task) removes the listener.
    /// An unbounded query fails the sequence at once with `invalidArgument`.
    public func snapshots(includeMetadataChanges: Bool = false, source: ListenSource = .default, scope: ListenerScope? = nil)
        -> SnapshotSequence<QuerySnapshot>
    {
        SnapshotSequence(baseQuery.stream(includeMetadataChanges: includeMetadataChanges, source: source, scope: scope, bounded: true) {
            QuerySnapshot($0, includeMetadataChanges: includeMetadataChanges)
        })
    }
}

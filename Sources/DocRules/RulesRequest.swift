public import DocModel

/// A request to authorize: what is asked (method and path), by whom (auth), on what (the
/// stored document and, for writes, the document as it would be after the write).
public struct RulesRequest: Sendable {
    /// `get`, `list`, `create`, `update` or `delete` (`read` and `write` are rule shorthands).
    public var method: RulesMethod
    /// The document path for `get`, `create`, `update` and `delete`; the collection path for
    /// `list` (for a collection-group query: the parent path followed by the collection id,
    /// with ``RulesQuery/collectionGroup`` set). Relative to `/databases/{database}/documents`.
    public var path: ResourcePath
    /// The caller, or `nil` when unauthenticated (`request.auth == null`).
    public var auth: RulesAuth?
    /// The stored document (`resource`); `nil` when it does not exist. Unused for `list`.
    public var resource: Document?
    /// The document as it would be after the write (`request.resource`): the full new document
    /// for `create`, the merged document for `update`; `nil` for reads and `delete`.
    /// Pending server timestamps in it read as ``time``.
    public var requestResource: Document?
    /// `request.time`: the time the request is evaluated (and a write would commit).
    public var time: Timestamp
    /// For `list`: the query's limit, order and filters.
    public var query: RulesQuery?
    /// The database id in paths (`/databases/(default)/documents/…`).
    public var database: String

    /// A request; `resource`, `requestResource` and `query` default to none.
    public init(
        method: RulesMethod, path: ResourcePath, auth: RulesAuth?, resource: Document? = nil,
        requestResource: Document? = nil, time: Timestamp, query: RulesQuery? = nil,
        database: String = "(default)"
    ) {
        self.method = method
        self.path = path
        self.auth = auth
        self.resource = resource
        self.requestResource = requestResource
        self.time = time
        self.query = query
        self.database = database
    }
}

/// `request.auth`: the caller's uid and token claims.
public struct RulesAuth: Sendable, Hashable {
    /// `request.auth.uid`.
    public var uid: String
    /// `request.auth.token`: the token's claims (custom claims, `email`, …). `sub` reads as the
    /// uid when absent.
    public var token: [String: Value]

    /// A signed-in caller.
    public init(uid: String, token: [String: Value] = [:]) {
        self.uid = uid
        self.token = token
    }
}

/// What a `list` request asks for: the query's constraints, from which the rules decide
/// whether every document the query could return is allowed (rules are not filters).
public struct RulesQuery: Sendable {
    /// `request.query.limit`.
    public var limit: Int64?
    /// `request.query.offset`.
    public var offset: Int64?
    /// `request.query.orderBy` (a map from field path to `"ASC"` / `"DESC"`).
    public var orderBy: [OrderBy]
    /// The filters, all of which hold. `or` filters are allowed: the list is allowed only if
    /// every disjunct is.
    public var filters: [Filter]
    /// A collection-group query: documents of every collection with the request path's last
    /// segment as id, anywhere below the path's parent.
    public var collectionGroup: Bool

    /// A query's constraints.
    public init(limit: Int64? = nil, offset: Int64? = nil, orderBy: [OrderBy] = [], filters: [Filter] = [],
                collectionGroup: Bool = false) {
        self.limit = limit
        self.offset = offset
        self.orderBy = orderBy
        self.filters = filters
        self.collectionGroup = collectionGroup
    }

    /// The rules' view of a query: its limit, explicit order-bys, filters and whether it is a
    /// collection-group query.
    public init(_ query: Query) {
        self.init(limit: query.limit.map(Int64.init), orderBy: query.explicitOrderBys, filters: query.filters,
                  collectionGroup: query.collectionGroup != nil)
    }

    /// The rules' view of a target (the form in which a server runs a query): its limit,
    /// filters and order. A target's order is normalized and always ends with `__name__`; that
    /// last key is left out of ``orderBy`` unless it is the only one.
    public init(_ target: Target) {
        var orderBy = target.orderBys
        if orderBy.count > 1, orderBy.last?.field == FieldPath.documentID { orderBy.removeLast() }
        self.init(limit: target.limit.map(Int64.init), orderBy: orderBy, filters: target.filters,
                  collectionGroup: target.collectionGroup != nil)
    }
}

extension RulesRequest {
    /// A `list` request for `query` (the path is the collection, or for a collection-group
    /// query the parent followed by the collection id).
    public init(listing query: Query, auth: RulesAuth?, time: Timestamp, database: String = "(default)") {
        let path = query.collectionGroup.map { query.path.appending(ResourcePath(unchecked: [$0])) } ?? query.path
        self.init(method: .list, path: path, auth: auth, time: time, query: RulesQuery(query), database: database)
    }

    /// A `list` request for a query target, as a server receives it (the path is the
    /// collection, or for a collection-group target the parent followed by the collection id).
    public init(listing target: Target, auth: RulesAuth?, time: Timestamp, database: String = "(default)") {
        let path = target.collectionGroup.map { target.path.appending(ResourcePath(unchecked: [$0])) } ?? target.path
        self.init(method: .list, path: path, auth: auth, time: time, query: RulesQuery(target), database: database)
    }
}

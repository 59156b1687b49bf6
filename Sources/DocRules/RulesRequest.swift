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

    public init(uid: String, token: [String: Value] = [:]) {
        self.uid = uid
        self.token = token
    }
}

/// What a `list` request asks for: the query's constraints, from which the rules decide
/// whether every document the query could return is allowed (rules are not filters).
public struct RulesQuery: Sendable {
    /// A filter `field op value`.
    public struct Filter: Sendable {
        /// Filter operators, as in Firestore queries.
        public enum Operator: String, Sendable, CaseIterable {
            case equal = "==", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">"
            case greaterOrEqual = ">=", `in` = "in", notIn = "not-in"
            case arrayContains = "array-contains", arrayContainsAny = "array-contains-any"
        }

        public var field: FieldPath
        public var op: Operator
        /// The operand; a list (`.array`) for `in`, `not-in` and `array-contains-any`.
        public var value: Value

        public init(_ field: FieldPath, _ op: Operator, _ value: Value) {
            self.field = field
            self.op = op
            self.value = value
        }
    }

    /// One `orderBy` clause.
    public struct Order: Sendable {
        public var field: FieldPath
        public var descending: Bool

        public init(_ field: FieldPath, descending: Bool = false) {
            self.field = field
            self.descending = descending
        }
    }

    /// `request.query.limit`.
    public var limit: Int64?
    /// `request.query.offset`.
    public var offset: Int64?
    /// `request.query.orderBy` (a map from field path to `"ASC"` / `"DESC"`).
    public var orderBy: [Order]
    /// The filters, all of which hold (a conjunction). For an OR query, evaluate each
    /// disjunct as its own request: all must be allowed.
    public var filters: [Filter]
    /// A collection-group query: documents of every collection with the request path's last
    /// segment as id, anywhere below the path's parent.
    public var collectionGroup: Bool

    public init(limit: Int64? = nil, offset: Int64? = nil, orderBy: [Order] = [], filters: [Filter] = [],
                collectionGroup: Bool = false) {
        self.limit = limit
        self.offset = offset
        self.orderBy = orderBy
        self.filters = filters
        self.collectionGroup = collectionGroup
    }
}

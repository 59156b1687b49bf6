public import DocModel

/// A request document as the server reads it: `requests/{id}` with `type`, `params`, `base`,
/// `status`, `createdBy`, `createdAt` (see docs/request-documents.md).
public struct RequestDocument: Sendable, Hashable {
    /// The collection request documents live in (top level of the tenant's database).
    public static let collection = "requests"
    /// The author of the commits that process requests (in batch outcomes and logs).
    public static let serverAuthor = "doccache-server"

    /// The request's id (its document id, a UUIDv7 made on the device): the idempotency key.
    public var id: String
    /// The handler that applies it.
    public var type: String
    /// The handler's parameters.
    public var params: [String: Value]
    /// The documents the user saw, by path, with the version they saw.
    public var base: [DocumentKey: SnapshotVersion]
    /// Who created it (the `createdBy` field, checked by rules to be the author).
    public var createdBy: String?
    /// `pending`, `applied` or `rejected`.
    public var status: String
    /// The stored document's version (its update time).
    public var version: SnapshotVersion

    /// Whether `key` names a request document (`requests/{id}`).
    public static func isRequest(_ key: DocumentKey) -> Bool {
        key.path.count == 2 && key.collectionPath.lastSegment == collection
    }

    /// Reads a stored request document. Throws `invalidArgument` naming the field that is
    /// missing or of the wrong type.
    public init(_ document: Document) throws(DocError) {
        let fields = document.data.fields
        id = document.key.documentID
        version = document.version
        guard case .string(let type)? = fields["type"], !type.isEmpty else {
            throw DocError(.invalidArgument, "a request needs a non-empty string field type", at: "\(document.key).type")
        }
        self.type = type
        switch fields["params"] {
        case .map(let params)?: self.params = params
        case nil, .null?: self.params = [:]
        default: throw DocError(.invalidArgument, "params must be a map", at: "\(document.key).params")
        }
        var base: [DocumentKey: SnapshotVersion] = [:]
        switch fields["base"] {
        case .map(let entries)?:
            let cap = DocumentLimits.maxRequestBaseEntries
            guard entries.count <= cap else {
                throw DocError(.invalidArgument, "base names \(entries.count) documents; a request may name at most \(cap)",
                               at: "\(document.key).base")
            }
            for (path, version) in entries {
                guard let key = try? DocumentKey(path) else {
                    throw DocError(.invalidArgument, "base names \(path), which is not a document path", at: "\(document.key).base")
                }
                guard case .integer(let micros) = version, micros >= 0 else {
                    throw DocError(.invalidArgument, "the base version of \(path) must be a non-negative integer (microseconds)",
                                   at: "\(document.key).base")
                }
                base[key] = SnapshotVersion(microseconds: micros)
            }
        case nil, .null?: break
        default: throw DocError(.invalidArgument, "base must be a map of document paths to versions", at: "\(document.key).base")
        }
        self.base = base
        if case .string(let author)? = fields["createdBy"] { createdBy = author } else { createdBy = nil }
        if case .string(let status)? = fields["status"] { self.status = status } else { status = "" }
    }
}

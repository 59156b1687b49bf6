internal import DocModel
internal import DocServer
internal import PostgresNIO

/// Server queries as a scan: the rows a target can match (its collection's key range, its
/// single document, or its collection group under its parent), then ``Target/matches(_:)``,
/// the target's order and the limit in memory — exactly the embedded store's semantics.
///
/// This is the whole of query planning for now, kept apart so an indexed planner (field
/// indexes, bounded reads) can replace ``PostgresTenantStore/scanQuery(_:limit:)`` behind
/// ``TenantStore/query(_:limit:)`` without touching the rest of the store.
extension PostgresTenantStore {
    /// The rows a target reads before filtering.
    enum Scan {
        /// One document.
        case document([UInt8])
        /// The documents directly in a collection: keys in `[lower, upper)`.
        case collection(lower: [UInt8], upper: [UInt8])
        /// A collection group: `group_id` equal, path keys in the parent's range (`nil`: anywhere).
        case group(id: [UInt8], range: (lower: [UInt8], upper: [UInt8])?)

        init(_ target: Target) {
            if let group = target.collectionGroup {
                self = .group(id: DocumentKeyBytes.group(group),
                              range: DocumentKeyBytes.range(DocumentKeyBytes.descendantsPrefix(target.path)))
            } else if target.path.count % 2 == 0 {
                self = .document(DocumentKeyBytes.key(DocumentKey(unchecked: target.path)))
            } else {
                let prefix = DocumentKeyBytes.collectionPrefix(target.path)
                // A collection prefix ends with the path's end byte (0x01): it always has a successor.
                let range = DocumentKeyBytes.range(prefix) ?? (prefix, prefix + OrderedCode.infinity)
                self = .collection(lower: range.lower, upper: range.upper)
            }
        }

        /// The statement: `(last_version, body?)` rows, the tenant's row joined so the version
        /// and the documents come from one snapshot.
        func statement(tenant: String) -> PostgresQuery {
            switch self {
            case .document(let key):
                return """
                    SELECT t.last_version, d.body FROM doccache_tenants t
                    LEFT JOIN doccache_documents d ON d.tenant = t.tenant AND d.doc_key = \(ByteBuffer(bytes: key))
                    WHERE t.tenant = \(tenant)
                    """
            case .collection(let lower, let upper):
                return """
                    SELECT t.last_version, d.body FROM doccache_tenants t
                    LEFT JOIN doccache_documents d ON d.tenant = t.tenant
                        AND d.doc_key >= \(ByteBuffer(bytes: lower)) AND d.doc_key < \(ByteBuffer(bytes: upper))
                    WHERE t.tenant = \(tenant)
                    """
            case .group(let id, let range?):
                return """
                    SELECT t.last_version, d.body FROM doccache_tenants t
                    LEFT JOIN doccache_documents d ON d.tenant = t.tenant AND d.group_id = \(ByteBuffer(bytes: id))
                        AND d.path_key >= \(ByteBuffer(bytes: range.lower)) AND d.path_key < \(ByteBuffer(bytes: range.upper))
                    WHERE t.tenant = \(tenant)
                    """
            case .group(let id, nil):
                return """
                    SELECT t.last_version, d.body FROM doccache_tenants t
                    LEFT JOIN doccache_documents d ON d.tenant = t.tenant AND d.group_id = \(ByteBuffer(bytes: id))
                    WHERE t.tenant = \(tenant)
                    """
            }
        }
    }

    /// ``TenantStore/query(_:limit:)`` by scanning what the target can match.
    func scanQuery(_ target: Target, limit: Int?) async throws(DocError) -> QueryRead {
        let rows = try await database.rows("query \(target) of tenant \(tenant)", Scan(target).statement(tenant: name))
        let (version, bodies) = try versionAndBodies(rows)
        var matches: [Document] = []
        for body in bodies {
            let document = try Document(binary: body)
            if target.matches(document) { matches.append(document) }
        }
        matches.sort { target.compare($0, $1) < 0 }
        if let limit, matches.count > limit { matches.removeSubrange(max(0, limit)...) }
        return QueryRead(version: version, documents: matches)
    }
}

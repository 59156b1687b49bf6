/// Firestore's resource names of documents and collections, `"<database>/documents/<path>"`,
/// as bundles name their documents and queries and as bloom filters hash documents.
public enum ResourceName {
    /// The database part of the names doccache writes. Every tenant uses the same one: a
    /// connection or a bundle belongs to one tenant, so names need not tell tenants apart.
    public static let defaultDatabase = "projects/doccache/databases/(default)"

    /// The name of `path` under `database` (the empty path: the documents root,
    /// `"<database>/documents"`).
    public static func of(_ path: ResourcePath, database: String = defaultDatabase) -> String {
        path.isEmpty ? database + "/documents" : database + "/documents/" + path.canonicalString
    }
}

/// A declared composite index: the fields of the documents of every collection with one
/// collection id, in order, each ascending or descending — Firestore's composite index of
/// query scope "collection".
///
/// Every field already has a single-field index. A composite index serves a query that needs
/// several fields at once: equality filters on its leading fields, then the query's order-bys
/// on the rest, so that `where category == x order by score desc limit 50` reads 50 entries
/// instead of walking `score` and checking `category` document by document.
///
/// ```swift
/// let index = try CompositeIndex(collectionGroup: "items", fields: [
///     .init("category"), .init("score", .descending),
/// ])
/// ```
public struct CompositeIndex: Sendable, Hashable, CustomStringConvertible {
    /// One field of the index.
    public struct Field: Sendable, Hashable {
        /// The field's path in the document.
        public let path: FieldPath
        /// The order of the field's values in the index.
        public let direction: OrderBy.Direction

        /// A field of the index.
        public init(path: FieldPath, _ direction: OrderBy.Direction = .ascending) {
            self.path = path
            self.direction = direction
        }

        /// A field of the index, its path given as dotted text (``FieldPath/init(_:)``).
        ///
        /// - Throws: `invalidArgument` when the path is malformed.
        public init(_ path: String, _ direction: OrderBy.Direction = .ascending) throws(DocError) {
            self.init(path: try FieldPath(path), direction)
        }
    }

    /// The most fields an index has.
    public static let maxFields = 100

    /// The collection id whose collections the index covers (`"items"` covers `items` and
    /// `users/u1/items` alike).
    public let collectionGroup: String
    /// The fields, in index order.
    public let fields: [Field]

    /// An index of `fields` over the collections with id `collectionGroup`.
    ///
    /// - Throws: `invalidArgument` when the collection id is empty or contains `/`, when there
    ///   are fewer than two fields (each field has a single-field index already) or more than
    ///   ``maxFields``, when a field repeats, or when a field is the document id (`__name__`,
    ///   which every index ends with implicitly).
    public init(collectionGroup: String, fields: [Field]) throws(DocError) {
        guard !collectionGroup.isEmpty, !collectionGroup.contains("/") else {
            throw DocError(.invalidArgument, "an index's collection group must be a collection id (non-empty, no \"/\"), not \"\(collectionGroup)\"",
                           at: "collectionGroup")
        }
        guard fields.count >= 2 else {
            throw DocError(.invalidArgument, "a composite index needs at least two fields (every field has a single-field index already); \(collectionGroup) has \(fields.count)",
                           at: "fields")
        }
        guard fields.count <= Self.maxFields else {
            throw DocError(.invalidArgument, "a composite index has at most \(Self.maxFields) fields; \(collectionGroup) has \(fields.count)", at: "fields")
        }
        var seen = Set<FieldPath>()
        for (i, field) in fields.enumerated() {
            guard !field.path.isDocumentID else {
                throw DocError(.invalidArgument, "\(FieldPath.documentID.canonicalString) cannot be an index field: every index ends with the document id",
                               at: "fields[\(i)]")
            }
            guard seen.insert(field.path).inserted else {
                throw DocError(.invalidArgument, "field \(field.path.canonicalString) appears twice in the index of \(collectionGroup)", at: "fields[\(i)]")
            }
        }
        self.collectionGroup = collectionGroup
        self.fields = fields
        var id = collectionGroup + "("
        for (i, field) in fields.enumerated() {
            if i > 0 { id += "," }
            id += field.path.canonicalString + " " + field.direction.rawValue
        }
        self.id = id + ")"
    }

    /// The index's identity in storage: the collection id and the fields with their
    /// directions (two declarations of the same index have the same id). Made once: the
    /// cache looks it up with every document it stores.
    public let id: String

    /// The direction of the document id that ends every entry: the last field's, which is
    /// also the direction of a query's implicit order by document id.
    public var documentIDDirection: OrderBy.Direction { fields[fields.count - 1].direction }

    public var description: String { "CompositeIndex(\(id))" }
}

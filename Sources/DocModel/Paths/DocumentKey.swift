/// The path of a document: an even number of segments (`collection/id[/subcollection/id…]`).
public struct DocumentKey: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The document's path: an even, non-zero number of segments.
    public let path: ResourcePath

    /// Parses and validates a document path such as `users/alice`.
    public init(_ path: String) throws(DocError) {
        try self.init(path: ResourcePath(path))
    }

    /// Validates that `path` names a document (even, non-zero number of segments).
    public init(path: ResourcePath) throws(DocError) {
        guard path.count >= 2, path.count % 2 == 0 else {
            throw .invalid(
                "a document path needs an even number of segments (collection/id), got \(path.count)",
                at: "path \"\(path)\"")
        }
        self.path = path
    }

    package init(unchecked path: ResourcePath) {
        self.path = path
    }

    /// The document `id` of the collection `collection` (both already valid: a key read back
    /// from storage or built from a collection reference).
    package init(unchecked collection: ResourcePath, id: String) {
        self.path = ResourcePath(unchecked: collection.segments + [id])
    }

    /// The document id: the last segment.
    public var documentID: String { path.segments[path.count - 1] }

    /// The path of the collection holding this document.
    public var collectionPath: ResourcePath { ResourcePath(unchecked: Array(path.segments.dropLast())) }

    /// The id of the collection holding this document (what a collection-group query matches).
    public var collectionGroup: String { path.segments[path.count - 2] }

    /// Whether the document lives directly in the collection `collection`.
    public func isIn(collection: ResourcePath) -> Bool { collection.isImmediateParent(of: path) }

    public var description: String { path.canonicalString }

    public static func < (a: DocumentKey, b: DocumentKey) -> Bool { a.path < b.path }
}

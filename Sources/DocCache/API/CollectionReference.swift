public import DocModel

/// A collection: a query over its documents, and a place to add new ones.
public struct CollectionReference: Sendable {
    /// The store the collection's queries and writes go to.
    public let store: DocumentStore
    /// The collection's path (an odd number of segments).
    public let path: ResourcePath

    init(store: DocumentStore, path: ResourcePath) throws(DocError) {
        guard path.count % 2 == 1 else {
            throw DocError(.invalidArgument, "a collection path needs an odd number of segments, got \(path.count)",
                           at: "path \"\(path)\"")
        }
        self.init(store: store, validatedPath: path)
    }

    init(store: DocumentStore, validatedPath: ResourcePath) {
        self.store = store
        self.path = validatedPath
    }

    /// The collection id (last path segment).
    public var collectionID: String { path.lastSegment ?? "" }

    /// A query over every document of the collection.
    public var query: DocumentQuery {
        // A validated odd-length path always makes a valid collection query.
        DocumentQuery(store: store, query: (try? Query(collection: path))!)
    }

    /// A new document with an id made on this device (UUIDv7: ids sort by creation time).
    public func document() -> DocumentReference {
        DocumentReference(store: store, key: DocumentKey(unchecked: path, id: UUIDv7.make()))
    }

    /// The document `id` of this collection.
    public func document(_ id: String) throws(DocError) -> DocumentReference {
        DocumentReference(store: store, key: try DocumentKey(path: path.appending(id)))
    }

    /// Creates a document with a device-made id (UUIDv7) and `data`.
    @discardableResult
    public func addDocument(data: [String: FieldValue]) async throws(DocError) -> (DocumentReference, WriteHandle) {
        let reference = document()
        return (reference, try await reference.setData(data))
    }

    // The query builders, reads and listeners come from QueryBuilder.
}

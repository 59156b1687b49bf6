public import DocModel

/// Several writes committed as one batch: accepted locally together, sent together, and
/// applied by the server all or nothing.
///
/// Build it with the mutating methods (each validates its input at once), then ``commit()``.
public struct WriteBatch: Sendable {
    let store: DocumentStore
    private(set) var mutations: [Mutation] = []

    init(store: DocumentStore) { self.store = store }

    public var count: Int { mutations.count }

    public mutating func setData(_ data: [String: FieldValue], for document: DocumentReference, merge: Bool = false) throws(DocError) {
        mutations.append(merge ? try UserDataParser.setMerge(document.key, data) : try UserDataParser.set(document.key, data))
    }

    public mutating func updateData(_ fields: [String: FieldValue], for document: DocumentReference) throws(DocError) {
        mutations.append(try UserDataParser.update(document.key, fields))
    }

    public mutating func updateData(_ fields: [String: FieldValue], for document: DocumentReference, ifVersion version: SnapshotVersion) throws(DocError) {
        mutations.append(try UserDataParser.update(document.key, fields, precondition: .updateTime(version)))
    }

    /// A tombstone delete (see ``DocumentReference/delete()``).
    public mutating func delete(_ document: DocumentReference) { mutations.append(.tombstone(document.key)) }

    /// A hard delete (see ``DocumentReference/purge()``).
    public mutating func purge(_ document: DocumentReference) { mutations.append(.delete(document.key)) }

    /// Queues the batch (durable when this returns).
    @discardableResult
    public func commit() async throws(DocError) -> WriteHandle {
        try await store.write(mutations)
    }
}

public import DocModel

/// Several writes committed as one batch: accepted locally together, sent together, and
/// applied by the server all or nothing.
///
/// Build it with the mutating methods, then ``commit()``. Each method checks its write when
/// it is added — the data (size, depth, field names, transforms) and the batch's size (at most
/// ``DocumentLimits/maxWritesPerBatch`` writes) — and throws `invalidArgument` without
/// changing the batch, so a bad write is reported where it is made, not at `commit()`.
public struct WriteBatch: Sendable {
    let store: DocumentStore
    private(set) var mutations: [Mutation] = []

    init(store: DocumentStore) { self.store = store }

    /// The writes added so far.
    public var count: Int { mutations.count }

    /// Adds a write of the document: a replacement, or with `merge` only the given fields (see
    /// ``DocumentReference/setData(_:merge:)``).
    ///
    /// - Throws: `invalidArgument` for bad data or a full batch; the batch is unchanged.
    public mutating func setData(_ data: [String: FieldValue], for document: DocumentReference, merge: Bool = false) throws(DocError) {
        try add(merge ? try UserDataParser.setMerge(document.key, data) : try UserDataParser.set(document.key, data))
    }

    /// Adds an update of fields of an existing document (see
    /// ``DocumentReference/updateData(_:)``: the whole batch is rejected when it does not exist).
    ///
    /// - Throws: `invalidArgument` for bad field paths or data, or a full batch; the batch is
    ///   unchanged.
    public mutating func updateData(_ fields: [String: FieldValue], for document: DocumentReference) throws(DocError) {
        try add(try UserDataParser.update(document.key, fields))
    }

    /// Adds an update that applies only if the document is still at `version` when the server
    /// commits (see ``DocumentReference/updateData(_:ifVersion:)``: otherwise the whole batch is
    /// rejected with `failedPrecondition`).
    ///
    /// - Throws: `invalidArgument` for bad field paths or data, or a full batch; the batch is
    ///   unchanged.
    public mutating func updateData(_ fields: [String: FieldValue], for document: DocumentReference, ifVersion version: SnapshotVersion) throws(DocError) {
        try add(try UserDataParser.update(document.key, fields, precondition: .updateTime(version)))
    }

    /// A tombstone delete (see ``DocumentReference/delete()``).
    ///
    /// - Throws: `invalidArgument` when the batch already has
    ///   ``DocumentLimits/maxWritesPerBatch`` writes.
    public mutating func delete(_ document: DocumentReference) throws(DocError) { try add(.tombstone(document.key)) }

    /// A hard delete (see ``DocumentReference/purge()``).
    ///
    /// - Throws: `invalidArgument` when the batch already has
    ///   ``DocumentLimits/maxWritesPerBatch`` writes.
    public mutating func purge(_ document: DocumentReference) throws(DocError) { try add(.delete(document.key)) }

    private mutating func add(_ mutation: Mutation) throws(DocError) {
        try DocumentLimits.validateBatchSize(mutations.count + 1)
        try mutation.validate()
        mutations.append(mutation)
    }

    /// Queues the batch (durable when this returns).
    @discardableResult
    public func commit() async throws(DocError) -> WriteHandle {
        try await store.write(mutations, prevalidated: true)
    }
}

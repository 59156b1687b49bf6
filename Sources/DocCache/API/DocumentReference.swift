public import DocModel

/// A document location. Creating a reference touches nothing; its methods read and write.
public struct DocumentReference: Sendable, Hashable {
    /// The store the reference reads from and writes to.
    public let store: DocumentStore
    /// The document's key (its validated path).
    public let key: DocumentKey

    init(store: DocumentStore, key: DocumentKey) {
        self.store = store
        self.key = key
    }

    public static func == (a: DocumentReference, b: DocumentReference) -> Bool { a.key == b.key && a.store === b.store }
    public func hash(into hasher: inout Hasher) { hasher.combine(key) }

    /// The document's path, slash-separated (`rooms/r1/messages/m1`).
    public var path: String { key.description }
    /// The last segment of the path.
    public var documentID: String { key.documentID }
    /// The collection the document is in.
    public var parent: CollectionReference { CollectionReference(store: store, validatedPath: key.collectionPath) }

    /// The sub-collection `id` of this document.
    public func collection(_ id: String) throws(DocError) -> CollectionReference {
        try CollectionReference(store: store, path: key.path.appending(id))
    }

    // MARK: - Writes

    /// Writes the document: replaces it, or with `merge` writes only the given fields (nested
    /// maps merge field by field).
    @discardableResult
    public func setData(_ data: [String: FieldValue], merge: Bool = false) async throws(DocError) -> WriteHandle {
        let mutation = merge ? try UserDataParser.setMerge(key, data) : try UserDataParser.set(key, data)
        return try await store.write([mutation])
    }

    /// Updates fields of an existing document. Keys are field paths (`"address.city"`); the
    /// write is rejected with `notFound` when the document does not exist on the server.
    @discardableResult
    public func updateData(_ fields: [String: FieldValue]) async throws(DocError) -> WriteHandle {
        try await store.write([UserDataParser.update(key, fields)])
    }

    /// Updates fields only if the document is still at `version` when the server commits
    /// ("compare before commit"); otherwise the write is rejected with `failedPrecondition`
    /// and undone locally.
    @discardableResult
    public func updateData(_ fields: [String: FieldValue], ifVersion version: SnapshotVersion) async throws(DocError) -> WriteHandle {
        try await store.write([UserDataParser.update(key, fields, precondition: .updateTime(version))])
    }

    /// Deletes the document as a tombstone: `deletedAt` and `updatedAt` are set to the commit
    /// time, queries and listeners stop showing it (a `removed` change) unless they include
    /// deleted documents.
    @discardableResult
    public func delete() async throws(DocError) -> WriteHandle {
        try await store.write([.tombstone(key)])
    }

    /// Removes the document for good (a hard delete, subject to the server's rules).
    @discardableResult
    public func purge() async throws(DocError) -> WriteHandle {
        try await store.write([.delete(key)])
    }

    // MARK: - Reads

    /// Reads the document once.
    ///
    /// - `.server`: the document as the server has it now (a one-off listen that waits until
    ///   the server marks it current); `unavailable` while offline.
    /// - `.cache`: the cache only, at once.
    /// - `.default`: the server while the store is online, the cache otherwise.
    public func getDocument(source: Source = .default) async throws(DocError) -> DocumentSnapshot {
        let core = store.core
        let online = await core.isOnline
        if source == .server || (source == .default && online) {
            return try await DocumentQuery(store: store, query: Query(document: key).includingDeleted()).serverSnapshot().documentSnapshot(for: key)
        }
        let document = try await core.readDocument(key)
        return DocumentSnapshot(key: key, document: document, fromCache: true)
    }

    /// Calls `callback` with the document now (from the cache) and after every change, on the
    /// store's ``DocumentStore/callbackQueue``. `source: .cache` never asks the server (see
    /// ``ListenSource``).
    public func addSnapshotListener(
        includeMetadataChanges: Bool = false, source: ListenSource = .default, scope: ListenerScope? = nil,
        _ callback: @escaping @Sendable (Result<DocumentSnapshot, DocError>) -> Void
    ) async throws(DocError) -> ListenerRegistration {
        let key = self.key
        return try await DocumentQuery(store: store, query: Query(document: key).includingDeleted()).register(
            includeMetadataChanges: includeMetadataChanges, source: source, scope: scope, bounded: false, on: store.callbackQueue
        ) { result in
            callback(result.map { $0.documentSnapshot(for: key) })
        }
    }

    /// The document now (from the cache) and after every change, as an async sequence that
    /// throws ``DocError``. Ending the iteration (or cancelling its task) removes the listener.
    public func snapshots(includeMetadataChanges: Bool = false, source: ListenSource = .default, scope: ListenerScope? = nil)
        -> SnapshotSequence<DocumentSnapshot>
    {
        let key = self.key
        return SnapshotSequence(DocumentQuery(store: store, query: Query(document: key).includingDeleted())
            .stream(includeMetadataChanges: includeMetadataChanges, source: source, scope: scope, bounded: false) {
                $0.documentSnapshot(for: key)
            })
    }
}

extension ViewSnapshot {
    func documentSnapshot(for key: DocumentKey) -> DocumentSnapshot {
        DocumentSnapshot(key: key, document: documents.document(for: key), fromCache: isFromCache)
    }
}

package import DocModel

/// An immutable capture of a query's results and of how they changed since the previous
/// snapshot of the same view.
package struct ViewSnapshot: Sendable, Equatable {
    /// The query whose results these are.
    package var query: Query
    /// The results, in query order.
    package var documents: DocumentSet
    /// The results of the previous snapshot (empty for a first snapshot).
    package var oldDocuments: DocumentSet
    /// The changes from ``oldDocuments`` to ``documents``: removals, additions, then
    /// modifications (and metadata-only changes), each in query order.
    package var documentChanges: [DocumentViewChange]
    /// The keys of the results that have pending local writes.
    package var mutatedKeys: Set<DocumentKey>
    /// Whether the results may not reflect the server: the view is not current, or some
    /// of its documents are in limbo.
    package var isFromCache: Bool
    /// Whether the view's sync state (from cache or synced) changed with this snapshot.
    package var syncStateChanged: Bool
    /// Whether metadata-only changes were stripped from ``documentChanges`` (the listener did
    /// not ask for them).
    package var excludesMetadataChanges: Bool
    /// Whether the target had been synced before (the event carried a resume token), so
    /// empty results from the cache are meaningful.
    package var hasCachedResults: Bool

    package init(
        query: Query, documents: DocumentSet, oldDocuments: DocumentSet,
        documentChanges: [DocumentViewChange], mutatedKeys: Set<DocumentKey>, isFromCache: Bool,
        syncStateChanged: Bool, excludesMetadataChanges: Bool, hasCachedResults: Bool = false
    ) {
        self.query = query
        self.documents = documents
        self.oldDocuments = oldDocuments
        self.documentChanges = documentChanges
        self.mutatedKeys = mutatedKeys
        self.isFromCache = isFromCache
        self.syncStateChanged = syncStateChanged
        self.excludesMetadataChanges = excludesMetadataChanges
        self.hasCachedResults = hasCachedResults
    }

    /// A first snapshot: every document of `documents` reported as added, in order, with empty
    /// old documents and ``syncStateChanged`` set.
    package static func fromInitialDocuments(
        query: Query, documents: DocumentSet, mutatedKeys: Set<DocumentKey>, isFromCache: Bool,
        excludesMetadataChanges: Bool, hasCachedResults: Bool
    ) -> ViewSnapshot {
        ViewSnapshot(
            query: query, documents: documents, oldDocuments: DocumentSet(query: query),
            documentChanges: documents.map { DocumentViewChange(.added, $0) }, mutatedKeys: mutatedKeys,
            isFromCache: isFromCache, syncStateChanged: true, excludesMetadataChanges: excludesMetadataChanges,
            hasCachedResults: hasCachedResults)
    }

    /// Whether any result has pending local writes.
    package var hasPendingWrites: Bool { !mutatedKeys.isEmpty }

    /// This snapshot without its metadata-only document changes, marked as such.
    package func excludingMetadataChanges() -> ViewSnapshot {
        var copy = self
        copy.documentChanges = documentChanges.filter { $0.kind != .metadata }
        copy.excludesMetadataChanges = true
        return copy
    }
}

extension ViewSnapshot: CustomStringConvertible {
    package var description: String {
        "ViewSnapshot(\(query.canonicalID), documents: \(documents.count), changes: \(documentChanges), "
            + "fromCache: \(isFromCache), pendingWrites: \(mutatedKeys.count), "
            + "syncStateChanged: \(syncStateChanged), excludesMetadataChanges: \(excludesMetadataChanges), "
            + "hasCachedResults: \(hasCachedResults))"
    }
}

package import DocModel

/// What a local write produced: the batch it was queued as and the new local view of every
/// document it touched (`nil` where the document does not exist locally), each document once,
/// in the order of its first write (a list, not a dictionary: it is only ever walked).
package struct LocalWriteResult: Sendable {
    package var batchID: BatchID
    package var localWriteTime: Timestamp
    package var changes: [(key: DocumentKey, value: MaybeDocument?)]
}

/// The documents of a query from the cache, and the keys the server last said match its target.
package struct QueryResult: Sendable {
    /// The matching documents, each key once; in the query's order (or its reverse) when the
    /// engine walked an index, which makes sorting them cheap.
    package var documents: [Document]
    package var remoteKeys: Set<DocumentKey>
}

/// The keys a view added and removed, reported back so the local store can keep the documents
/// of active views from being garbage collected.
package struct LocalViewChanges: Sendable {
    package var targetID: TargetID
    package var fromCache: Bool
    package var addedKeys: Set<DocumentKey>
    package var removedKeys: Set<DocumentKey>

    package init(targetID: TargetID, fromCache: Bool, addedKeys: Set<DocumentKey>, removedKeys: Set<DocumentKey>) {
        self.targetID = targetID
        self.fromCache = fromCache
        self.addedKeys = addedKeys
        self.removedKeys = removedKeys
    }
}

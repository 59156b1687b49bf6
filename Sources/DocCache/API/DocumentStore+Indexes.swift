public import DocModel

extension DocumentStore {
    /// Declares the composite indexes of the cache, replacing the previous declaration, and
    /// returns once every cached document is in them.
    ///
    /// Every field of a cached document has a single-field index, so a limited query ordered
    /// by one field walks that field's index and reads about what it returns (its range
    /// filters on that field bound the walk). A query that combines equality filters
    /// with an order on another field (`where category == x order by score desc limit 50`)
    /// walks the order's index and checks the filter document by document; a composite index of
    /// (`category`, `score` descending) lets it read exactly the documents it returns. The
    /// same index serves the opposite order (`score` ascending) too.
    ///
    /// A limited query uses a composite index when the index's leading fields are the query's
    /// equality filters and its other fields are exactly the query's order-bys, each in the
    /// index's direction or each in the opposite one. Its range filters on the first order-by
    /// field bound the walk; its other filters are checked on each document read.
    ///
    /// ```swift
    /// try await store.setIndexConfiguration([
    ///     CompositeIndex(collectionGroup: "items", fields: [.init("category"), .init("score", .descending)]),
    /// ])
    /// ```
    ///
    /// Declare the indexes at every launch: the declaration is kept with the cache, and
    /// declaring the same indexes again costs nothing. A new index is built from the cached
    /// documents in steps of a few thousand documents (writes and listeners of the store run
    /// between steps); queries use it once it is complete. If the store closes before then,
    /// the next open builds it again by itself (from the start: the rows already written are
    /// written again). Indexes no longer declared are dropped with their entries.
    ///
    /// - Throws: whatever the store's persistence throws, `failedPrecondition` when the store
    ///   is closed. A declaration that fails leaves the previous one in place; when a build
    ///   step fails, the new declaration stands and its build goes on in the background.
    public func setIndexConfiguration(_ indexes: [CompositeIndex]) async throws(DocError) {
        var incomplete = try await core.declareCompositeIndexes(indexes)
        do {
            while incomplete {
                incomplete = try await core.backfillCompositeIndexes()
            }
        } catch {
            await core.scheduleCompositeIndexBackfill()
            throw error
        }
    }

    /// Declares the composite indexes of an index configuration file's text, Firestore's
    /// `firestore.indexes.json` format (``DocModel/CompositeIndex/configuration(json:)``) — the
    /// file a server is started with (`docctl serve --indexes`) — as
    /// ``setIndexConfiguration(_:)`` does.
    ///
    /// - Throws: `invalidArgument` naming what is wrong and where when the text is not such a
    ///   file (nothing is declared), else as ``setIndexConfiguration(_:)``.
    public func setIndexConfiguration(json: String) async throws(DocError) {
        try await setIndexConfiguration(try CompositeIndex.configuration(json: json))
    }

    /// The declared composite indexes (``setIndexConfiguration(_:)``), with whether each one
    /// is complete (queries use only complete ones).
    public func indexConfiguration() async -> [(index: CompositeIndex, isComplete: Bool)] {
        await core.declaredCompositeIndexes()
    }
}

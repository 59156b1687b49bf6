package import DocModel

extension LocalStore {
    /// Makes `indexes` the cache's declared composite indexes: those no longer declared are
    /// dropped with their rows, new ones start incomplete (queries do not use them until
    /// ``backfillCompositeIndexes(maxDocuments:)`` has given every cached document its row).
    /// A change of the declared indexes also marks every overlay unindexed
    /// (``OverlayIndex/resetWatermarks(in:)``), so each is indexed again with the new set.
    /// Returns whether an index is incomplete, and whether the declared set changed (the
    /// overlays are then unindexed).
    package func declareCompositeIndexes(_ indexes: [CompositeIndex]) throws(DocError) -> (incomplete: Bool, changed: Bool) {
        let cache = persistence.compositeIndexes
        let (declared, changed) = try persistence.run("Declare composite indexes") { txn throws(DocError) in
            let (declared, changed) = try cache.declare(indexes, in: txn)
            // The overlays' rows follow the declared indexes once indexed again; until then a
            // query reads them directly.
            if changed { try persistence.overlayIndex.resetWatermarks(in: txn) }
            return (declared, changed)
        }
        cache.commitDeclared(declared)
        return (declared.contains { !$0.isComplete }, changed)
    }

    /// Gives up to `maxDocuments` cached documents their rows in an incomplete composite
    /// index (one transaction); returns whether an incomplete index remains.
    package func backfillCompositeIndexes(maxDocuments: Int) throws(DocError) -> Bool {
        let cache = persistence.compositeIndexes
        guard cache.declared.contains(where: { !$0.isComplete }) else { return false }
        let (indexes, cursor, remaining) = try persistence.run("Backfill composite indexes") { txn throws(DocError) in
            try cache.backfill(maxDocuments: maxDocuments, from: persistence.remoteDocuments, in: txn)
        }
        cache.commitDeclared(indexes, cursor: cursor)
        return remaining
    }
}

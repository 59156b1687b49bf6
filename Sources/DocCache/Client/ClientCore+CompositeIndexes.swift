internal import DocModel

extension ClientCore {
    /// Documents given their rows per backfill step (one transaction; other work of the store
    /// runs between steps).
    static let compositeIndexBackfillStep = 2_000

    /// Makes `indexes` the declared composite indexes; returns whether one is incomplete.
    package func declareCompositeIndexes(_ indexes: [CompositeIndex]) throws(DocError) -> Bool {
        try checkOpen()
        let (incomplete, changed) = try localStore.declareCompositeIndexes(indexes)
        // Other indexes mark every overlay unindexed: index them again with the new set.
        if changed && pendingWriteCount > 0 { scheduleOverlayIndexing() }
        return incomplete
    }

    /// One backfill step; returns whether an incomplete index remains.
    package func backfillCompositeIndexes() throws(DocError) -> Bool {
        try checkOpen()
        return try localStore.backfillCompositeIndexes(maxDocuments: Self.compositeIndexBackfillStep)
    }

    /// Continues, one step at a time on the scheduler, an incomplete backfill: one a closed
    /// store left (indexes are declared again by the app's next `setIndexConfiguration`, but
    /// need not wait for it), or one whose step failed in `setIndexConfiguration`.
    func scheduleCompositeIndexBackfill() { Self.scheduleCompositeIndexBackfill(on: scheduler, for: self) }

    /// ``scheduleCompositeIndexBackfill()`` from the initializer.
    nonisolated static func scheduleCompositeIndexBackfill(on scheduler: ActorScheduler, for core: ClientCore) {
        _ = scheduler.schedule(TimerID.compositeIndexBackfill, after: Duration.zero) { [weak core] in
            core?.assumeIsolated { core in
                guard !core.isClosed, core.storageFailure == nil else { return }
                do throws(DocError) {
                    if try core.backfillCompositeIndexes() { core.scheduleCompositeIndexBackfill() }
                } catch {
                    core.storageFailed(error, while: "building a composite index")
                }
            }
        }
    }
}

extension ClientCore {
    /// The declared composite indexes and whether each is complete.
    package func declaredCompositeIndexes() -> [(index: CompositeIndex, isComplete: Bool)] {
        persistence.compositeIndexes.declared.map { ($0.index, $0.isComplete) }
    }
}

extension ClientCore {
    /// The number of composite-index rows stored (tests).
    package func compositeIndexRowCount() throws(DocError) -> Int {
        try checkOpen()
        return try persistence.run("Count composite index rows") { txn throws(DocError) in try Self.compositeIndexRows(in: txn).count }
    }

    /// Deletes every composite-index row but keeps the declarations as they are (tests: a
    /// query the index serves then shows that it reads the index).
    package func deleteCompositeIndexRows() throws(DocError) {
        try checkOpen()
        try persistence.run("Delete composite index rows") { txn throws(DocError) in
            for row in try Self.compositeIndexRows(in: txn) { txn.delete(row) }
        }
    }

    private static func compositeIndexRows(in txn: PersistenceTransaction) throws(DocError) -> [[UInt8]] {
        var rows: [[UInt8]] = []
        for table in [KeySchema.Table.compositeIndex, .compositeUnindexed] {
            for entry in txn.scan(prefix: table.prefix) { rows.append(entry.key) }
        }
        if let failure = txn.failure { throw failure }
        return rows
    }
}

import DocModel

extension LocalStore {
    /// Indexes the overlays of up to `maxBatches` pending batches above the overlay index's
    /// watermark (each document once, with its overlay as it is now) and raises the watermark
    /// to the last of them, in one transaction (``OverlayIndex``). Returns whether pending
    /// batches above the watermark remain.
    package func indexOverlays(maxBatches: Int) throws(DocError) -> Bool {
        precondition(maxBatches > 0, "indexOverlays needs a positive batch count")
        return try persistence.run("Index overlays") { txn throws(DocError) in
            let index = persistence.overlayIndex
            let watermark = try index.watermark(user: user, in: txn)
            let step = try queue.nextBatches(after: watermark, limit: maxBatches, in: txn)
            guard let last = step.last else { return false }
            var indexed = Set<DocumentKey>()
            for batch in step {
                for mutation in batch.mutations where indexed.insert(mutation.key).inserted {
                    let overlay = try persistence.overlays.overlay(for: mutation.key, user: user, in: txn)
                    try index.update(mutation.key, to: overlay?.document, user: user, in: txn)
                }
            }
            index.setWatermark(last.batchID, user: user, in: txn)
            // A short step took every batch there was.
            guard step.count == maxBatches else { return false }
            return try queue.highestUnacknowledgedBatchID(in: txn) > last.batchID
        }
    }

    /// How many pending batches are above the overlay index's watermark, counting up to
    /// `limit` (a cheap check: stops there).
    package func unindexedOverlayBatches(upTo limit: Int) throws(DocError) -> Int {
        try persistence.run("Unindexed overlays") { txn throws(DocError) in
            let watermark = try persistence.overlayIndex.watermark(user: user, in: txn)
            return try queue.nextBatches(after: watermark, limit: limit, in: txn).count
        }
    }
}

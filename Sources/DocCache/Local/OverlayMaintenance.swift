import DocModel

/// Keeps a user's overlays equal to "the remote document with every pending batch that
/// writes it applied, in batch order" when a batch leaves the queue (acknowledged, rejected,
/// reverted) or a remote document changes, re-applying only the batches whose result can
/// differ.
///
/// A document's overlay is the end of a chain: its base (the remote document) through each of
/// its pending batches. When the oldest batch of the document leaves the queue, or its remote
/// document changes, only the start of the chain changes: the old chain went on from `old`
/// (e.g. the local view right after the acknowledged batch), the new one goes on from `new`
/// (e.g. the remote document with the server's result). Both are run through the remaining
/// batches in lockstep; as soon as they give the identical document (every field, flag and
/// version: `MaybeDocument`'s `==`, structural for values), the rest of the chain gives
/// identical results, so the stored overlay is still right and nothing more is read. They
/// converge at the first remaining batch whenever the server's result is what the local view
/// assumed (the usual case: no other writer), so syncing N queued writes to one document costs
/// O(N) instead of O(N²). When the server's values differ (another client's increments, server
/// timestamps, which also carry the previous value into later pending timestamps), the chains
/// may never converge: the new overlay is then the end of the new chain, as a full recompute
/// would give, at the cost of the remaining chain.
///
/// Like the full recompute it replaces, a batch counts for a document only through its
/// `mutations` (not base mutations), and the overlay's largest batch id is the last such batch.
struct OverlayMaintenance {
    let persistence: Persistence
    let user: String

    private var queue: MutationQueue { persistence.mutationQueue(for: user) }

    /// The overlay of `key` after the start of its chain of pending batches changed from `old`
    /// to `new`. The chain is the batches with ids above `afterBatchID` (all of them when `nil`);
    /// the caller guarantees that no other pending batch writes `key`.
    func rebase(
        _ key: DocumentKey, from old: MaybeDocument?, to new: MaybeDocument?, batchesAfter afterBatchID: BatchID?,
        in txn: PersistenceTransaction
    ) throws(DocError) {
        var old = old, new = new
        var largest: BatchID?
        var converged = false
        try queue.forEachBatch(affecting: key, after: afterBatchID, in: txn) { batch throws(DocError) in
            guard batch.mutations.contains(where: { $0.key == key }) else { return true }
            old = batch.applyToLocalView(old, for: key)
            new = batch.applyToLocalView(new, for: key)
            largest = batch.batchID
            converged = old == new
            return !converged
        }
        // Converged: the stored overlay (the end of the old chain) is the end of the new one.
        if converged { return }
        // A whole chain without a batch: the key has no overlay to remove (one exists only
        // while a pending batch writes the key). Deleting it anyway would leave a LevelDB
        // deletion marker per remote document, and every later seek into the overlays (or
        // the tables before them) would step over them all until a compaction drops them.
        if afterBatchID == nil && largest == nil { return }
        try store(new, largest: largest, for: key, in: txn)
    }

    /// The overlay of `key` after `removed` left the queue, when `old` is the local view the
    /// chain had right after `removed` and `new` is what the rest of the chain starts from now.
    /// Falls back to a full recompute when an older pending batch writes `key` (the removed
    /// batch was not the first of the chain, e.g. a revert of a later write).
    func rebase(
        _ key: DocumentKey, removing removed: BatchID, from old: MaybeDocument?, to new: MaybeDocument?,
        in txn: PersistenceTransaction
    ) throws(DocError) {
        if try queue.hasBatch(affecting: key, before: removed, in: txn) {
            try recompute([key], in: txn)
        } else {
            try rebase(key, from: old, to: new, batchesAfter: removed, in: txn)
        }
    }

    /// Rebuilds the overlay of each key from its remote document and every pending batch that
    /// writes it (in batch order); removes it when no batch does.
    func recompute(_ keys: Set<DocumentKey>, in txn: PersistenceTransaction) throws(DocError) {
        guard !keys.isEmpty else { return }
        let batches = try queue.batchesAffecting(keys, in: txn)
        let batchKeys = batches.map(\.keys)
        let remote = try persistence.remoteDocuments.getAll(keys, in: txn)
        for key in keys {
            var document = remote[key]
            var largest: BatchID?
            for (index, batch) in batches.enumerated() where batchKeys[index].contains(key) {
                document = batch.applyToLocalView(document, for: key)
                largest = batch.batchID
            }
            try store(document, largest: largest, for: key, in: txn)
        }
    }

    /// Stores (or removes) the overlay of `key` with its overlay index rows: outside the
    /// local-write path, an overlay's rows are kept exact (``OverlayIndex``).
    private func store(_ document: MaybeDocument?, largest: BatchID?, for key: DocumentKey, in txn: PersistenceTransaction) throws(DocError) {
        if let largest, let document {
            try persistence.overlays.save(Overlay(key: key, largestBatchID: largest, document: document), user: user, in: txn)
            try persistence.overlayIndex.update(key, to: document, user: user, in: txn)
        } else {
            try persistence.overlays.remove(key, user: user, in: txn)
            try persistence.overlayIndex.update(key, to: nil, user: user, in: txn)
        }
    }
}

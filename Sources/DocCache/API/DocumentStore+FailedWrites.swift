public import DocModel

/// Failed writes: batches the server rejected, kept for the user (``FailedWrite``).
///
/// A rejected write is undone locally at once (the local view shows the server's version
/// again) and reported on ``writeErrors()``; its data is not lost: it stays here, across
/// restarts, until the app retries, resolves or discards it. Request documents keep their
/// rejection in the request document itself (``RequestHandle``); an outbox screen lists both
/// (docs/failed-writes.md).
extension DocumentStore {
    /// The failed writes, oldest first.
    public func failedWrites() async throws(DocError) -> [FailedWrite] {
        try await core.failedWrites().map(FailedWrite.init)
    }

    /// One failed write (`notFound` for an unknown id, or one already retried, resolved or
    /// discarded).
    public func failedWrite(_ id: Int) async throws(DocError) -> FailedWrite {
        FailedWrite(try await core.failedWrite(id))
    }

    /// The failed writes now and after every change (a rejection, a retry, a resolution, a
    /// discard, a newer server version of one of their documents), from the moment this is
    /// called. The sequence ends when the store closes, or when the list cannot be read (the
    /// next ``failedWrites()`` then throws why).
    public func failedWriteUpdates() -> AsyncStream<[FailedWrite]> {
        let core = self.core
        return core.failedWriteChanges.rereading { try? await core.failedWrites().map(FailedWrite.init) }
    }

    /// Queues the failed write's own writes again, as a new batch at the end of the queue
    /// (the failed write is removed in the same transaction). Throws `notFound` for an unknown
    /// id, or one already retried or discarded.
    @discardableResult
    public func retryFailedWrite(_ id: Int) async throws(DocError) -> WriteHandle {
        let (batchID, tracker) = try await core.retryFailedWrite(id)
        return WriteHandle(batchID: batchID, tracker: tracker)
    }

    /// Queues `batch` (the user's edited writes, built with ``batch()``) in place of the
    /// failed write, which is removed in the same transaction. Limits are checked before
    /// anything changes: on an error the failed write is still there.
    @discardableResult
    public func retryFailedWrite(_ id: Int, with batch: WriteBatch) async throws(DocError) -> WriteHandle {
        let (batchID, tracker) = try await core.retryFailedWrite(id, with: batch.mutations, prevalidated: true)
        return WriteHandle(batchID: batchID, tracker: tracker)
    }

    /// Turns the user's choice on `failed` — as the conflict screen showed it — into a write
    /// conditioned on the server's version in its ``FailedWrite/conflicts``, so a change made
    /// on the server since is caught (a new failed write) rather than overwritten, and
    /// removes the failed write in the same transaction. ``FailedWrite/Resolution/theirs``
    /// writes nothing and returns `nil`.
    @discardableResult
    public func resolveFailedWrite(_ failed: FailedWrite, keeping resolution: FailedWrite.Resolution) async throws(DocError) -> WriteHandle? {
        guard let mutations = try failed.mutations(resolving: resolution) else {
            try await core.discardFailedWrite(failed.id)
            return nil
        }
        let (batchID, tracker) = try await core.retryFailedWrite(failed.id, with: mutations)
        return WriteHandle(batchID: batchID, tracker: tracker)
    }

    /// Drops a failed write for good. Throws `notFound` for an unknown id, or one already
    /// retried or discarded.
    public func discardFailedWrite(_ id: Int) async throws(DocError) {
        try await core.discardFailedWrite(id)
    }

    /// Whether a rejection with `code` is a conflict with the server's data, whose current
    /// version the conflict view needs.
    static func isConflict(_ code: DocError.Code) -> Bool {
        code == .failedPrecondition || code == .aborted || code == .notFound || code == .alreadyExists
    }

    /// For as long as the store is open: after each conflict rejection, reads the batch's
    /// documents from the server (one read each, as `getDocument(source: .server)`), so that
    /// the failed write's conflict view shows the server's current version rather than the
    /// one cached before, then publishes the failed writes again. A read that fails (offline,
    /// denied) leaves the cached version; the app can read the document itself later.
    func refreshConflictsAfterRejections() {
        let rejections = core.writeErrors.stream()
        Task { [weak self] in
            for await rejection in rejections where Self.isConflict(rejection.error.code) {
                guard let self else { return }
                var refreshed = false
                for path in rejection.paths {
                    guard let reference = try? document(path) else { continue }
                    if (try? await reference.getDocument(source: .server)) != nil { refreshed = true }
                }
                if refreshed { await core.failedWritesMayHaveChanged() }
            }
        }
    }
}

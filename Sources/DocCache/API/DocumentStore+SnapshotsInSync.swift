extension DocumentStore {
    /// Calls `callback` once right away and then each time every snapshot listener of the store
    /// has been given the snapshots of one change: at that moment all listeners show the same
    /// state of the cache (as Firestore's `addSnapshotsInSyncListener`). Use it to update a
    /// screen built from several listeners at once, never half of it.
    ///
    /// The callback runs on ``callbackQueue``, after the snapshots of the same change have been
    /// handed to their listeners' callbacks on that queue.
    ///
    /// - Throws: the store's failure when it is closed or has failed.
    public func addSnapshotsInSyncListener(_ callback: @escaping @Sendable () -> Void) async throws(DocError) -> ListenerRegistration {
        let flag = RemovalFlag()
        let send = flag.gate(on: callbackQueue) { (_: Void) in callback() }
        let id = try await core.addSnapshotsInSyncListener { send(()) }
        let core = self.core
        return ListenerRegistration(flag: flag) { await core.removeSnapshotsInSyncListener(id) }
    }

    /// The moments when every snapshot listener shows the same state (see
    /// ``addSnapshotsInSyncListener(_:)``), as an async sequence: one element right away, then
    /// one after each change. Ending the iteration removes the listener; the sequence ends
    /// when the store closes or fails (or is already closed).
    public func snapshotsInSync() -> AsyncStream<Void> {
        AsyncStream { continuation in
            let core = self.core
            let task = Task { () -> SnapshotsInSyncListenerID? in
                do {
                    return try await core.addSnapshotsInSyncListener({ continuation.yield() }, ended: { continuation.finish() })
                } catch {
                    continuation.finish()
                    return nil
                }
            }
            continuation.onTermination = { _ in
                Task {
                    if let id = await task.value { await core.removeSnapshotsInSyncListener(id) }
                }
            }
        }
    }
}

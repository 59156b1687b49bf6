import DocModel

/// Lets the remote store read the write queue. A storage failure here cannot be handed back
/// to the network layer, so it is reported to `onError` and the remote store sees "nothing
/// to send" until the next attempt. A batch that `isBlocked` (it refers to an attachment not
/// uploaded yet) reads as the end of the queue, so it and every later batch wait, in order.
final class LocalStoreRemoteAdapter: RemoteStoreLocalStore {
    let localStore: LocalStore
    let onError: (DocError) -> Void
    let isBlocked: (MutationBatch) -> Bool

    init(localStore: LocalStore, onError: @escaping (DocError) -> Void, isBlocked: @escaping (MutationBatch) -> Bool) {
        self.localStore = localStore
        self.onError = onError
        self.isBlocked = isBlocked
    }

    func nextMutationBatch(after batchID: BatchID) -> MutationBatch? {
        do {
            guard let batch = try localStore.nextMutationBatch(after: batchID), !isBlocked(batch) else { return nil }
            return batch
        } catch {
            onError(error)
            return nil
        }
    }

    var lastStreamToken: ResumeToken {
        do { return try localStore.lastStreamToken() } catch { onError(error); return [] }
    }

    func setLastStreamToken(_ token: ResumeToken) {
        do { try localStore.setLastStreamToken(token) } catch { onError(error) }
    }

    var lastRemoteSnapshotVersion: SnapshotVersion { localStore.lastRemoteSnapshotVersion }

    var highestUnacknowledgedBatchID: BatchID {
        do { return try localStore.highestUnacknowledgedBatchID() } catch { onError(error); return batchIDUnknown }
    }
}

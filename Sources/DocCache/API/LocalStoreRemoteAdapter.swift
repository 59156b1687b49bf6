import DocModel

/// Lets the remote store read the write queue. A storage failure here cannot be handed back
/// to the network layer, so it is reported to `onError` and the remote store sees "nothing
/// to send" until the next attempt.
final class LocalStoreRemoteAdapter: RemoteStoreLocalStore {
    let localStore: LocalStore
    let onError: (DocError) -> Void

    init(localStore: LocalStore, onError: @escaping (DocError) -> Void) {
        self.localStore = localStore
        self.onError = onError
    }

    func nextMutationBatch(after batchID: BatchID) -> MutationBatch? {
        do { return try localStore.nextMutationBatch(after: batchID) } catch { onError(error); return nil }
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

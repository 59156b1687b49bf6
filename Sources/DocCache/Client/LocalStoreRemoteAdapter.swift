import DocModel

/// Lets the remote store read the write queue. A storage failure here cannot be handed back
/// to the network layer, so it is reported to `onError` (the client core stops the store:
/// ClientCore+StorageFailure.swift) and the remote store sees "nothing to send". A batch that `isBlocked` (it refers to an attachment not
/// uploaded yet) reads as the end of the queue, so it and every later batch wait, in order.
/// The batches a remote store asks for are read in one transaction.
final class LocalStoreRemoteAdapter: RemoteStoreDataSource {
    let localStore: LocalStore
    /// Where storage failures go (set by the client core once it exists).
    var onError: (DocError) -> Void = { _ in }
    let isBlocked: (MutationBatch) -> Bool

    init(localStore: LocalStore, isBlocked: @escaping (MutationBatch) -> Bool) {
        self.localStore = localStore
        self.isBlocked = isBlocked
    }

    func nextMutationBatches(after batchID: BatchID, limit: Int) -> [MutationBatch] {
        do {
            return try localStore.nextMutationBatches(after: batchID, limit: limit) { !isBlocked($0) }
        } catch {
            onError(error)
            return []
        }
    }

    var lastStreamToken: ResumeToken {
        do { return try localStore.lastStreamToken() } catch { onError(error); return [] }
    }

    func setLastStreamToken(_ token: ResumeToken) {
        do { try localStore.setLastStreamToken(token) } catch { onError(error) }
    }

    var lastRemoteSnapshotVersion: SnapshotVersion { localStore.lastRemoteSnapshotVersion }

}

@testable import DocCache
import DocModel

/// A ``RemoteSyncer`` that records every call. Like the sync engine it stands in for, it
/// removes acknowledged and rejected batches from the local store's queue, keeps the stream
/// token of acknowledgements, and advances the last remote snapshot version on remote events.
final class FakeRemoteSyncer: RemoteSyncer {
    private let localStore: FakeRemoteStoreDataSource?

    /// The documents each target has, as `remoteKeys(for:)` answers.
    var remoteKeysByTarget: [TargetID: Set<DocumentKey>] = [:]
    private(set) var remoteEvents: [RemoteEvent] = []
    private(set) var rejectedListens: [(targetID: TargetID, error: DocError)] = []
    private(set) var acknowledgedWrites: [MutationBatchResult] = []
    private(set) var rejectedWrites: [(batchID: BatchID, error: DocError)] = []
    private(set) var onlineStates: [OnlineState] = []
    /// Runs after each call has been recorded (to call back into the remote store).
    var onRemoteEvent: ((RemoteEvent) -> Void)?
    /// Runs when acknowledgements arrive, before they are recorded or their batches leave the
    /// queue.
    var onSuccessfulWrites: (([MutationBatchResult]) -> Void)?

    init(localStore: FakeRemoteStoreDataSource? = nil) {
        self.localStore = localStore
    }

    /// The ids of acknowledged batches, in order.
    var acknowledgedBatchIDs: [BatchID] { acknowledgedWrites.map(\.batch.batchID) }
    /// The ids of rejected batches, in order.
    var rejectedBatchIDs: [BatchID] { rejectedWrites.map(\.batchID) }

    func applyRemoteEvent(_ event: RemoteEvent) {
        remoteEvents.append(event)
        if let localStore, event.snapshotVersion > localStore.lastRemoteSnapshotVersion {
            localStore.lastRemoteSnapshotVersion = event.snapshotVersion
        }
        onRemoteEvent?(event)
    }

    func rejectListen(targetID: TargetID, error: DocError) {
        rejectedListens.append((targetID, error))
    }

    func applySuccessfulWrites(_ results: [MutationBatchResult]) {
        onSuccessfulWrites?(results)
        for result in results {
            acknowledgedWrites.append(result)
            localStore?.removeBatch(result.batch.batchID)
            if let token = result.streamToken { localStore?.setLastStreamToken(token) }
        }
    }

    func rejectFailedWrite(batchID: BatchID, error: DocError) {
        rejectedWrites.append((batchID, error))
        localStore?.removeBatch(batchID)
    }

    func handleOnlineStateChange(_ state: OnlineState) {
        onlineStates.append(state)
    }

    func remoteKeys(for targetID: TargetID) -> Set<DocumentKey> {
        remoteKeysByTarget[targetID] ?? []
    }
}

@testable import DocCache
import DocModel

/// An in-memory ``RemoteStoreDataSource``: a mutation queue, the write stream token and the
/// last remote snapshot version, with every stream token write recorded.
final class FakeRemoteStoreDataSource: RemoteStoreDataSource {
    /// The mutation queue, oldest first.
    private(set) var queue: [MutationBatch] = []
    private(set) var lastStreamToken: ResumeToken = []
    /// Every token passed to `setLastStreamToken`, in order.
    private(set) var streamTokenWrites: [ResumeToken] = []
    var lastRemoteSnapshotVersion: SnapshotVersion = .none
    private var nextBatchID: BatchID = 1

    init() {}


    /// Queues a batch of `mutations` under the next batch id.
    @discardableResult
    func addBatch(_ mutations: [Mutation]) -> MutationBatch {
        let batch = MutationBatch(batchID: nextBatchID, localWriteTime: Timestamp(microseconds: 0), mutations: mutations)
        nextBatchID += 1
        queue.append(batch)
        return batch
    }

    /// Queues a batch setting each of `paths` to `{"v": 1}`.
    @discardableResult
    func addSetBatch(_ paths: String...) -> MutationBatch {
        addBatch(paths.map { .set(RemoteFixtures.key($0), ObjectValue(["v": 1])) })
    }

    /// Removes a batch from the queue (it was acknowledged or rejected).
    func removeBatch(_ batchID: BatchID) {
        queue.removeAll { $0.batchID == batchID }
    }

    /// Empties the queue (e.g. another user's queue is now active).
    func removeAllBatches() {
        queue.removeAll()
    }

    func nextMutationBatches(after batchID: BatchID, limit: Int) -> [MutationBatch] {
        Array(queue.filter { $0.batchID > batchID }.prefix(limit))
    }

    func setLastStreamToken(_ token: ResumeToken) {
        lastStreamToken = token
        streamTokenWrites.append(token)
    }
}

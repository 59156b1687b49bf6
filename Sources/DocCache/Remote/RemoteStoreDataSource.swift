package import DocModel

/// Where the remote store reads and keeps its local state: the write queue it sends from, the
/// write stream's token, and the version of the last remote event applied. `LocalStore` does
/// not conform (its calls throw, and a remote store has no caller to hand an error to):
/// `LocalStoreRemoteAdapter` (Client/) implements it over the `LocalStore` and reports
/// storage failures to the client core, which stops the store; `FakeRemoteStoreDataSource`
/// implements it in memory for the remote store's own tests.
package protocol RemoteStoreDataSource: AnyObject {
    /// The first batches in the mutation queue with ids greater than `batchID` (pass
    /// ``batchIDUnknown`` for the first batches), in order, at most `limit` of them; empty
    /// when there is none.
    func nextMutationBatches(after batchID: BatchID, limit: Int) -> [MutationBatch]
    /// The write stream's token from the last handshake or acknowledgement, persisted with
    /// the mutation queue; empty when there is none.
    var lastStreamToken: ResumeToken { get }
    /// Persists the write stream's token.
    func setLastStreamToken(_ token: ResumeToken)
    /// The version of the last remote event applied: watch snapshots older than it are not
    /// raised again.
    var lastRemoteSnapshotVersion: SnapshotVersion { get }
}

package import DocModel

/// What the remote store needs from the local store. `LocalStore` does not conform (its calls
/// throw): `LocalStoreRemoteAdapter` implements it over the `LocalStore` for `ClientCore`, and
/// `FakeRemoteStoreLocalStore` in memory for the remote store's tests.
package protocol RemoteStoreLocalStore: AnyObject {
    /// The first batch in the mutation queue with an id greater than `batchID` (pass
    /// ``batchIDUnknown`` for the first batch), or `nil` when there is none.
    func nextMutationBatch(after batchID: BatchID) -> MutationBatch?
    /// The write stream's token from the last handshake or acknowledgement, persisted with
    /// the mutation queue; empty when there is none.
    var lastStreamToken: ResumeToken { get }
    /// Persists the write stream's token.
    func setLastStreamToken(_ token: ResumeToken)
    /// The version of the last remote event applied: watch snapshots older than it are not
    /// raised again.
    var lastRemoteSnapshotVersion: SnapshotVersion { get }
    /// The id of the newest batch not yet acknowledged or rejected (``batchIDUnknown`` when the
    /// queue is empty); for the sync engine's "wait for pending writes".
    var highestUnacknowledgedBatchID: BatchID { get }
}

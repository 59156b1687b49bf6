package import DocModel

/// Where the remote store delivers what the server said (implemented by `SyncEngine`).
///
/// All calls happen on the client's serial executor; the syncer may call back into the
/// remote store (listen, stop listening, fill the write pipeline) from them.
package protocol RemoteSyncer: AnyObject {
    /// A consistent snapshot of watch changes arrived.
    func applyRemoteEvent(_ event: RemoteEvent)
    /// The server removed a target with an error (e.g. permission denied); the remote store
    /// no longer listens to it.
    func rejectListen(targetID: TargetID, error: DocError)
    /// The server committed the oldest outstanding batches, in order (one `writeResult`, or
    /// one frame of results).
    func applySuccessfulWrites(_ results: [MutationBatchResult])
    /// The server rejected a batch with a permanent error; it will not be sent again.
    func rejectFailedWrite(batchID: BatchID, error: DocError)
    /// The online state changed.
    func handleOnlineStateChange(_ state: OnlineState)
    /// The documents the sync engine has in the target (its view of the server's results).
    func remoteKeys(for targetID: TargetID) -> Set<DocumentKey>
}

internal import DocModel

/// What the store does when its storage fails outside a call that could report it (while
/// applying what the server sent, acknowledging or rejecting a batch, reading the write queue
/// for the network, collecting garbage, recording sync bookkeeping): it stops, rather than go
/// on from state it could not read or write.
///
/// A stopped store keeps what it had accepted: every write was committed to disk before its
/// call returned and stays in the queue (a batch whose acknowledgement could not be recorded
/// is sent again after a reopen, and the server answers it from its outcome table, exactly
/// once). From the failure on:
/// - every call throws the failure (`dataLoss` for corrupt data, else `internal`, with
///   LevelDB's message), as ``checkOpen()`` reports it;
/// - ``lastSyncError`` is the failure and the sync status's phase is `error`;
/// - every listener gets the failure once and is removed; `waitForPendingWrites` callers and
///   the writes still awaiting their server answer fail with it;
/// - the network is shut down and no upload starts.
/// Closing the store and opening it again starts from what is on disk.
extension ClientCore {
    /// Stops the store after `error` met while `operation` (see above). Only the first
    /// failure counts.
    func storageFailed(_ error: DocError, while operation: String) {
        guard !isClosed, storageFailure == nil else { return }
        let code: DocError.Code = error.code == .dataLoss ? .dataLoss : .internal
        let failure = DocError(
            code,
            "the store stopped after a storage failure while \(operation): \(error.message). Its accepted writes are "
                + "kept on disk; close the store and open it again",
            at: error.location ?? directory)
        storageFailure = failure
        logger.error("the store stopped after a storage failure", metadata: [
            "while": "\(operation)", "code": "\(error.code)", "error": "\(error.message)",
        ])
        remoteStore.shutdown()
        uploadStop.set()
        syncEngine.failCallbacks(with: failure)
        removeAllListeners(delivering: failure)
        publishSyncStatus()
    }
}

extension ClientCore {
    /// Failures to inject into the store's storage (tests of the paths above); `nil`: none.
    package func injectStorageFaults(_ faults: StorageFaults?) {
        persistence.faults = faults
    }
}

public import DocModel

/// Returned by every write once it is accepted locally: the write is durable (a crash of
/// the app loses nothing) and every listener already shows it with `hasPendingWrites`.
public struct WriteHandle: Sendable {
    /// The batch the write was queued as.
    public let batchID: Int
    let tracker: CommitTracker

    /// The commit version once the server acknowledges the write; throws the server's
    /// rejection (the write is then undone locally). Waits as long as the device is offline;
    /// a cancelled task stops waiting and gets `cancelled`, while the write stays queued.
    public var committed: SnapshotVersion {
        get async throws(DocError) { try await tracker.wait() }
    }

    /// Whether the server acknowledged the write already.
    public var isCommitted: Bool {
        if case .success? = tracker.result { return true }
        return false
    }
}

public import DocModel

/// Identifies a write batch: the client that queued it and its id in that client's queue.
public struct BatchKey: Sendable, Hashable, CustomStringConvertible {
    /// The client that queued the batch.
    public var clientID: String
    /// The batch's id in that client's queue.
    public var batchID: Int

    /// The batch `batchID` of the client `clientID` (not validated).
    public init(clientID: String, batchID: Int) {
        self.clientID = clientID
        self.batchID = batchID
    }

    public var description: String { "\(clientID)#\(batchID)" }
}

/// What became of a batch, as the store keeps it (at least ``ServerConfiguration/outcomeRetentionMicros``,
/// 24 h by default; each client's latest for good) so that a re-sent batch gets the same answer
/// and is never applied twice.
public struct BatchOutcome: Sendable, Hashable {
    /// Committed or rejected.
    public enum Result: Sendable, Hashable {
        /// Committed at `version`, with one result per mutation.
        case committed(version: SnapshotVersion, results: [MutationResult])
        /// Rejected as a whole with a permanent error; nothing was stored.
        case rejected(DocError)
    }

    /// The batch.
    public var batch: BatchKey
    /// The user whose connection sent it: a re-sent batch from another user is refused.
    public var uid: String
    /// A digest of the batch's mutations (``BatchDigest``): a re-sent batch with other
    /// contents is refused rather than answered with another batch's outcome.
    public var digest: UInt64
    /// When the outcome was recorded (microseconds since the epoch), for pruning.
    public var recordedAt: Int64
    /// Committed or rejected.
    public var result: Result

    /// Creates an outcome as given; `recordedAt` is in microseconds since the epoch.
    public init(batch: BatchKey, uid: String, digest: UInt64, recordedAt: Int64, result: Result) {
        self.batch = batch
        self.uid = uid
        self.digest = digest
        self.recordedAt = recordedAt
        self.result = result
    }

    /// The commit version, when committed.
    public var commitVersion: SnapshotVersion? {
        if case .committed(let version, _) = result { return version }
        return nil
    }
}

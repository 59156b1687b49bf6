package import DocModel

/// A target as tracked by the local store: the query it runs, its id, its purpose and how
/// far the client has caught up with it.
package struct TargetData: Sendable, Hashable {
    package var target: Target
    package var targetID: TargetID
    package var purpose: QueryPurpose
    /// When the target was last used (LRU).
    package var sequenceNumber: ListenSequenceNumber
    /// The last consistent snapshot version received for this target.
    package var snapshotVersion: SnapshotVersion
    /// The last snapshot at which the target had no documents in limbo; the query engine may
    /// reuse the target's previous results from this version on.
    package var lastLimboFreeSnapshotVersion: SnapshotVersion
    /// The token to resume the target from; empty for "from the start".
    package var resumeToken: ResumeToken
    /// The number of documents the server said match, from an existence filter, if any.
    package var expectedCount: Int?

    package init(
        target: Target, targetID: TargetID, purpose: QueryPurpose, sequenceNumber: ListenSequenceNumber,
        snapshotVersion: SnapshotVersion = .none, lastLimboFreeSnapshotVersion: SnapshotVersion = .none,
        resumeToken: ResumeToken = [], expectedCount: Int? = nil
    ) {
        self.target = target
        self.targetID = targetID
        self.purpose = purpose
        self.sequenceNumber = sequenceNumber
        self.snapshotVersion = snapshotVersion
        self.lastLimboFreeSnapshotVersion = lastLimboFreeSnapshotVersion
        self.resumeToken = resumeToken
        self.expectedCount = expectedCount
    }

    package func withResumeToken(_ token: ResumeToken, snapshotVersion: SnapshotVersion) -> TargetData {
        var copy = self
        copy.resumeToken = token
        copy.snapshotVersion = snapshotVersion
        copy.expectedCount = nil
        return copy
    }

    package func withSequenceNumber(_ n: ListenSequenceNumber) -> TargetData {
        var copy = self
        copy.sequenceNumber = n
        return copy
    }
}

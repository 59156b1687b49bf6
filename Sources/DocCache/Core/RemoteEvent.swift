package import DocModel

/// What changed for one target in a remote event.
package struct TargetChange: Sendable, Hashable {
    /// The token to resume the target from after this event; empty when unchanged.
    package var resumeToken: ResumeToken
    /// The target has caught up with the server ("CURRENT").
    package var current: Bool
    package var addedDocuments: Set<DocumentKey>
    package var modifiedDocuments: Set<DocumentKey>
    package var removedDocuments: Set<DocumentKey>

    package init(
        resumeToken: ResumeToken = [], current: Bool = false, addedDocuments: Set<DocumentKey> = [],
        modifiedDocuments: Set<DocumentKey> = [], removedDocuments: Set<DocumentKey> = []
    ) {
        self.resumeToken = resumeToken
        self.current = current
        self.addedDocuments = addedDocuments
        self.modifiedDocuments = modifiedDocuments
        self.removedDocuments = removedDocuments
    }
}

/// A consistent snapshot of watch changes: everything the server said up to a global
/// snapshot version, aggregated per target and per document.
package struct RemoteEvent: Sendable {
    /// The version the whole event is consistent at.
    package var snapshotVersion: SnapshotVersion
    package var targetChanges: [TargetID: TargetChange]
    /// Targets whose documents must be re-fetched from scratch (existence filter mismatch),
    /// with the purpose to re-listen with.
    package var targetMismatches: [TargetID: QueryPurpose]
    /// New remote state of documents: found, deleted (NoDocument) or unknown.
    package var documentUpdates: [DocumentKey: MaybeDocument]
    /// Limbo documents the event settled (their limbo target got a consistent answer).
    package var resolvedLimboDocuments: Set<DocumentKey>

    package init(
        snapshotVersion: SnapshotVersion, targetChanges: [TargetID: TargetChange] = [:],
        targetMismatches: [TargetID: QueryPurpose] = [:], documentUpdates: [DocumentKey: MaybeDocument] = [:],
        resolvedLimboDocuments: Set<DocumentKey> = []
    ) {
        self.snapshotVersion = snapshotVersion
        self.targetChanges = targetChanges
        self.targetMismatches = targetMismatches
        self.documentUpdates = documentUpdates
        self.resolvedLimboDocuments = resolvedLimboDocuments
    }
}

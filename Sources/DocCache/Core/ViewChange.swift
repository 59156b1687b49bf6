package import DocModel

/// How far a view is in sync with the server.
package enum SyncState: Sendable, Hashable {
    /// No snapshot has been computed yet.
    case none
    /// The results come from the local cache: the target is not current, is being reset, or
    /// has documents in limbo.
    case local
    /// The results match the server at a consistent snapshot.
    case synced
}

/// A document entering or leaving limbo: it is in a view but the server's target does not
/// contain it, so the sync engine must ask the server about it (or may stop asking).
package enum LimboDocumentChange: Sendable, Hashable {
    case added(DocumentKey)
    case removed(DocumentKey)

    /// The document's key.
    package var key: DocumentKey {
        switch self {
        case .added(let key), .removed(let key): return key
        }
    }
}

/// The outcome of ``View/computeDocumentChanges(_:previousChanges:)``: the view's would-be
/// documents and changes, not yet applied.
package struct ViewDocumentChanges: Sendable {
    /// The documents the view would hold.
    package var documentSet: DocumentSet
    /// The changes from the view's current documents to ``documentSet``.
    package var changeSet: DocumentViewChangeSet
    /// The keys of ``documentSet`` with pending local writes.
    package var mutatedKeys: Set<DocumentKey>
    /// Whether the given documents were not enough to fill a limit: a document left the
    /// window (or moved past its edge) of a full limit query, so the query must be re-run
    /// against the whole local cache and the results passed back as `previousChanges`.
    package var needsRefill: Bool
    /// The keys of ``documentSet`` whose document still shows a local write the server has
    /// since acknowledged (the view holds that change back until watch sends the document),
    /// with the version of the acknowledging commit (``View/acknowledgedWrites``).
    package var acknowledgedWrites: [DocumentKey: SnapshotVersion]

    package init(
        documentSet: DocumentSet, changeSet: DocumentViewChangeSet, mutatedKeys: Set<DocumentKey>,
        needsRefill: Bool, acknowledgedWrites: [DocumentKey: SnapshotVersion] = [:]
    ) {
        self.documentSet = documentSet
        self.changeSet = changeSet
        self.mutatedKeys = mutatedKeys
        self.needsRefill = needsRefill
        self.acknowledgedWrites = acknowledgedWrites
    }
}

/// The outcome of applying changes to a view: a snapshot when something visible changed, and
/// the documents that entered or left limbo.
package struct ViewChange: Sendable {
    /// The new snapshot, or `nil` when neither the documents nor the sync state changed.
    package var snapshot: ViewSnapshot?
    /// Limbo documents that appeared or were resolved.
    package var limboChanges: [LimboDocumentChange]

    package init(snapshot: ViewSnapshot?, limboChanges: [LimboDocumentChange] = []) {
        self.snapshot = snapshot
        self.limboChanges = limboChanges
    }
}

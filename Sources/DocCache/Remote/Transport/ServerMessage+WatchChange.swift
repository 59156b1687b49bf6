import DocModel
package import DocProtocol

extension ServerMessage {
    /// The watch stream message this frame carries, for the remote store, with the global
    /// snapshot version when the frame is a global snapshot (`.none` otherwise); `nil` for
    /// frames that are not watch messages.
    ///
    /// | frame | watch change |
    /// |---|---|
    /// | `targetChange` | `.target` (state, target ids, resume token, cause) |
    /// | `documentChange` | `.document` with the found document |
    /// | `documentDelete` | `.document` with a `NoDocument` at the delete's version |
    /// | `documentRemove` | `.document` without a document (it left the targets) |
    /// | `existenceFilter` | `.existenceFilter` (with its bloom filter's parameters) |
    ///
    /// Only a `noChange` target change for all targets (no target ids) with a snapshot
    /// version is a global snapshot; the version of any other target change is dropped.
    package var watchChange: (change: WatchChange, snapshotVersion: SnapshotVersion)? {
        switch self {
        case .targetChange(let change):
            let state: WatchChange.TargetStateChange.State
            switch change.state {
            case .noChange: state = .noChange
            case .added: state = .added
            case .removed: state = .removed
            case .current: state = .current
            case .reset: state = .reset
            }
            let version = change.isGlobalSnapshot ? (change.snapshotVersion ?? .none) : .none
            return (.target(.init(state: state, targetIDs: change.targetIDs, resumeToken: change.resumeToken ?? [], cause: change.cause)),
                    version)
        case .documentChange(let change):
            return (.document(.init(updatedTargetIDs: change.targetIDs, removedTargetIDs: change.removedTargetIDs,
                                    key: change.document.key, document: .document(change.document))),
                    .none)
        case .documentDelete(let delete):
            return (.document(.init(updatedTargetIDs: [], removedTargetIDs: delete.removedTargetIDs, key: delete.key,
                                    document: .noDocument(NoDocument(key: delete.key, version: delete.version)))),
                    .none)
        case .documentRemove(let remove):
            return (.document(.init(updatedTargetIDs: [], removedTargetIDs: remove.removedTargetIDs, key: remove.key, document: nil)),
                    .none)
        case .existenceFilter(let filter):
            return (.existenceFilter(targetID: filter.targetID, count: filter.count, bloomFilter: filter.bloomFilter), .none)
        case .welcome, .writeHandshake, .writeResult, .writeError, .writeResults, .error, .aggregateResult:
            return nil
        }
    }
}

package import DocModel
import DocProtocol

/// What the aggregator needs to know about targets from the layers above it.
package protocol TargetMetadataProvider: AnyObject {
    /// The documents the sync engine currently has in the target (as of the last remote event
    /// it applied).
    func remoteKeys(for targetID: TargetID) -> Set<DocumentKey>
    /// The target, if the client is listening to it; `nil` for targets no longer listened to.
    func targetData(for targetID: TargetID) -> TargetData?
}

/// Accumulates watch stream messages between two global snapshots and turns them into a
/// ``RemoteEvent`` (Firestore's `WatchChangeAggregator`).
///
/// Messages for a target are ignored while requests for it are unanswered (see
/// ``TargetState/isPending``) and once the client stopped listening to it, so a remote event
/// never mixes the state of an old listen with a new one.
package final class WatchChangeAggregator {
    private unowned let metadataProvider: any TargetMetadataProvider
    private var targetStates: [TargetID: TargetState] = [:]
    /// New state of documents, for the next remote event.
    private var pendingDocumentUpdates: [DocumentKey: MaybeDocument] = [:]
    /// The targets each changed document was added to or removed from.
    private var pendingDocumentTargetMappings: [DocumentKey: Set<TargetID>] = [:]
    /// Targets to re-listen from scratch after an existence filter mismatch.
    private var pendingTargetResets: [TargetID: QueryPurpose] = [:]
    /// The database part of the document names in bloom filters.
    private let databaseName: String

    /// Told about every existence filter whose count did not match the client's, and what
    /// became of it (for logs and counters; Firestore's testing hook of the same purpose).
    package var onExistenceFilterMismatch: ((ExistenceFilterMismatch) -> Void)?

    /// Creates an aggregator that asks `metadataProvider` (which must outlive it) about
    /// targets; bloom filters name documents under `databaseName` (see
    /// `ServerMessage.ExistenceFilter.documentName(of:database:)`).
    package init(
        metadataProvider: any TargetMetadataProvider,
        databaseName: String = ServerMessage.ExistenceFilter.databaseName
    ) {
        self.metadataProvider = metadataProvider
        self.databaseName = databaseName
    }

    /// Feeds one watch message. A target removal that carries a cause is an error the remote
    /// store handles itself (it rejects the listen); here it counts as a plain removal.
    package func handle(_ change: WatchChange) {
        switch change {
        case .document(let documentChange): handleDocumentChange(documentChange)
        case .target(let targetChange): handleTargetChange(targetChange)
        case .existenceFilter(let targetID, let count, let bloomFilter):
            handleExistenceFilter(targetID: targetID, count: count, bloomFilter: bloomFilter)
        }
    }

    /// A document was added to, changed in, or removed from targets.
    package func handleDocumentChange(_ change: WatchChange.DocumentChange) {
        if let document = change.document {
            for targetID in change.updatedTargetIDs {
                switch document {
                case .document: addDocument(document, to: targetID)
                case .noDocument: removeDocument(change.key, from: targetID, updatedDocument: document)
                case .unknown: break
                }
            }
        }
        for targetID in change.removedTargetIDs {
            removeDocument(change.key, from: targetID, updatedDocument: change.document)
        }
    }

    /// The state of targets changed (all targets with a state when `targetIDs` is empty).
    package func handleTargetChange(_ change: WatchChange.TargetStateChange) {
        for targetID in targetIDs(of: change) {
            if targetStates[targetID] == nil { targetStates[targetID] = TargetState() }
            switch change.state {
            case .noChange:
                if isActiveTarget(targetID) {
                    targetStates[targetID]?.updateResumeToken(change.resumeToken)
                }
            case .added:
                targetStates[targetID]?.recordTargetResponse()
                if targetStates[targetID]?.isPending == false {
                    // The server is now answering the newest request: drop whatever was
                    // collected for an earlier incarnation of the target (e.g. before an
                    // unwatch and re-watch after an existence filter mismatch).
                    targetStates[targetID]?.clearPendingChanges()
                }
                targetStates[targetID]?.updateResumeToken(change.resumeToken)
            case .removed:
                targetStates[targetID]?.recordTargetResponse()
                if targetStates[targetID]?.isPending == false {
                    removeTarget(targetID)
                }
            case .current:
                if isActiveTarget(targetID) {
                    targetStates[targetID]?.markCurrent()
                    targetStates[targetID]?.updateResumeToken(change.resumeToken)
                }
            case .reset:
                if isActiveTarget(targetID) {
                    // Forget the target's state and remove its known documents; the server
                    // re-sends those that still match before the next global snapshot.
                    resetTarget(targetID)
                    targetStates[targetID]?.updateResumeToken(change.resumeToken)
                }
            }
        }
    }

    /// The server counted `count` documents in the target. When the client's count differs
    /// (it missed removals) and the server sent a usable bloom filter of the target's
    /// documents, the documents the filter rules out leave the target (their views then
    /// resolve them as limbo documents, one document target each); if the count then matches,
    /// that is all. Otherwise — no filter, an invalid or empty one, or a count that still
    /// differs (a false positive kept a removed document) — the target is reset and recorded
    /// as a mismatch, so the remote store re-listens without a resume token, with purpose
    /// ``QueryPurpose/existenceFilterMismatch`` or, after a false positive,
    /// ``QueryPurpose/existenceFilterMismatchBloom`` (as Firestore). For a single-document
    /// target a count of 0 means the document does not exist.
    package func handleExistenceFilter(
        targetID: TargetID, count: Int, bloomFilter parameters: WatchChange.BloomFilterParameters? = nil
    ) {
        guard let targetData = targetDataForActiveTarget(targetID) else { return }
        let target = targetData.target
        if target.isDocumentQuery {
            if count == 0 {
                // Apply the deletion now: otherwise another query could keep showing the
                // document until the limbo resolution completes.
                let key = DocumentKey(unchecked: target.path)
                removeDocument(key, from: targetID, updatedDocument: .noDocument(NoDocument(key: key, version: .none)))
            }
            return
        }
        let localCount = currentDocumentCount(for: targetID)
        guard localCount != count else { return }

        let outcome: ExistenceFilterMismatch.Outcome
        switch Self.bloomFilter(parameters) {
        case .failure(let error):
            outcome = .noUsableBloomFilter(reason: error.message)
        case .success(let filter):
            let removed = removeDocuments(notIn: filter, from: targetID)
            if currentDocumentCount(for: targetID) == count {
                outcome = .resolvedByBloomFilter(removed: removed)
            } else {
                outcome = .bloomFilterFalsePositive(removed: removed)
            }
        }
        switch outcome {
        case .resolvedByBloomFilter:
            break
        case .bloomFilterFalsePositive:
            resetTarget(targetID)
            pendingTargetResets[targetID] = .existenceFilterMismatchBloom
        case .noUsableBloomFilter:
            resetTarget(targetID)
            pendingTargetResets[targetID] = .existenceFilterMismatch
        }
        onExistenceFilterMismatch?(
            ExistenceFilterMismatch(targetID: targetID, localCount: localCount, serverCount: count, outcome: outcome))
    }

    /// The filter the parameters describe, or why there is none to use: absent, invalid
    /// (``BloomFilter/init(bitmap:padding:hashCount:)``) or without bits.
    private static func bloomFilter(_ parameters: WatchChange.BloomFilterParameters?) -> Result<BloomFilter, DocError> {
        guard let parameters else { return .failure(DocError(.invalidArgument, "no bloom filter")) }
        let filter: BloomFilter
        do {
            filter = try BloomFilter(bitmap: parameters.bitmap, padding: parameters.padding, hashCount: parameters.hashCount)
        } catch {
            return .failure(error)
        }
        guard filter.bitCount > 0 else { return .failure(DocError(.invalidArgument, "empty bloom filter")) }
        return .success(filter)
    }

    /// Removes from the target every document the sync engine has in it that `filter`
    /// certainly does not contain; returns how many.
    private func removeDocuments(notIn filter: BloomFilter, from targetID: TargetID) -> Int {
        var removed = 0
        for key in metadataProvider.remoteKeys(for: targetID) {
            let name = ServerMessage.ExistenceFilter.documentName(of: key, database: databaseName)
            if !filter.mightContain(name) {
                removeDocument(key, from: targetID, updatedDocument: nil)
                removed += 1
            }
        }
        return removed
    }

    /// Builds the event for everything collected so far, consistent at `snapshotVersion`,
    /// and starts collecting afresh (resume tokens and `current` flags are kept).
    ///
    /// Single-document targets (limbo resolutions and document listens) that are current but
    /// did not get their document have it synthesized as a `NoDocument` at `snapshotVersion`.
    /// Documents that changed only in limbo-resolution targets are reported in
    /// ``RemoteEvent/resolvedLimboDocuments``.
    package func createRemoteEvent(at snapshotVersion: SnapshotVersion) -> RemoteEvent {
        var targetChanges: [TargetID: TargetChange] = [:]

        for targetID in Array(targetStates.keys) {
            guard let targetData = targetDataForActiveTarget(targetID) else { continue }
            if targetStates[targetID]?.current == true, targetData.target.isDocumentQuery {
                // The server has caught up on a document target without sending the
                // document: it does not exist. Saying so settles the document's limbo state.
                let key = DocumentKey(unchecked: targetData.target.path)
                if pendingDocumentUpdates[key] == nil, !targetContains(targetID, key) {
                    removeDocument(
                        key, from: targetID,
                        updatedDocument: .noDocument(NoDocument(key: key, version: snapshotVersion)))
                }
            }
            if let state = targetStates[targetID], state.hasPendingChanges {
                targetChanges[targetID] = state.targetChange
                targetStates[targetID]?.clearPendingChanges()
            }
        }

        // A document that changed only in limbo-resolution targets is not (as far as this
        // event says) in any query's results; the local store treats such documents
        // specially when collecting garbage.
        var resolvedLimboDocuments: Set<DocumentKey> = []
        for (key, targetIDs) in pendingDocumentTargetMappings {
            let onlyInLimboTargets = targetIDs.allSatisfy { targetID in
                guard let data = targetDataForActiveTarget(targetID) else { return true }
                return data.purpose == .limboResolution
            }
            if onlyInLimboTargets {
                resolvedLimboDocuments.insert(key)
            }
        }

        let event = RemoteEvent(
            snapshotVersion: snapshotVersion, targetChanges: targetChanges, targetMismatches: pendingTargetResets,
            documentUpdates: pendingDocumentUpdates, resolvedLimboDocuments: resolvedLimboDocuments)
        pendingDocumentUpdates.removeAll()
        pendingDocumentTargetMappings.removeAll()
        pendingTargetResets.removeAll()
        return event
    }

    /// A watch or unwatch request for `targetID` was sent: its changes are ignored until the
    /// server answers it.
    package func recordPendingTargetRequest(_ targetID: TargetID) {
        targetStates[targetID, default: TargetState()].recordPendingTargetRequest()
    }

    /// Forgets everything about the target (it was removed, or rejected by the server).
    package func removeTarget(_ targetID: TargetID) {
        targetStates[targetID] = nil
    }

    /// The bookkeeping for a target, if there is any (for tests and diagnostics).
    package func targetState(for targetID: TargetID) -> TargetState? {
        targetStates[targetID]
    }

    // MARK: - Helpers

    /// The targets a target change applies to: its own, or every active target when it
    /// names none.
    private func targetIDs(of change: WatchChange.TargetStateChange) -> [TargetID] {
        if !change.targetIDs.isEmpty { return change.targetIDs }
        return targetStates.keys.filter { isActiveTarget($0) }.sorted()
    }

    private func addDocument(_ document: MaybeDocument, to targetID: TargetID) {
        guard isActiveTarget(targetID) else { return }
        let key = document.key
        let kind: TargetState.DocumentChangeKind = targetContains(targetID, key) ? .modified : .added
        targetStates[targetID, default: TargetState()].addDocumentChange(key, kind)
        pendingDocumentUpdates[key] = document
        pendingDocumentTargetMappings[key, default: []].insert(targetID)
    }

    private func removeDocument(_ key: DocumentKey, from targetID: TargetID, updatedDocument: MaybeDocument?) {
        guard isActiveTarget(targetID) else { return }
        if targetContains(targetID, key) {
            targetStates[targetID, default: TargetState()].addDocumentChange(key, .removed)
        } else {
            // The document entered and left the target between two events: nothing to report
            // for the target.
            targetStates[targetID, default: TargetState()].removeDocumentChange(key)
        }
        pendingDocumentTargetMappings[key, default: []].insert(targetID)
        if let updatedDocument {
            pendingDocumentUpdates[key] = updatedDocument
        }
    }

    /// Starts the target over: a fresh state, and a removal for every document the sync
    /// engine has in it (the server re-adds those that still match).
    private func resetTarget(_ targetID: TargetID) {
        targetStates[targetID] = TargetState()
        for key in metadataProvider.remoteKeys(for: targetID) {
            removeDocument(key, from: targetID, updatedDocument: nil)
        }
    }

    /// The number of documents in the target once the collected changes apply.
    private func currentDocumentCount(for targetID: TargetID) -> Int {
        let change = targetStates[targetID, default: TargetState()].targetChange
        return metadataProvider.remoteKeys(for: targetID).count + change.addedDocuments.count
            - change.removedDocuments.count
    }

    private func targetContains(_ targetID: TargetID, _ key: DocumentKey) -> Bool {
        metadataProvider.remoteKeys(for: targetID).contains(key)
    }

    private func isActiveTarget(_ targetID: TargetID) -> Bool {
        targetDataForActiveTarget(targetID) != nil
    }

    /// The target's data when it is listened to and no request for it is unanswered.
    private func targetDataForActiveTarget(_ targetID: TargetID) -> TargetData? {
        if let state = targetStates[targetID], state.isPending { return nil }
        return metadataProvider.targetData(for: targetID)
    }
}

/// An existence filter whose count differed from the client's, and what the aggregator did
/// about it.
package struct ExistenceFilterMismatch: Sendable, Hashable {
    /// How the mismatch was handled.
    package enum Outcome: Sendable, Hashable {
        /// The bloom filter ruled out `removed` documents and the counts then matched: they
        /// left the target, and are confirmed by limbo resolution. No re-query.
        case resolvedByBloomFilter(removed: Int)
        /// The counts still differed after removing what the bloom filter ruled out (a
        /// removed document was a false positive of the filter): the target is re-queried.
        case bloomFilterFalsePositive(removed: Int)
        /// There was no bloom filter, or it could not be used (`reason`): the target is
        /// re-queried.
        case noUsableBloomFilter(reason: String)
    }

    package var targetID: TargetID
    /// The documents the client counted in the target when the filter arrived.
    package var localCount: Int
    /// The documents the server counted.
    package var serverCount: Int
    package var outcome: Outcome
}

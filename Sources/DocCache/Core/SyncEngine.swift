package import DocModel

/// Glues user operations, the local store, the remote store and the views of active queries.
///
/// - Listens: each distinct query gets a ``View`` over its target's local results; snapshots
///   are raised to the ``QueryEventSink`` (the event manager) after every change.
/// - Writes: a batch is queued durably by the local store, every affected view updates at
///   once (latency compensation), then the remote store sends it; acknowledgement or
///   rejection updates the views again and completes the write's callback.
/// - Limbo: a document a view shows from cache but the server's current target does not
///   include is "in limbo"; the engine listens to it alone (odd target ids, at most
///   ``maxConcurrentLimboResolutions`` at a time) until the server settles it.
///
/// Not thread-safe: owned by the client's serial executor.
package final class SyncEngine: QueryEventSource, RemoteSyncer {
    /// A query's view and the target it listens through.
    final class QueryView {
        let query: Query
        let targetID: TargetID
        let view: View

        init(query: Query, targetID: TargetID, view: View) {
            self.query = query
            self.targetID = targetID
            self.view = view
        }
    }

    struct LimboResolution {
        let key: DocumentKey
        /// The server has sent the document on the limbo target (it exists remotely).
        var documentReceived = false
    }

    /// Completion of one write batch: the commit version, or the server's rejection.
    package typealias WriteCallback = (Result<SnapshotVersion, DocError>) -> Void

    let localStore: LocalStore
    let remoteStore: RemoteStore
    package weak var sink: (any QueryEventSink)?
    /// Called for every rejected batch (the store-wide error stream).
    package var onWriteRejected: ((MutationBatch?, DocError) -> Void)?
    /// How many times a batch was sent (for the failed-write record of a rejected batch).
    package var attemptsOfBatch: ((BatchID) -> Int)?
    /// Called after a batch left the queue (acknowledged or rejected).
    package var onBatchSettled: ((BatchID) -> Void)?
    /// Called with every new online state.
    package var onOnlineStateChanged: ((OnlineState) -> Void)?
    /// Called with a storage failure met outside any caller's call (applying a remote event,
    /// acknowledging or rejecting a batch, releasing a target) and what was being done; the
    /// client stops the store (ClientCore+StorageFailure.swift).
    package var onStorageFailure: ((DocError, String) -> Void)?
    package let maxConcurrentLimboResolutions: Int

    private var queryViews: [Query: QueryView] = [:]
    private var queriesByTarget: [TargetID: [Query]] = [:]
    private var limboTargetIDs = TargetIDGenerator.forLimboTargets()
    private var activeLimboTargetsByKey: [DocumentKey: TargetID] = [:]
    private var activeLimboResolutions: [TargetID: LimboResolution] = [:]
    /// Limbo documents waiting for a free resolution slot, in order of discovery.
    private var enqueuedLimboResolutions: [DocumentKey] = []
    /// Which targets reference each limbo document.
    private var limboReferences: [DocumentKey: Set<TargetID>] = [:]
    /// The callbacks of local writes, by batch (batch ids are unique across users' queues, so
    /// a user's batch never finds another user's callback).
    private var writeCallbacks: [BatchID: WriteCallback] = [:]
    private var pendingWritesCallbacks: [BatchID: [(Result<Void, DocError>) -> Void]] = [:]
    /// Batches reverted by the user while the remote store had them in flight: the server may
    /// still answer them, and that answer is ignored (the batch already left the queue).
    private var revertedInFlight: Set<BatchID> = []
    private var currentUser: String

    package init(localStore: LocalStore, remoteStore: RemoteStore, maxConcurrentLimboResolutions: Int = 100) {
        self.localStore = localStore
        self.remoteStore = remoteStore
        self.currentUser = localStore.user
        self.maxConcurrentLimboResolutions = maxConcurrentLimboResolutions
    }

    // MARK: - Introspection (public API and spec tests)

    /// Limbo documents being resolved, with their target ids.
    package var activeLimboDocuments: [DocumentKey: TargetID] { activeLimboTargetsByKey }
    /// Limbo documents waiting for a resolution slot.
    package var enqueuedLimboDocuments: [DocumentKey] { enqueuedLimboResolutions }

    // MARK: - Listens (QueryEventSource)

    package func listen(_ query: Query, shouldListenToRemote: Bool) throws(DocError) -> TargetID {
        precondition(queryViews[query] == nil, "already listening to \(query)")
        let targetData = try localStore.allocateTarget(try query.toTarget())
        let snapshot = try initializeView(for: query, targetID: targetData.targetID, resumeToken: targetData.resumeToken)
        sink?.onViewSnapshots([snapshot])
        if shouldListenToRemote { remoteStore.listen(targetData) }
        return targetData.targetID
    }

    private func initializeView(for query: Query, targetID: TargetID, resumeToken: ResumeToken) throws(DocError) -> ViewSnapshot {
        let result = try localStore.executeQuery(query, usePreviousResults: true)
        var currentState = SyncState.none
        if let mirror = queriesByTarget[targetID]?.first, let other = queryViews[mirror] {
            currentState = other.view.syncState
        }
        let synthesized = TargetChange(resumeToken: resumeToken, current: currentState == .synced)
        let view = View(query: query, remoteDocuments: result.remoteKeys)
        let changes = view.computeDocumentChanges(result.documents)
        let viewChange = view.applyChanges(changes, targetChange: synthesized, watchSnapshotVersion: localStore.lastRemoteSnapshotVersion)
        updateTrackedLimboDocuments(viewChange.limboChanges, targetID: targetID)
        queryViews[query] = QueryView(query: query, targetID: targetID, view: view)
        queriesByTarget[targetID, default: []].append(query)
        guard let snapshot = viewChange.snapshot else {
            throw DocError(.internal, "a new view produced no snapshot for \(query)")
        }
        localStore.notifyLocalViewChanges([Self.localViewChanges(snapshot, targetID: targetID)])
        return snapshot
    }

    package func listenToRemoteStore(_ query: Query) throws(DocError) {
        remoteStore.listen(try localStore.allocateTarget(try query.toTarget()))
    }

    package func stopListening(_ query: Query, shouldStopRemoteListening: Bool) {
        stopListeningAndReleaseTarget(query, lastListen: true, shouldStopRemoteListening: shouldStopRemoteListening)
    }

    package func stopListeningToRemoteStoreOnly(_ query: Query) {
        stopListeningAndReleaseTarget(query, lastListen: false, shouldStopRemoteListening: true)
    }

    private func stopListeningAndReleaseTarget(_ query: Query, lastListen: Bool, shouldStopRemoteListening: Bool) {
        guard let queryView = queryViews[query] else { return }
        if lastListen { queryViews[query] = nil }
        let targetID = queryView.targetID
        queriesByTarget[targetID]?.removeAll { $0 == query }
        guard queriesByTarget[targetID]?.isEmpty ?? true else { return }
        if shouldStopRemoteListening { remoteStore.stopListening(targetID) }
        if lastListen {
            releaseTarget(targetID)
            removeAndCleanupTarget(targetID, error: nil)
        }
    }

    private func removeAndCleanupTarget(_ targetID: TargetID, error: DocError?) {
        for query in queriesByTarget[targetID] ?? [] {
            queryViews[query] = nil
            if let error { sink?.onError(query, error) }
        }
        queriesByTarget[targetID] = nil
        for (key, targets) in limboReferences where targets.contains(targetID) {
            limboReferences[key]!.remove(targetID)
            if limboReferences[key]!.isEmpty {
                limboReferences[key] = nil
                removeLimboTarget(key)
            }
        }
    }

    // MARK: - Writes

    /// Queues a batch locally (durable when this returns), updates every view, and starts
    /// sending it. `callback` hears the commit or the rejection.
    ///
    /// `failedWrite`: the failed write this batch retries (removed with the batch's commit).
    /// `prevalidated`: the mutations were checked already (``LocalStore/writeLocally(_:retrying:prevalidated:)``).
    @discardableResult
    package func write(
        _ mutations: [Mutation], retrying failedWrite: BatchID? = nil, prevalidated: Bool = false, callback: WriteCallback? = nil
    ) throws(DocError) -> LocalWriteResult {
        let result = try localStore.writeLocally(mutations, retrying: failedWrite, prevalidated: prevalidated)
        if let callback { writeCallbacks[result.batchID] = callback }
        emitNewSnapshots(changes: result.changes, remoteEvent: nil)
        remoteStore.fillWritePipeline()
        return result
    }

    /// Drops a pending batch without sending it (or ignoring its eventual result), restoring
    /// the local view. The batch's callback hears `cancelled`.
    package func revert(_ batchID: BatchID) throws(DocError) {
        let (_, changes) = try localStore.rejectBatch(batchID)
        if remoteStore.writePipeline.contains(where: { $0.batchID == batchID }) {
            revertedInFlight.insert(batchID)
        }
        notifyUser(batchID, .failure(DocError(.cancelled, "the pending write \(batchID) was reverted")))
        triggerPendingWritesCallbacks(upTo: batchID)
        emitNewSnapshots(changes: changes, remoteEvent: nil)
    }

    /// Drops every pending batch (each callback hears `cancelled`), after stopping the write
    /// stream so that none is in flight any more. Returns the dropped batch ids.
    package func discardPendingWrites() throws(DocError) -> [BatchID] {
        remoteStore.discardWritePipeline()
        revertedInFlight.removeAll()
        let ids = try localStore.pendingBatches().map(\.batchID)
        for id in ids { try revert(id) }
        return ids
    }

    /// Calls back once every batch up to `highest` (the highest pending now, read by the
    /// caller so that a read failure fails its call) is acknowledged or rejected.
    package func registerPendingWritesCallback(upTo highest: BatchID, _ callback: @escaping (Result<Void, DocError>) -> Void) {
        if highest == batchIDUnknown {
            callback(.success(()))
            return
        }
        pendingWritesCallbacks[highest, default: []].append(callback)
    }

    private func notifyUser(_ batchID: BatchID, _ result: Result<SnapshotVersion, DocError>) {
        if let callback = writeCallbacks.removeValue(forKey: batchID) { callback(result) }
    }

    /// Completes `waitForPendingWrites` callers registered at or below `batchID` (batches are
    /// acknowledged in order, so everything up to it is settled).
    private func triggerPendingWritesCallbacks(upTo batchID: BatchID) {
        for id in pendingWritesCallbacks.keys.sorted() where id <= batchID {
            for callback in pendingWritesCallbacks.removeValue(forKey: id) ?? [] { callback(.success(())) }
        }
    }

    /// Fails every caller still waiting: the writes awaiting their server answer and the
    /// `waitForPendingWrites` callers (the store stopped).
    package func failCallbacks(with error: DocError) {
        let writes = writeCallbacks.values
        writeCallbacks = [:]
        for callback in writes { callback(.failure(error)) }
        failPendingWritesCallbacks(error)
    }

    private func failPendingWritesCallbacks(_ error: DocError) {
        let all = pendingWritesCallbacks.values.flatMap { $0 }
        pendingWritesCallbacks = [:]
        for callback in all { callback(.failure(error)) }
    }

    // MARK: - Users

    /// Switches to another user's queue (spec tests; the public API opens one store per user).
    package func handleCredentialChange(user: String) throws(DocError) {
        let changed = user != currentUser
        currentUser = user
        if changed {
            failPendingWritesCallbacks(DocError(.cancelled, "'waitForPendingWrites' was cancelled by a user change"))
            let changes = try localStore.handleUserChange(user)
            emitNewSnapshots(changes: changes, remoteEvent: nil)
        }
        remoteStore.handleCredentialChange()
    }

    // MARK: - RemoteSyncer

    package func applyRemoteEvent(_ event: RemoteEvent) {
        for (targetID, change) in event.targetChanges {
            guard var resolution = activeLimboResolutions[targetID] else { continue }
            if !change.addedDocuments.isEmpty {
                resolution.documentReceived = true
            } else if !change.removedDocuments.isEmpty {
                resolution.documentReceived = false
            }
            activeLimboResolutions[targetID] = resolution
        }
        do {
            let changes = try localStore.applyRemoteEvent(event)
            emitNewSnapshots(changes: changes, remoteEvent: event)
        } catch {
            reportInternal(error, while: "applying the server's changes")
        }
    }

    package func rejectListen(targetID: TargetID, error: DocError) {
        if let resolution = activeLimboResolutions[targetID] {
            // We lost access to a limbo document: treat it as deleted (a NoDocument at version
            // none is removed from the cache by the local store).
            let key = resolution.key
            activeLimboTargetsByKey[key] = nil
            activeLimboResolutions[targetID] = nil
            pumpEnqueuedLimboResolutions()
            applyRemoteEvent(RemoteEvent(
                snapshotVersion: .none,
                documentUpdates: [key: .noDocument(NoDocument(key: key, version: .none))],
                resolvedLimboDocuments: [key]))
        } else {
            releaseTarget(targetID)
            removeAndCleanupTarget(targetID, error: error)
        }
    }

    package func applySuccessfulWrites(_ results: [MutationBatchResult]) {
        // Reverted while in flight: the batch is gone locally; watch brings the server's state.
        let acknowledged = results.filter { revertedInFlight.remove($0.batch.batchID) == nil }
        guard let last = acknowledged.last?.batch.batchID else { return }
        for result in acknowledged { notifyUser(result.batch.batchID, .success(result.commitVersion)) }
        triggerPendingWritesCallbacks(upTo: last)
        do {
            emitNewSnapshots(changes: try localStore.acknowledgeBatches(acknowledged), remoteEvent: nil)
        } catch {
            let batches = acknowledged.count == 1 ? "write batch \(last)" : "write batches \(acknowledged[0].batch.batchID)…\(last)"
            reportInternal(error, while: "recording the server's acknowledgement of \(batches)")
        }
        for result in acknowledged { onBatchSettled?(result.batch.batchID) }
    }

    package func rejectFailedWrite(batchID: BatchID, error: DocError) {
        if revertedInFlight.remove(batchID) != nil { return }
        do {
            // Kept as a failed write, in the transaction that removes the batch.
            let (batch, changes) = try localStore.rejectBatch(batchID, rejection: (error, attemptsOfBatch?(batchID) ?? 1))
            notifyUser(batchID, .failure(error))
            triggerPendingWritesCallbacks(upTo: batchID)
            onWriteRejected?(batch, error)
            emitNewSnapshots(changes: changes, remoteEvent: nil)
            onBatchSettled?(batchID)
        } catch {
            reportInternal(error, while: "keeping rejected write batch \(batchID) as a failed write")
        }
    }

    package func handleOnlineStateChange(_ state: OnlineState) {
        var snapshots: [ViewSnapshot] = []
        for queryView in queryViews.values {
            if let snapshot = queryView.view.applyOnlineStateChange(state).snapshot { snapshots.append(snapshot) }
        }
        sink?.onViewSnapshots(snapshots)
        sink?.onOnlineStateChange(state)
        onOnlineStateChanged?(state)
    }

    package func remoteKeys(for targetID: TargetID) -> Set<DocumentKey> {
        if let resolution = activeLimboResolutions[targetID], resolution.documentReceived {
            return [resolution.key]
        }
        var keys = Set<DocumentKey>()
        for query in queriesByTarget[targetID] ?? [] {
            if let view = queryViews[query]?.view { keys.formUnion(view.synchronizedKeys) }
        }
        return keys
    }

    // MARK: - Snapshots

    /// Updates every view with `changes` (each document once) and delivers the snapshots.
    /// (Internal, not private: SyncEngine+Bundles.swift emits a loaded bundle's changes.)
    func emitNewSnapshots(
        changes: some Sequence<(key: DocumentKey, value: MaybeDocument?)>, remoteEvent: RemoteEvent?
    ) {
        guard !queryViews.isEmpty else {
            // No view to update (e.g. writes with no listener): nothing to compute.
            sink?.onViewSnapshots([])
            localStore.notifyLocalViewChanges([])
            return
        }
        var documents: [DocumentKey: MaybeDocument] = [:]
        for (key, doc) in changes { documents[key] = doc ?? .noDocument(NoDocument(key: key, version: .none)) }
        var snapshots: [ViewSnapshot] = []
        var viewChanges: [LocalViewChanges] = []
        for queryView in queryViews.values {
            let view = queryView.view
            var docChanges = view.computeDocumentChanges(documents)
            if docChanges.needsRefill {
                do {
                    let result = try localStore.executeQuery(queryView.query, usePreviousResults: false)
                    docChanges = view.computeDocumentChanges(result.documents, previousChanges: docChanges)
                } catch {
                    reportInternal(error, while: "refilling the results of a listener")
                    continue
                }
            }
            let targetChange = remoteEvent?.targetChanges[queryView.targetID]
            let pendingReset = remoteEvent?.targetMismatches[queryView.targetID] != nil
            let viewChange = view.applyChanges(
                docChanges, targetChange: targetChange, targetIsPendingReset: pendingReset,
                watchSnapshotVersion: localStore.lastRemoteSnapshotVersion)
            updateTrackedLimboDocuments(viewChange.limboChanges, targetID: queryView.targetID)
            if let snapshot = viewChange.snapshot {
                snapshots.append(snapshot)
                viewChanges.append(Self.localViewChanges(snapshot, targetID: queryView.targetID))
            }
        }
        sink?.onViewSnapshots(snapshots)
        localStore.notifyLocalViewChanges(viewChanges)
    }

    static func localViewChanges(_ snapshot: ViewSnapshot, targetID: TargetID) -> LocalViewChanges {
        var added = Set<DocumentKey>(), removed = Set<DocumentKey>()
        for change in snapshot.documentChanges {
            switch change.kind {
            case .added: added.insert(change.document.key)
            case .removed: removed.insert(change.document.key)
            case .modified, .metadata: break
            }
        }
        return LocalViewChanges(targetID: targetID, fromCache: snapshot.isFromCache, addedKeys: added, removedKeys: removed)
    }

    /// Surfaces an unexpected local failure (a storage error while applying an event): every
    /// listener hears it, as no view can be trusted afterwards, and the owner stops the store
    /// (``onStorageFailure``).
    private func reportInternal(_ error: DocError, while operation: String) {
        for query in Array(queryViews.keys) { sink?.onError(query, error) }
        onStorageFailure?(error, operation)
    }

    /// Releases a target's local data; a failure is a storage failure.
    private func releaseTarget(_ targetID: TargetID) {
        do {
            try localStore.releaseTarget(targetID)
        } catch {
            onStorageFailure?(error, "releasing listen target \(targetID)")
        }
    }

    // MARK: - Limbo

    private func updateTrackedLimboDocuments(_ changes: [LimboDocumentChange], targetID: TargetID) {
        for change in changes {
            switch change {
            case .added(let key):
                limboReferences[key, default: []].insert(targetID)
                if activeLimboTargetsByKey[key] == nil, !enqueuedLimboResolutions.contains(key) {
                    enqueuedLimboResolutions.append(key)
                    pumpEnqueuedLimboResolutions()
                }
            case .removed(let key):
                limboReferences[key]?.remove(targetID)
                if limboReferences[key]?.isEmpty ?? true {
                    limboReferences[key] = nil
                    removeLimboTarget(key)
                }
            }
        }
    }

    private func pumpEnqueuedLimboResolutions() {
        while !enqueuedLimboResolutions.isEmpty, activeLimboTargetsByKey.count < maxConcurrentLimboResolutions {
            let key = enqueuedLimboResolutions.removeFirst()
            let targetID = limboTargetIDs.nextID()
            activeLimboResolutions[targetID] = LimboResolution(key: key)
            activeLimboTargetsByKey[key] = targetID
            // Limbo targets also see tombstones: a tombstoned document is confirmed as existing
            // rather than deleted from the cache. A document query always makes a valid target.
            guard let target = try? Query(document: key).includingDeleted().toTarget() else { continue }
            remoteStore.listen(TargetData(target: target, targetID: targetID, purpose: .limboResolution, sequenceNumber: -1))
        }
    }

    private func removeLimboTarget(_ key: DocumentKey) {
        enqueuedLimboResolutions.removeAll { $0 == key }
        guard let targetID = activeLimboTargetsByKey.removeValue(forKey: key) else { return }
        remoteStore.stopListening(targetID)
        activeLimboResolutions[targetID] = nil
        pumpEnqueuedLimboResolutions()
    }
}

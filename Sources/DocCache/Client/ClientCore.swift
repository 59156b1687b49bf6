package import DocModel
import Foundation
package import Logging

/// The engine of one open store, confined to one actor: persistence, local store, remote
/// store, sync engine and event manager are plain classes that only ever run here, so the
/// engine needs no locks. The public API (``DocumentStore`` and the references) hops onto this
/// actor for every operation. Listener callbacks do not run on it: their events are handed
/// to the store's callback queue (``DocumentStore/callbackQueue``), so a slow callback never
/// holds the engine up.
package actor ClientCore {
    /// One registered snapshot listener; it survives a scope's detach/reattach.
    final class ListenerEntry {
        let id: Int
        let query: Query
        let options: ListenOptions
        let scopeID: Int?
        let deliver: @Sendable (Result<ViewSnapshot, DocError>) -> Void
        var listener: QueryListener?

        init(id: Int, query: Query, options: ListenOptions, scopeID: Int?,
             deliver: @escaping @Sendable (Result<ViewSnapshot, DocError>) -> Void) {
            self.id = id
            self.query = query
            self.options = options
            self.scopeID = scopeID
            self.deliver = deliver
        }
    }

    package let directory: String
    package let settings: StoreSettings
    /// Where the store says what it does (silent unless the app passed a logger).
    let logger: Logger
    let persistence: Persistence
    let localStore: LocalStore
    let remoteStore: RemoteStore
    let syncEngine: SyncEngine
    private let eventManager: EventManager
    let scheduler: ActorScheduler
    private let streamRouter: StreamEventRouter
    let activity: SyncActivity
    /// The store was opened with a server (it can go online).
    package let hasServer: Bool
    private(set) var isClosed = false
    /// The storage failure that stopped the store (ClientCore+StorageFailure.swift); `nil`
    /// while it works.
    var storageFailure: DocError?
    private var listeners: [Int: ListenerEntry] = [:]
    /// What to call when the store ends each snapshots-in-sync listener.
    private var snapshotsInSyncEnds: [SnapshotsInSyncListenerID: @Sendable () -> Void] = [:]
    private var detachedScopes: Set<Int> = []
    private var nextID = 0
    /// A signal after every change of the failed writes (a rejection kept one, a retry or a
    /// discard removed one, a read may have refreshed their server versions), for
    /// ``DocumentStore/failedWriteUpdates()``, which reads the list again.
    package nonisolated let failedWriteChanges = EventBroadcast<Void>()
    /// Rejected writes, for ``DocumentStore/writeErrors()`` (observers register synchronously).
    package nonisolated let writeErrors = EventBroadcast<WriteError>()
    /// The pending-write count (kept in memory, read from disk once at open) and its changes,
    /// for ``DocumentStore/pendingWriteCountUpdates()``.
    package nonisolated let pendingWriteCounts: EventBroadcast<Int>
    /// The online state and its changes, for ``DocumentStore/onlineStateUpdates()``.
    package nonisolated let onlineStates = EventBroadcast(replayingLatest: OnlineState.unknown)
    /// The sync status and its changes, for ``DocumentStore/syncStatusUpdates()``.
    package nonisolated let syncStatuses: EventBroadcast<SyncStatus>
    /// Batches the server answered since the queue was last empty (the "n" of "n of m").
    private var answeredInRun = 0
    /// Local writes since the overlay index last caught up (``noteLocalWrite()``).
    var unindexedWrites = 0
    /// The pending overlay-indexing step, if one is scheduled.
    var overlayIndexingTimer: (any ScheduledTimer)?
    /// Overlay-indexing steps run so far (tests).
    package internal(set) var overlayIndexingSteps = 0
    /// When the server last answered the last queued batch.
    private var lastSyncedAt: Timestamp?
    /// The attachments' files, records and uploads (see ClientCore+Attachments.swift).
    let attachmentFiles: AttachmentFiles
    var attachmentRecords: [AttachmentID: AttachmentRecord] = [:] {
        // The write queue's gate follows the records (set directly in `init`).
        didSet { blocker.update(attachmentRecords.values) }
    }
    /// Bytes the server holds of the attachment being uploaded.
    var uploadProgress: [AttachmentID: Int64] = [:]
    var uploadTask: Task<Void, Never>?
    /// Attachments whose last upload attempt failed transiently: the next asks the server first.
    var interruptedUploads: Set<AttachmentID> = []
    /// Ends the uploads when the store closes or stops (see ``UploadStop``).
    let uploadStop = UploadStop()
    let uploadBackoff: ExponentialBackoff
    let network: NetworkConfiguration?
    /// The write queue's gate for batches that refer to attachments not uploaded yet.
    let blocker: BatchBlocker
    /// The client id the streams use (renewed after a batch id collision).
    let clientIdentity: ClientIdentity
    /// A signal after every change of an attachment (added, progress, uploaded, failed, removed).
    package nonisolated let attachmentChanges = EventBroadcast<Void>()
    /// The number of batches waiting for the server.
    package var pendingWriteCount: Int { pendingWriteCounts.latest ?? 0 }

    /// - Parameter network: how to reach the server; `nil` opens the store without a server:
    ///   the network is disabled, so the store is offline (listeners answer from the cache at
    ///   once) and writes wait in the queue.
    package init(directory: String, user: String, settings: StoreSettings, network: NetworkConfiguration?,
                 logger: Logger = DocumentStore.silentLogger) throws(DocError) {
        self.directory = directory
        self.settings = settings
        var logger = logger
        logger[metadataKey: "store"] = "\(directory)"
        self.logger = logger
        let persistence = try Persistence.open(directory: directory)
        let localStore: LocalStore
        do {
            localStore = try LocalStore(persistence: persistence, user: user, clock: { Timestamp.now })
        } catch {
            persistence.close()
            throw error
        }
        let scheduler = ActorScheduler()
        let router = StreamEventRouter()
        let activity = SyncActivity()
        let opened: LocalStore.OpenState
        do {
            opened = try localStore.openState()
        } catch {
            persistence.close()
            throw error
        }
        let (lastSyncedAt, pendingCount, attachmentRecords) = (opened.lastSyncedAt, opened.pendingBatchCount, opened.attachments)
        activity.load(opened.deliveries)
        let files = AttachmentFiles(storeDirectory: directory)
        files.removeOrphans(keeping: Set(attachmentRecords.map(\.id)))
        let clientIdentity = ClientIdentity(persistence.clientID)
        let datastore: any Datastore = network.map {
            NetworkDatastore(configuration: $0, clientID: clientIdentity, router: router, scheduler: scheduler, activity: activity)
        } ?? OfflineDatastore()
        let blocker = BatchBlocker(confirmationAge: settings.attachmentConfirmationAge)
        blocker.update(attachmentRecords)
        let adapter = LocalStoreRemoteAdapter(localStore: localStore, isBlocked: { blocker.isBlocked($0) })
        let remoteLogger = RemoteLogger { [logger] level, message in
            logger.log(level: level == .warning ? .warning : .debug, "\(message)")
        }
        let remoteStore = RemoteStore(localStore: adapter, datastore: datastore, scheduler: scheduler, logger: remoteLogger)
        let syncEngine = SyncEngine(localStore: localStore, remoteStore: remoteStore)
        let eventManager = EventManager(source: syncEngine)
        syncEngine.sink = eventManager
        remoteStore.syncer = syncEngine
        self.persistence = persistence
        self.localStore = localStore
        self.scheduler = scheduler
        self.streamRouter = router
        self.activity = activity
        self.hasServer = network != nil
        self.network = network
        self.blocker = blocker
        self.clientIdentity = clientIdentity
        self.uploadBackoff = ExponentialBackoff(scheduler: scheduler, timerID: .attachmentUploadBackoff)
        self.attachmentFiles = files
        self.attachmentRecords = Dictionary(uniqueKeysWithValues: attachmentRecords.map { ($0.id, $0) })
        self.remoteStore = remoteStore
        self.syncEngine = syncEngine
        self.eventManager = eventManager
        self.pendingWriteCounts = EventBroadcast(replayingLatest: pendingCount)
        self.lastSyncedAt = lastSyncedAt
        self.syncStatuses = EventBroadcast(replayingLatest: SyncStatus(
            canSync: network != nil, pending: pendingCount, answered: 0, lastSyncedAt: lastSyncedAt, connectionError: nil))
        scheduler.core = self
        router.core = self
        // The engine calls these synchronously on this actor.
        syncEngine.onWriteRejected = { [unowned self] batch, error in
            self.assumeIsolated { core in
                core.logger.warning("the server rejected a write; it is kept as a failed write", metadata: [
                    "batch": "\(batch.map { String($0.batchID) } ?? "?")", "code": "\(error.code)", "error": "\(error.message)",
                ])
                core.publishWriteError(batch, error)
                core.failedWriteChanges.yield(())
                if let batch { core.checkAttachments(ofRejected: batch, error) }
            }
        }
        // A hop, not `assumeIsolated`: the remote store reads the queue while the core is
        // still being created.
        blocker.onCheckNeeded = { [weak self] in Task { await self?.startNextUpload() } }
        remoteStore.onBatchIDConflict = { [unowned self] batchID, error in
            self.assumeIsolated { $0.resolveBatchIDConflict(batchID, error) }
        }
        syncEngine.onStorageFailure = { [unowned self] error, operation in
            self.assumeIsolated { $0.storageFailed(error, while: operation) }
        }
        adapter.onError = { [unowned self] error in
            self.assumeIsolated { $0.storageFailed(error, while: "reading the write queue") }
        }
        syncEngine.onBatchSettled = { [unowned self] id in self.assumeIsolated { $0.batchAnswered(id) } }
        syncEngine.attemptsOfBatch = { [unowned self] id in self.assumeIsolated { max($0.activity.attempts(of: id), 1) } }
        remoteStore.start()
        if network == nil { remoteStore.disableNetwork() }
        onlineStates.yield(remoteStore.onlineState)
        // Set after the network state above: the initializer is not isolated to the actor, and
        // nobody can observe the state before it returns.
        syncEngine.onOnlineStateChanged = { [unowned self] state in
            self.assumeIsolated { $0.publishOnlineState(state) }
        }
        activity.persist = { [unowned self] deliveries in self.assumeIsolated { $0.persistDeliveries(deliveries) } }
        activity.onChange = { [unowned self] in self.assumeIsolated { $0.publishSyncStatus() } }
        activity.onStreamFailed = { [unowned self] stream, error in
            self.assumeIsolated { core in
                core.logger.warning("the \(stream) stream failed; retrying with backoff", metadata: [
                    "code": "\(error.code)", "error": "\(error.message)",
                ])
            }
        }
        if persistence.compositeIndexes.declared.contains(where: { !$0.isComplete }) {
            Self.scheduleCompositeIndexBackfill(on: scheduler, for: self)
        }
        if opened.hasUnindexedOverlays {
            // Not kept as `overlayIndexingTimer` (the initializer cannot set state here); a
            // second step that a write schedules meanwhile finds less or nothing to do.
            _ = Self.scheduleOverlayIndexing(on: scheduler, for: self, after: Self.overlayIndexingDelay)
        }
        if settings.cacheSizeBytes != StoreSettings.unlimited {
            _ = scheduler.schedule(.garbageCollection, after: Self.initialGarbageCollectionDelay) { [unowned self] in
                self.assumeIsolated { $0.collectGarbageAndReschedule() }
            }
        }
    }

    /// Garbage collection runs by itself, as in Firestore: a minute after opening, then every
    /// five minutes (it only removes anything when the cache is over its size limit).
    static let initialGarbageCollectionDelay: Duration = .seconds(60)
    static let garbageCollectionInterval: Duration = .seconds(300)

    private func collectGarbageAndReschedule() {
        guard collectScheduledGarbage() else { return }
        _ = scheduler.schedule(.garbageCollection, after: Self.garbageCollectionInterval) { [weak self] in
            self?.assumeIsolated { $0.collectGarbageAndReschedule() }
        }
    }

    /// The scheduled garbage collection (no caller to hand a failure to: it stops the store).
    /// Returns whether the store still works.
    @discardableResult
    package func collectScheduledGarbage() -> Bool {
        guard !isClosed, storageFailure == nil else { return false }
        do {
            _ = try localStore.collectGarbage(cacheSizeLimit: settings.cacheSizeBytes)
            return true
        } catch {
            storageFailed(error, while: "collecting garbage")
            return false
        }
    }

    /// An event of a network stream's connection task (see ``StreamEventRouter``).
    func deliverStreamEvent(_ stream: Int, generation: Int, _ event: StreamEvent) {
        guard !isClosed else { return }
        streamRouter.deliver(stream: stream, generation: generation, event)
    }

    func fireTimer(_ token: Int) {
        guard !isClosed else { return }
        scheduler.fire(token)
    }

    /// Throws unless the store can serve calls: closed, or stopped by a storage failure.
    func checkOpen() throws(DocError) {
        if isClosed { throw DocError(.failedPrecondition, "the store is closed", at: directory) }
        if let storageFailure { throw storageFailure }
    }

    /// Stops the network, ends every listener and stream, and closes the database.
    package func close() {
        guard !isClosed else { return }
        // The sends of batches still unanswered are kept for the next open.
        if storageFailure == nil { activity.batchesStopped(activity.sending) }
        isClosed = true
        remoteStore.shutdown()
        scheduler.cancelAll()
        removeAllListeners(delivering: DocError(.cancelled, "the store was closed", at: directory))
        pendingWriteCounts.finish()
        syncStatuses.finish()
        writeErrors.finish()
        failedWriteChanges.finish()
        attachmentChanges.finish()
        uploadStop.set()
        onlineStates.finish()
        persistence.close()
    }

    /// Ends every listener with `error` (each gets it once).
    func removeAllListeners(delivering error: DocError) {
        let ended = listeners.values
        listeners = [:]
        for entry in ended {
            if let listener = entry.listener { eventManager.removeQueryListener(listener) }
            entry.deliver(.failure(error))
        }
        let inSync = snapshotsInSyncEnds
        snapshotsInSyncEnds = [:]
        for (id, end) in inSync {
            eventManager.removeSnapshotsInSyncListener(id)
            end()
        }
    }

    // MARK: - Writes

    /// Queues `mutations` as one batch. Returns once the batch is durable locally and every
    /// affected listener has seen it.
    package func write(_ mutations: [Mutation], prevalidated: Bool = false) throws(DocError) -> (BatchID, CommitTracker) {
        try checkOpen()
        let tracker = CommitTracker()
        let result = try syncEngine.write(mutations, prevalidated: prevalidated) { outcome in tracker.resolve(outcome) }
        adjustPendingWriteCount(by: 1)
        noteLocalWrite()
        return (result.batchID, tracker)
    }

    /// Drops a pending batch and restores the local view.
    package func revert(_ batchID: BatchID) throws(DocError) {
        try checkOpen()
        try syncEngine.revert(batchID)
        activity.forget(batchID)
        adjustPendingWriteCount(by: -1)
    }

    // MARK: - Failed writes

    /// The failed writes, oldest first.
    package func failedWrites() throws(DocError) -> [FailedWriteRecord] {
        try checkOpen()
        return try localStore.failedWrites()
    }

    /// One failed write (`notFound` when there is none).
    package func failedWrite(_ id: BatchID) throws(DocError) -> FailedWriteRecord {
        try checkOpen()
        return try localStore.failedWrite(id)
    }

    /// Queues `mutations` (by default the failed write's own) as a new batch at the end of the
    /// queue, removing the failed write in the same transaction.
    package func retryFailedWrite(_ id: BatchID, with edited: [Mutation]? = nil, prevalidated: Bool = false) throws(DocError) -> (BatchID, CommitTracker) {
        try checkOpen()
        let mutations: [Mutation]
        if let edited {
            mutations = edited
        } else {
            mutations = try localStore.failedWrite(id, refreshed: false).batch.mutations
        }
        let tracker = CommitTracker()
        let result = try syncEngine.write(mutations, retrying: id, prevalidated: prevalidated) { outcome in tracker.resolve(outcome) }
        adjustPendingWriteCount(by: 1)
        noteLocalWrite()
        failedWriteChanges.yield(())
        return (result.batchID, tracker)
    }

    /// Tells the observers of the failed writes to read them again (their conflict views read
    /// the remote document cache, which a read may have refreshed).
    package func failedWritesMayHaveChanged() {
        guard !isClosed else { return }
        failedWriteChanges.yield(())
    }

    /// Drops a failed write for good.
    package func discardFailedWrite(_ id: BatchID) throws(DocError) {
        try checkOpen()
        try localStore.discardFailedWrite(id)
        failedWriteChanges.yield(())
    }

    package func pendingWrites() throws(DocError) -> [PendingWrite] {
        try checkOpen()
        let batches = try localStore.pendingBatches()
        let waiting = waitReason
        var blockedBy: BatchID?
        return batches.map { batch in
            let state: PendingWrite.State
            if activity.sending.contains(batch.batchID) {
                state = .sending
            } else if let reason = attachmentWait(of: batch) {
                state = .waiting(reason)
                blockedBy = blockedBy ?? batch.batchID
            } else if let blockedBy {
                state = .waiting(.earlierBatch(blockedBy))
            } else if let waiting {
                state = .waiting(waiting)
            } else {
                state = .pending
            }
            return PendingWrite(batch, delivery: activity.delivery(of: batch.batchID), state: state)
        }
    }

    /// Why no batch can be sent now (`nil`: they can).
    private var waitReason: PendingWrite.WaitReason? {
        if !hasServer { return .noServer }
        if !remoteStore.canUseNetwork { return .networkDisabled }
        if let error = activity.writeStreamError ?? activity.lastSyncError { return .connectionFailed(error) }
        return nil
    }

    /// The server's answer about the id of batch `batchID`, the oldest in flight: whether the
    /// store took a new client id (another store writes under this one: its batches are sent
    /// again under the new id) or the batch is to be rejected. A collision (the id answered
    /// for other mutations) is always another store. A batch processed before (no outcome, a
    /// later one of the client has one) is this store's own re-send when it was sent before
    /// (its answer was lost and the outcome pruned: kept as a failed write, not applied again),
    /// and another store's batch id otherwise.
    private func resolveBatchIDConflict(_ batchID: BatchID, _ error: DocError) -> Bool {
        if error.isBatchProcessedBefore, activity.attempts(of: batchID) > 1 { return false }
        return renewClientID()
    }

    /// The server saw this store's client id used for other batches: a copy of the store (a
    /// restored device backup, say) wrote under it. A new id, durably, before the batches are
    /// sent again under it.
    @discardableResult
    private func renewClientID() -> Bool {
        guard !isClosed else { return false }
        let old = clientIdentity.current
        do {
            clientIdentity.current = try persistence.renewClientID()
        } catch {
            storageFailed(error, while: "renewing the client id")
            return false
        }
        logger.warning("another store writes under this store's client id (a copy, or a restored backup): took a new one", metadata: [
            "old": "\(old)", "new": "\(clientIdentity.current)",
        ])
        return true
    }

    /// The batch left the queue after the server's answer.
    private func batchAnswered(_ id: BatchID) {
        activity.forget(id)
        answeredInRun += 1
        adjustPendingWriteCount(by: -1)
    }

    /// Stores what the network did with queued batches.
    private func persistDeliveries(_ deliveries: [(BatchID, BatchDelivery)]) {
        guard !isClosed else { return }
        do {
            try localStore.recordDeliveries(deliveries)
        } catch {
            storageFailed(error, while: "recording the delivery of queued writes")
        }
    }

    package func waitForPendingWrites() async throws(DocError) {
        try checkOpen()
        // The highest pending batch is read first: a read failure fails this call.
        let highest = try localStore.highestUnacknowledgedBatchID()
        // The engine's callback and a cancellation of the waiting task race to end the wait;
        // the first ends it (the writes stay queued either way).
        let once = ResumeOnce<Result<Void, DocError>>()
        let result = await withTaskCancellationHandler {
            await once.wait {
                syncEngine.registerPendingWritesCallback(upTo: highest) { once.resume(returning: $0) }
            }
        } onCancel: {
            once.resume(returning: .failure(Self.waitCancelled))
        }
        try result.get()
    }

    private static let waitCancelled = DocError(
        .cancelled, "the task waiting for the pending writes was cancelled; the writes stay queued and are still sent")

    /// A run of at least this many answered batches is followed by a background compaction of
    /// the queue's tables (``Persistence/compactMutationQueuesInBackground()``).
    static let compactionAfterAnsweredBatches = 256

    /// The background compactions asked for, and those finished, so far (for tests).
    package var backgroundCompactions: (requested: Int, completed: Int) { persistence.compactor.counts }

    /// Keeps the pending-write count in memory (read from disk once, at open): every batch
    /// enters through `write` and leaves through acknowledgement, rejection or `revert`.
    private func adjustPendingWriteCount(by delta: Int) {
        guard !isClosed else { return }
        let count = max(0, pendingWriteCount + delta)
        pendingWriteCounts.yield(count)
        if count == 0 {
            if answeredInRun > 0 {
                // The server answered the last queued batch: the run is over.
                let now = Timestamp.now
                lastSyncedAt = now
                do { try localStore.setLastSyncedAt(now) } catch { storageFailed(error, while: "recording the last sync") }
            }
            if answeredInRun >= Self.compactionAfterAnsweredBatches {
                // A long run left deletion markers that every query would step over.
                persistence.compactMutationQueuesInBackground()
            }
            answeredInRun = 0
        }
        publishSyncStatus()
    }

    /// The sync status now (see ``SyncStatus``).
    package var syncStatus: SyncStatus {
        if let storageFailure {
            return SyncStatus(phase: .error, completedBatches: 0, totalBatches: pendingWriteCount,
                              lastSyncedAt: lastSyncedAt, error: storageFailure)
        }
        return SyncStatus(canSync: mayReachServer, pending: pendingWriteCount,
                          answered: answeredInRun, lastSyncedAt: lastSyncedAt, connectionError: activity.lastSyncError)
    }

    func publishSyncStatus() {
        guard !isClosed else { return }
        let status = syncStatus
        if status != syncStatuses.latest { syncStatuses.yield(status) }
    }

    private func publishWriteError(_ batch: MutationBatch?, _ error: DocError) {
        let event = WriteError(batchID: batch?.batchID, paths: batch?.mutations.map(\.key.description) ?? [], error: error)
        writeErrors.yield(event)
    }

    // MARK: - Network

    /// The online state as last decided by the remote store.
    package var onlineState: OnlineState { remoteStore.onlineState }

    /// How the existence filters whose count did not match were handled (diagnostics, tests).
    package var existenceFilterCounts: ExistenceFilterCounts { remoteStore.existenceFilterCounts }

    /// The error that most recently interrupted syncing, while the failing stream has not
    /// connected again.
    package var lastSyncError: DocError? { storageFailure ?? activity.lastSyncError }

    /// Whether the store may talk to its server now (it has one and the network is enabled).
    package var canUseNetwork: Bool { hasServer && remoteStore.canUseNetwork }

    package func enableNetwork() throws(DocError) {
        try checkOpen()
        guard hasServer else {
            throw DocError(.failedPrecondition,
                "the store was opened without a server; open it with DocumentStore.open(…, server: ServerEndpoint(…)) to sync",
                at: directory)
        }
        guard !remoteStore.canUseNetwork else { return }
        remoteStore.enableNetwork()
        publishSyncStatus()
        uploadBackoff.reset()
        startNextUpload()
    }

    package func disableNetwork() throws(DocError) {
        try checkOpen()
        guard remoteStore.canUseNetwork else { return }
        remoteStore.disableNetwork()
        publishSyncStatus()
    }

    /// Discards every pending write and listens to every active target again from scratch.
    package func resetFromServer() throws(DocError) {
        try checkOpen()
        let discarded = try syncEngine.discardPendingWrites()
        for id in discarded {
            activity.forget(id)
            adjustPendingWriteCount(by: -1)
        }
        remoteStore.relistenFromScratch()
    }

    private func publishOnlineState(_ state: OnlineState) {
        if state != onlineStates.latest { logger.info("online state: \(state)") }
        onlineStates.yield(state)
        publishSyncStatus()
    }

    // MARK: - Listeners

    /// Registers a snapshot listener. The first snapshot (from the cache) is delivered before
    /// this returns.
    package func addListener(
        query: Query, options: ListenOptions, scopeID: Int?,
        deliver: @escaping @Sendable (Result<ViewSnapshot, DocError>) -> Void
    ) throws(DocError) -> Int {
        try checkOpen()
        nextID += 1
        let entry = ListenerEntry(id: nextID, query: query, options: options, scopeID: scopeID, deliver: deliver)
        listeners[entry.id] = entry
        if scopeID.map({ !detachedScopes.contains($0) }) ?? true {
            do { try attach(entry) } catch { listeners[entry.id] = nil; throw error }
        }
        return entry.id
    }

    private func attach(_ entry: ListenerEntry) throws(DocError) {
        let listener = QueryListener(query: entry.query, options: entry.options) { [weak self, deliver = entry.deliver, id = entry.id] result in
            deliver(result)
            // A failed listener is finished; the event manager already dropped it.
            if case .failure = result { self?.assumeIsolated { $0.listeners[id] = nil } }
        }
        entry.listener = listener
        try eventManager.addQueryListener(listener)
    }

    /// Registers a snapshots-in-sync callback (``DocumentStore/addSnapshotsInSyncListener(_:)``);
    /// it is called once right away. `ended` is called when the store closes or fails (the
    /// listener is then gone), as query listeners get their final error.
    package func addSnapshotsInSyncListener(
        _ deliver: @escaping @Sendable () -> Void, ended: @escaping @Sendable () -> Void = {}
    ) throws(DocError) -> SnapshotsInSyncListenerID {
        try checkOpen()
        let id = eventManager.addSnapshotsInSyncListener(deliver)
        snapshotsInSyncEnds[id] = ended
        return id
    }

    package func removeSnapshotsInSyncListener(_ id: SnapshotsInSyncListenerID) {
        snapshotsInSyncEnds[id] = nil
        eventManager.removeSnapshotsInSyncListener(id)
    }

    package func removeListener(_ id: Int) {
        guard let entry = listeners.removeValue(forKey: id) else { return }
        if let listener = entry.listener { eventManager.removeQueryListener(listener) }
    }

    /// Stops every listener of the scope, remembering them for ``reattachScope(_:)``.
    package func detachScope(_ scopeID: Int) {
        detachedScopes.insert(scopeID)
        for entry in listeners.values where entry.scopeID == scopeID {
            if let listener = entry.listener { eventManager.removeQueryListener(listener) }
            entry.listener = nil
        }
    }

    /// Restarts the scope's listeners: each gets the cached snapshot at once, then resumes
    /// syncing from its target's stored resume token.
    package func reattachScope(_ scopeID: Int) throws(DocError) {
        try checkOpen()
        guard detachedScopes.remove(scopeID) != nil else { return }
        for entry in listeners.values.sorted(by: { $0.id < $1.id }) where entry.scopeID == scopeID && entry.listener == nil {
            try attach(entry)
        }
    }

    /// Removes every listener of the scope for good.
    package func removeScope(_ scopeID: Int) {
        detachedScopes.remove(scopeID)
        for entry in listeners.values where entry.scopeID == scopeID { removeListener(entry.id) }
    }

    /// Listener registrations alive (attached or in a detached scope); for leak checks.
    package var liveListenerCount: Int { listeners.count }

    // MARK: - Reads

    /// One document from the cache (`nil`: not in the cache at all).
    package func readDocument(_ key: DocumentKey) throws(DocError) -> Document? {
        try checkOpen()
        return try localStore.readDocument(key)?.document
    }

    /// A snapshot the server has just confirmed (`isFromCache == false`), as Firestore reads
    /// from the server: a one-off listen that waits for the server to mark the target current,
    /// and the remote snapshot version it is consistent at (what a bundle of it needs as its
    /// read time). Fails with `unavailable` when the store has no server, its network is
    /// disabled, or it is (or goes) offline before the server answers.
    package func serverSnapshot(_ query: Query) async throws(DocError) -> (snapshot: ViewSnapshot, version: SnapshotVersion) {
        guard canUseNetwork else {
            throw DocError(.unavailable,
                "the store is offline (no server, or the network is disabled); read with source: .cache for cached data")
        }
        let box = OneShot<Result<(ViewSnapshot, SnapshotVersion), DocError>>()
        // Waiting for sync while online, the first event is from the server, or from the
        // cache only once the store is offline.
        let id = try addListener(
            query: query, options: ListenOptions(includeMetadataChanges: true, waitForSyncWhenOnline: true), scopeID: nil
        ) { [weak self] result in
            switch result {
            case .success(let snapshot) where !snapshot.isFromCache:
                // Delivered on this actor right after the remote event that made the target
                // current: the local store's snapshot version is that event's.
                let version = self?.assumeIsolated { $0.localStore.lastRemoteSnapshotVersion } ?? .none
                box.fulfil(.success((snapshot, version)))
            case .success:
                box.fulfil(.failure(DocError(.unavailable,
                    "the server could not be reached; read with source: .cache for cached data")))
            case .failure(let error):
                box.fulfil(.failure(error))
            }
        }
        let result = await box.value
        removeListener(id)
        return try result.get()
    }

    /// A query's current results from the cache, as a snapshot.
    package func runQuery(_ query: Query) throws(DocError) -> ViewSnapshot {
        try checkOpen()
        let result = try localStore.executeQuery(query, usePreviousResults: false)
        let view = View(query: query, remoteDocuments: result.remoteKeys)
        let changes = view.computeDocumentChanges(result.documents)
        guard let snapshot = view.applyChanges(changes, limboResolutionEnabled: false).snapshot else {
            throw DocError(.internal, "no snapshot for \(query)")
        }
        return snapshot
    }

    /// `fields` over the query's results in the cache (pending writes included), and whether
    /// one of those results has a pending write. A limited query's window is the view's
    /// (``runQuery(_:)``); an unlimited query's results are folded as the local store finds
    /// them, without building a sorted view of them.
    package func aggregateLocally(_ query: Query, _ fields: [AggregateField]) throws(DocError) -> (values: [String: Value], hasPendingWrites: Bool) {
        var accumulator = AggregateAccumulator(fields)
        guard query.limit == nil else {
            let snapshot = try runQuery(query)
            for document in snapshot.documents { accumulator.add(document.data) }
            return (accumulator.result, !snapshot.mutatedKeys.isEmpty)
        }
        try checkOpen()
        var pending = false
        // The engine's documents are the query's matches.
        for document in try localStore.executeQuery(query, usePreviousResults: false).documents {
            accumulator.add(document.data)
            pending = pending || document.hasLocalMutations
        }
        return (accumulator.result, pending)
    }

    /// Whether the server is reachable right now.
    package var isOnline: Bool { remoteStore.onlineState == .online }

    /// Whether a request to the server is worth trying: the network may be used and the store
    /// does not know itself offline (it may simply have no stream open).
    package var mayReachServer: Bool { canUseNetwork && remoteStore.onlineState != .offline }

    /// How to reach the server for a unary request (an aggregation), when the store may use
    /// the network now.
    ///
    /// - Throws: `unavailable` when it has no server or its network is disabled.
    package func unaryEndpoint() throws(DocError) -> (configuration: NetworkConfiguration, clientID: String) {
        try checkOpen()
        guard let network, canUseNetwork else {
            throw DocError(.unavailable, "the store is offline (no server, or the network is disabled); aggregate with source: .cache for the cached data")
        }
        return (network, clientIdentity.current)
    }

    /// Loads documents into the cache as the server's documents at `version`, as a remote
    /// event would: listeners update, pending writes stay on top. For tools and benchmarks that
    /// need a large cache without a server.
    package func loadRemoteDocuments(_ documents: [Document], version: SnapshotVersion) throws(DocError) {
        try checkOpen()
        var updates: [DocumentKey: MaybeDocument] = [:]
        for document in documents { updates[document.key] = .document(document) }
        syncEngine.applyRemoteEvent(RemoteEvent(snapshotVersion: version, documentUpdates: updates))
    }

    // MARK: - Cache maintenance

    /// Compacts the whole store (``Persistence/compact()``): what LevelDB's background
    /// compactions would finish during a long session. Blocks until done.
    package func compactStorage() throws(DocError) {
        try checkOpen()
        try persistence.compact()
    }

    package func collectGarbage() throws(DocError) -> (targetsRemoved: Int, documentsRemoved: Int) {
        try checkOpen()
        let result = try localStore.collectGarbage(cacheSizeLimit: settings.cacheSizeBytes)
        return (result.targetsRemoved, result.documentsRemoved)
    }
}

extension Timestamp {
    /// The current wall-clock time.
    package static var now: Timestamp {
        Timestamp(microseconds: Int64((Date().timeIntervalSince1970 * 1_000_000).rounded()))
    }
}

import Foundation
@testable import DocCache
import DocModel

/// Why a step did not do what the test expects: the mismatches found after it.
struct SpecStepFailure: Error {
    var stepIndex: Int
    var step: String
    var problems: [String]
}

/// The client under test, for one incarnation between restarts: real LevelDB persistence and
/// local store, the remote store over a ``FakeDatastore`` with a ``ManualScheduler``, the sync
/// engine and the event manager, wired as `ClientCore` wires them.
final class SpecClient {
    let persistence: Persistence
    let localStore: LocalStore
    let scheduler = ManualScheduler()
    let datastore: FakeDatastore
    let remoteStore: RemoteStore
    let syncEngine: SyncEngine
    let eventManager: EventManager
    /// Storage errors the remote store ran into while reading the local store.
    let storageErrors = ErrorLog()

    final class ErrorLog {
        var errors: [DocError] = []
    }

    init(directory: String, user: String, maxConcurrentLimboResolutions: Int) throws(DocError) {
        let persistence = try Persistence.open(directory: directory)
        do {
            // The local write time only shows in pending server timestamps, which no spec uses.
            localStore = try LocalStore(persistence: persistence, user: user, clock: { Timestamp(microseconds: 1_000_000_000) })
        } catch {
            persistence.close()
            throw error
        }
        self.persistence = persistence
        datastore = FakeDatastore(scheduler: scheduler)
        let adapter = LocalStoreRemoteAdapter(localStore: localStore, isBlocked: { _ in false })
        adapter.onError = { [storageErrors] in storageErrors.errors.append($0) }
        // The spec files' bloom filters name documents in Firestore's test project.
        remoteStore = RemoteStore(
            localStore: adapter, datastore: datastore, scheduler: scheduler, backoffRandom: { 0.5 },
            databaseName: "projects/test-project/databases/(default)")
        syncEngine = SyncEngine(
            localStore: localStore, remoteStore: remoteStore, maxConcurrentLimboResolutions: maxConcurrentLimboResolutions)
        eventManager = EventManager(source: syncEngine)
        syncEngine.sink = eventManager
        remoteStore.syncer = syncEngine
        remoteStore.start()
    }

    private var isShutDown = false

    /// Stops the network and closes the database (the process "exits"). Idempotent.
    func shutdown() {
        guard !isShutDown else { return }
        isShutDown = true
        remoteStore.shutdown()
        persistence.close()
    }
}

/// Runs one spec test against the engine, step by step, checking the expectations after each
/// step as Firestore's spec runners do (`FSTSpecTests` / `spec_test_runner.ts`).
final class SpecDriver {
    /// The user id of the unauthenticated user (`changeUser: null`, and the initial user).
    static let unauthenticatedUser = ""

    private let directory: String
    private let maxConcurrentLimboResolutions: Int
    private var client: SpecClient
    /// Bumped on restart: listeners and callbacks of an earlier incarnation are ignored.
    private var generation = 0
    private var currentUser = SpecDriver.unauthenticatedUser
    private var networkEnabled = true

    // What the client raised since the last check.
    private var events: [SpecActualEvent] = []
    private var acknowledgedDocs: [String] = []
    private var rejectedDocs: [String] = []
    private var snapshotsInSyncEvents = 0
    private var waitForPendingWritesEvents = 0

    private var queryListeners: [Query: QueryListener] = [:]
    private var snapshotsInSyncListeners: [SnapshotsInSyncListenerID] = []
    /// The writes of each user not yet acknowledged or rejected, oldest first (kept across
    /// restarts: they are in the persisted queue and are sent again).
    private var outstandingWrites: [String: [Mutation]] = [:]

    // Expectations that hold until a step says otherwise.
    private var expectedActiveTargets: [TargetID: SpecTarget] = [:]
    private var expectedActiveLimboDocs: [DocumentKey] = []
    private var expectedEnqueuedLimboDocs: [DocumentKey] = []

    init(directory: String, config: SpecConfig) throws(DocError) {
        self.directory = directory
        maxConcurrentLimboResolutions = config.maxConcurrentLimboResolutions ?? Int.max
        client = try SpecClient(
            directory: directory, user: SpecDriver.unauthenticatedUser,
            maxConcurrentLimboResolutions: maxConcurrentLimboResolutions)
    }

    func shutdown() {
        client.shutdown()
    }

    /// Runs `steps`; throws at the first step whose expectations do not hold.
    func run(_ steps: [SpecStep]) throws(SpecStepFailure) {
        for (index, step) in steps.enumerated() {
            var problems: [String] = []
            do {
                try perform(step.action)
            } catch {
                problems.append(error.description)
            }
            // Zero-delay timers (a first backoff) run as a real executor would run them.
            client.scheduler.runDue()
            if problems.isEmpty {
                problems = validate(step)
            }
            if !problems.isEmpty {
                throw SpecStepFailure(stepIndex: index, step: step.json, problems: problems)
            }
        }
    }

    // MARK: - Steps

    private struct StepError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    private func perform(_ action: SpecAction) throws(StepError) {
        switch action {
        case .userListen(let spec, let expectedID, let cacheOnly):
            let query = spec.query
            let generation = self.generation
            let options = ListenOptions(includeMetadataChanges: true, source: cacheOnly ? .cache : .default)
            let listener = QueryListener(query: query, options: options) { [unowned self] result in
                guard generation == self.generation else { return }
                self.events.append(Self.event(query: query, result))
            }
            queryListeners[query] = listener
            let targetID: TargetID
            do {
                targetID = try client.eventManager.addQueryListener(listener)
            } catch {
                throw StepError("listen failed: \(error)")
            }
            if targetID != expectedID {
                throw StepError("listen was assigned target \(targetID), expected \(expectedID)")
            }

        case .userUnlisten(_, let spec):
            if let listener = queryListeners.removeValue(forKey: spec.query) {
                client.eventManager.removeQueryListener(listener)
            }

        case .userSet(let key, let value):
            try write(.set(key, value))

        case .userPatch(let key, let fields):
            var values: [FieldPath: Value] = [:]
            var deletes: [FieldPath] = []
            for (path, value) in fields {
                if let value { values[path] = value } else { deletes.append(path) }
            }
            try write(.update(key, fields: values, deleting: deletes))

        case .userDelete(let key):
            try write(.delete(key))

        case .watchAck(let ids):
            try requireWatchStream()
            client.datastore.watchAck(ids)

        case .watchCurrent(let ids, let resumeToken):
            try requireWatchStream()
            client.datastore.watchCurrent(ids, resumeToken: resumeToken)

        case .watchRemove(let ids, let cause):
            try requireWatchStream()
            if cause != nil {
                for id in ids where client.datastore.activeTargets[id] == nil {
                    throw StepError("the server removes target \(id) with an error, but the client does not listen to it")
                }
            }
            client.datastore.watchRemove(ids, cause: cause)

        case .watchEntity(let docs, let targets, let removedTargets):
            try requireWatchStream()
            for doc in docs {
                let document: MaybeDocument
                if let value = doc.value {
                    document = .document(Document(key: doc.key, data: value, version: doc.version))
                } else {
                    document = .noDocument(NoDocument(key: doc.key, version: doc.version))
                }
                client.datastore.watchEntity(document, targets: targets, removedTargets: removedTargets)
            }

        case .watchRemoveKey(let key, let removedTargets):
            try requireWatchStream()
            client.datastore.watchRemoveKey(key, removedTargets: removedTargets)

        case .watchFilter(let ids, let keys, let bloomFilter):
            try requireWatchStream()
            guard ids.count == 1 else { throw StepError("an existence filter names exactly one target") }
            client.datastore.watchFilter(targetID: ids[0], count: keys.count, bloomFilter: bloomFilter)

        case .watchReset(let ids):
            try requireWatchStream()
            client.datastore.watchReset(ids)

        case .watchSnapshot(let version, let ids, let resumeToken):
            try requireWatchStream()
            client.datastore.watchSnapshot(version: version, targetIDs: ids, resumeToken: resumeToken)

        case .watchStreamClose(let error, let runBackoffTimer):
            guard client.datastore.watchStream?.isStarted == true else {
                throw StepError("the watch stream is not started")
            }
            client.datastore.watchStreamClose(error: error)
            if runBackoffTimer, client.scheduler.isPending(.listenStreamConnectionBackoff) {
                client.scheduler.runUntil(.listenStreamConnectionBackoff)
            }

        case .writeAck(let version, let keepInQueue):
            if keepInQueue { throw StepError("writeAck with keepInQueue is a multi-client step") }
            try validateNextWriteSent(removing: true)
            client.datastore.writeAck(version: version)

        case .failWrite(let error, let keepInQueue):
            try validateNextWriteSent(removing: !keepInQueue)
            client.datastore.failWrite(error: error)

        case .enableNetwork(let enable):
            networkEnabled = enable
            if enable {
                client.remoteStore.enableNetwork()
            } else {
                // Send what is queued first, so request counts include it (as the runners do).
                client.remoteStore.fillWritePipeline()
                client.remoteStore.disableNetwork()
            }

        case .restart:
            try restart()

        case .changeUser(let uid):
            currentUser = uid ?? Self.unauthenticatedUser
            do {
                try client.syncEngine.handleCredentialChange(user: currentUser)
            } catch {
                throw StepError("changing the user failed: \(error)")
            }

        case .runTimer(let name):
            if name != "all" {
                guard let id = TimerID(rawValue: name) else { throw StepError("unknown timer \(name)") }
                guard client.scheduler.isPending(id) else { throw StepError("timer \(name) is not scheduled") }
            }
            client.scheduler.runTimer(named: name)

        case .waitForPendingWrites:
            let generation = self.generation
            let highest: BatchID
            do {
                highest = try client.localStore.highestUnacknowledgedBatchID()
            } catch {
                throw StepError("reading the highest pending batch failed: \(error)")
            }
            client.syncEngine.registerPendingWritesCallback(upTo: highest) { [unowned self] _ in
                guard generation == self.generation else { return }
                self.waitForPendingWritesEvents += 1
            }

        case .addSnapshotsInSyncListener:
            let generation = self.generation
            let id = client.eventManager.addSnapshotsInSyncListener { [unowned self] in
                guard generation == self.generation else { return }
                self.snapshotsInSyncEvents += 1
            }
            snapshotsInSyncListeners.append(id)

        case .removeSnapshotsInSyncListener:
            guard let id = snapshotsInSyncListeners.popLast() else {
                throw StepError("there is no snapshots-in-sync listener to remove")
            }
            client.eventManager.removeSnapshotsInSyncListener(id)

        case .drainQueue:
            break

        case .loadBundle(let bytes):
            // As `DocumentStore.loadBundle` does: read and check the whole bundle, then let the
            // sync engine apply it (or skip it when it was loaded before).
            do {
                try client.syncEngine.loadBundle(try DocumentBundle(bytes: bytes))
            } catch {
                throw StepError("loading the bundle failed: \(error)")
            }

        case .unsupported(let kind):
            throw StepError("unsupported step \(kind)")
        }
    }

    private func write(_ mutation: Mutation) throws(StepError) {
        let key = mutation.key.description
        let generation = self.generation
        outstandingWrites[currentUser, default: []].append(mutation)
        do {
            try client.syncEngine.write([mutation]) { [unowned self] result in
                guard generation == self.generation else { return }
                switch result {
                case .success: self.acknowledgedDocs.append(key)
                case .failure: self.rejectedDocs.append(key)
                }
            }
        } catch {
            throw StepError("the write was refused: \(error)")
        }
    }

    private func requireWatchStream() throws(StepError) {
        guard client.datastore.isWatchStreamOpen else { throw StepError("the watch stream is not open") }
    }

    /// The oldest write in flight must be the current user's oldest outstanding write.
    private func validateNextWriteSent(removing: Bool) throws(StepError) {
        guard let batch = client.datastore.writesInFlight.first else {
            throw StepError("no write is in flight")
        }
        guard let expected = outstandingWrites[currentUser]?.first else {
            throw StepError("a write is in flight, but the user \"\(currentUser)\" has no outstanding write")
        }
        guard batch.mutations == [expected] else {
            throw StepError("the write in flight is \(batch.mutations), expected \(expected)")
        }
        if removing { outstandingWrites[currentUser]?.removeFirst() }
    }

    /// Closes the client and opens a new one on the same directory, as a process restart:
    /// listeners, callbacks and the fake server's state are gone; the database stays.
    private func restart() throws(StepError) {
        client.shutdown()
        generation += 1
        queryListeners = [:]
        snapshotsInSyncListeners = []
        networkEnabled = true
        do {
            client = try SpecClient(
                directory: directory, user: currentUser, maxConcurrentLimboResolutions: maxConcurrentLimboResolutions)
        } catch {
            throw StepError("reopening the store failed: \(error)")
        }
    }

    private static func event(query: Query, _ result: Result<ViewSnapshot, DocError>) -> SpecActualEvent {
        switch result {
        case .success(let snapshot):
            let changes = snapshot.documentChanges.map { change -> (kind: SpecActualEvent.Kind, document: SpecDocument) in
                let kind: SpecActualEvent.Kind
                switch change.kind {
                case .added: kind = .added
                case .modified: kind = .modified
                case .removed: kind = .removed
                case .metadata: kind = .metadata
                }
                return (kind, SpecDocument(change.document))
            }
            return SpecActualEvent(
                query: query, changes: changes, fromCache: snapshot.isFromCache,
                hasPendingWrites: snapshot.hasPendingWrites)
        case .failure(let error):
            return SpecActualEvent(query: query, error: error)
        }
    }

    // MARK: - Expectations

    private func validate(_ step: SpecStep) -> [String] {
        var problems = SpecComparison.compareEvents(expected: step.expectedSnapshotEvents, actual: events)
        events = []

        let state = step.expectedState
        if let state {
            if let expected = state.numOutstandingWrites {
                let actual = client.datastore.writesInFlight.count
                if actual != expected { problems.append("numOutstandingWrites: expected \(expected), got \(actual)") }
            }
            if let expected = state.writeStreamRequestCount, expected != client.datastore.writeStreamRequestCount {
                problems.append("writeStreamRequestCount: expected \(expected), got \(client.datastore.writeStreamRequestCount)")
            }
            if let expected = state.watchStreamRequestCount, expected != client.datastore.watchStreamRequestCount {
                problems.append("watchStreamRequestCount: expected \(expected), got \(client.datastore.watchStreamRequestCount)")
            }
            if let docs = state.activeLimboDocs { expectedActiveLimboDocs = docs }
            if let docs = state.enqueuedLimboDocs { expectedEnqueuedLimboDocs = docs }
            if let targets = state.activeTargets { expectedActiveTargets = targets }
        }

        // Always checked, as the runners do.
        let expectedAcknowledged = state?.userCallbacks?.acknowledgedDocs ?? []
        let expectedRejected = state?.userCallbacks?.rejectedDocs ?? []
        if acknowledgedDocs != expectedAcknowledged {
            problems.append("acknowledged docs: expected \(expectedAcknowledged), got \(acknowledgedDocs)")
        }
        if rejectedDocs != expectedRejected {
            problems.append("rejected docs: expected \(expectedRejected), got \(rejectedDocs)")
        }
        acknowledgedDocs = []
        rejectedDocs = []

        let activeLimbo = client.syncEngine.activeLimboDocuments
        for (key, targetID) in activeLimbo.sorted(by: { $0.key < $1.key }) where expectedActiveTargets[targetID] == nil {
            problems.append("limbo document \(key) has target \(targetID), which is not an expected active target")
        }
        if let diff = SpecComparison.compareKeys("active limbo docs", expected: expectedActiveLimboDocs, actual: Array(activeLimbo.keys)) {
            problems.append(diff)
        }
        if let diff = SpecComparison.compareKeys(
            "enqueued limbo docs", expected: expectedEnqueuedLimboDocs, actual: client.syncEngine.enqueuedLimboDocuments)
        {
            problems.append(diff)
        }
        if networkEnabled {
            problems += validateActiveTargets()
        }

        if snapshotsInSyncEvents != step.expectedSnapshotsInSyncEvents {
            problems.append("snapshots-in-sync events: expected \(step.expectedSnapshotsInSyncEvents), got \(snapshotsInSyncEvents)")
        }
        snapshotsInSyncEvents = 0
        if waitForPendingWritesEvents != step.expectedWaitForPendingWritesEvents {
            problems.append(
                "wait-for-pending-writes events: expected \(step.expectedWaitForPendingWritesEvents), got \(waitForPendingWritesEvents)")
        }
        waitForPendingWritesEvents = 0

        if !client.storageErrors.errors.isEmpty {
            problems.append("storage errors: \(client.storageErrors.errors)")
        }
        return problems
    }

    /// The targets the fake server watches must be the expected ones: same target (query),
    /// purpose and resume token (and read time / expected count when the file gives them).
    private func validateActiveTargets() -> [String] {
        var problems: [String] = []
        var actual = client.datastore.activeTargets
        for (targetID, expected) in expectedActiveTargets.sorted(by: { $0.key < $1.key }) {
            guard let data = actual.removeValue(forKey: targetID) else {
                problems.append("active target \(targetID) missing (expected \(expected.queries[0]))")
                continue
            }
            var query = expected.queries[0].query
            if expected.purpose == .limboResolution {
                // Our limbo resolutions listen to the document including tombstones (a
                // product decision: a tombstoned document exists on the server).
                query = query.includingDeleted()
            }
            let target: Target
            do {
                target = try query.toTarget()
            } catch {
                problems.append("active target \(targetID): the expected query is invalid: \(error)")
                continue
            }
            if data.target != target {
                problems.append("active target \(targetID): target \(data.target.canonicalID), expected \(target.canonicalID)")
            }
            if data.purpose != expected.purpose {
                problems.append("active target \(targetID): purpose \(data.purpose), expected \(expected.purpose)")
            }
            if let token = expected.resumeToken, data.resumeToken != token {
                problems.append(
                    "active target \(targetID): resume token \"\(String(decoding: data.resumeToken, as: UTF8.self))\", "
                        + "expected \"\(String(decoding: token, as: UTF8.self))\"")
            }
            if let readTime = expected.readTime, data.snapshotVersion != readTime || !data.resumeToken.isEmpty {
                problems.append("active target \(targetID): read time \(data.snapshotVersion), expected \(readTime)")
            }
            if let count = expected.expectedCount, data.expectedCount != count {
                problems.append("active target \(targetID): expected count \(String(describing: data.expectedCount)), expected \(count)")
            }
        }
        for (targetID, data) in actual.sorted(by: { $0.key < $1.key }) {
            problems.append("unexpected active target \(targetID): \(data.target.canonicalID)")
        }
        return problems
    }
}

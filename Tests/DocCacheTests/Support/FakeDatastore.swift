import Testing
@testable import DocCache
import DocModel

/// A ``Datastore`` with no network: its streams record everything the client sends, and the
/// test says what the server answers. Modelled on Firestore's spec-test mock datastore, so a
/// spec-test driver can map its steps directly:
///
/// | spec step | call |
/// |---|---|
/// | `watchAck` | ``watchAck(_:)`` |
/// | `watchCurrent` | ``watchCurrent(_:resumeToken:)`` |
/// | `watchEntity` | ``watchEntity(_:targets:removedTargets:)`` / ``watchRemoveKey(_:removedTargets:)`` |
/// | `watchFilter` | ``watchFilter(targetID:count:bloomFilter:)`` |
/// | `watchReset` | ``watchReset(_:)`` |
/// | `watchRemove` | ``watchRemove(_:cause:)`` |
/// | `watchSnapshot` | ``watchSnapshot(version:targetIDs:resumeToken:)`` |
/// | `watchStreamClose` | ``watchStreamClose(error:)``, then (with `runBackoffTimer`) run the scheduler's `listen_stream_connection_backoff` timer |
/// | `writeAck` | ``writeAck(version:results:streamToken:)`` |
/// | `failWrite` | ``failWrite(error:)``; for a transient error the retry waits for the `write_stream_connection_backoff` timer (zero delay the first time: ``ManualScheduler/runDue()``) |
/// | `enableNetwork` | the remote store's `enableNetwork()` / `disableNetwork()` |
/// | expected `activeTargets` | ``activeTargets`` |
/// | expected `watchStreamRequestCount` / `writeStreamRequestCount` | the properties of those names |
///
/// Streams open as soon as they are started and the write handshake completes as soon as it
/// is sent (as in the Firestore mocks); set ``opensStreamsOnStart`` / ``completesHandshakes``
/// to `false` to drive those steps by hand. With a scheduler, a stream marked idle closes
/// when the `listen_stream_idle` / `write_stream_idle` timer runs.
final class FakeDatastore: Datastore {
    /// Open streams inside `start()` (default); otherwise call ``FakeWatchStream/open()``.
    var opensStreamsOnStart = true
    /// Complete the write handshake inside `writeHandshake()` (default); otherwise call
    /// ``FakeWriteStream/completeHandshake(streamToken:)``.
    var completesHandshakes = true

    /// Requests sent on the watch stream: every target added and every target removed (the
    /// count the Firestore spec tests check as `watchStreamRequestCount`).
    var watchStreamRequestCount = 0
    /// Requests sent on the write stream: handshakes, batches, and the empty request that
    /// closes a stream whose handshake completed (the spec tests' `writeStreamRequestCount`).
    var writeStreamRequestCount = 0

    private let scheduler: (any Scheduler)?
    private(set) var watchStream: FakeWatchStream?
    private(set) var writeStream: FakeWriteStream?

    /// A datastore whose streams close themselves when idle if `scheduler` is given.
    init(scheduler: (any Scheduler)? = nil) {
        self.scheduler = scheduler
    }

    func makeWatchStream(delegate: any WatchStreamDelegate) -> any WatchStream {
        let stream = FakeWatchStream(datastore: self, delegate: delegate, scheduler: scheduler)
        watchStream = stream
        return stream
    }

    func makeWriteStream(delegate: any WriteStreamDelegate) -> any WriteStream {
        let stream = FakeWriteStream(datastore: self, delegate: delegate, scheduler: scheduler)
        writeStream = stream
        return stream
    }

    // MARK: - Watch, as the spec steps say it

    /// The targets the server is watching for the client, with what the client sent (resume
    /// token, expected count, purpose). Empty while the watch stream is closed.
    var activeTargets: [TargetID: TargetData] { watchStream?.activeTargets ?? [:] }

    /// Whether the watch stream is open.
    var isWatchStreamOpen: Bool { watchStream?.isOpen ?? false }

    /// How many times the watch stream was started.
    var watchStreamStartCount: Int { watchStream?.startCount ?? 0 }

    /// `watchAck`: the server added the targets.
    func watchAck(_ targetIDs: [TargetID], resumeToken: ResumeToken = []) {
        sendWatch(.target(.init(state: .added, targetIDs: targetIDs, resumeToken: resumeToken)))
    }

    /// `watchCurrent`: the targets are current as of the next snapshot.
    func watchCurrent(_ targetIDs: [TargetID], resumeToken: ResumeToken) {
        sendWatch(.target(.init(state: .current, targetIDs: targetIDs, resumeToken: resumeToken)))
    }

    /// `watchEntity` with a document: it now matches `targets` and no longer matches
    /// `removedTargets`. A `NoDocument` is a delete.
    func watchEntity(_ document: MaybeDocument, targets: [TargetID], removedTargets: [TargetID] = []) {
        sendWatch(.document(.init(
            updatedTargetIDs: targets, removedTargetIDs: removedTargets, key: document.key, document: document)))
    }

    /// `watchEntity` with only a key: the document left `removedTargets`.
    func watchRemoveKey(_ key: DocumentKey, removedTargets: [TargetID]) {
        sendWatch(.document(.init(updatedTargetIDs: [], removedTargetIDs: removedTargets, key: key, document: nil)))
    }

    /// `watchFilter`: the server counts `count` documents in the target, with a bloom filter
    /// of their names when given.
    func watchFilter(targetID: TargetID, count: Int, bloomFilter: WatchChange.BloomFilterParameters? = nil) {
        sendWatch(.existenceFilter(targetID: targetID, count: count, bloomFilter: bloomFilter))
    }

    /// `watchReset`: the server forgot the targets' state.
    func watchReset(_ targetIDs: [TargetID], resumeToken: ResumeToken = []) {
        sendWatch(.target(.init(state: .reset, targetIDs: targetIDs, resumeToken: resumeToken)))
    }

    /// `watchRemove`: the server removed the targets, with an error when `cause` is given (the
    /// targets then stop being active on the server).
    func watchRemove(_ targetIDs: [TargetID], cause: DocError? = nil) {
        sendWatch(.target(.init(state: .removed, targetIDs: targetIDs, cause: cause)))
    }

    /// `watchSnapshot`: a `noChange` carrying `version`. It is a global snapshot only when
    /// `targetIDs` is empty (otherwise the version is dropped, as the wire decoder does).
    func watchSnapshot(version: SnapshotVersion, targetIDs: [TargetID] = [], resumeToken: ResumeToken = []) {
        sendWatch(
            .target(.init(state: .noChange, targetIDs: targetIDs, resumeToken: resumeToken)), snapshotVersion: version)
    }

    /// Delivers any watch message.
    func sendWatch(_ change: WatchChange, snapshotVersion: SnapshotVersion = .none) {
        guard let watchStream else {
            Issue.record("no watch stream was created")
            return
        }
        watchStream.receive(change, snapshotVersion: snapshotVersion)
    }

    /// `watchStreamClose`: the watch stream fails with `error`.
    func watchStreamClose(error: DocError) {
        watchStream?.fail(error)
    }

    // MARK: - Write, as the spec steps say it

    /// The batches written and not yet acknowledged or failed, oldest first.
    var writesInFlight: [MutationBatch] { writeStream?.inFlight ?? [] }

    /// Every batch ever written, in order (re-sent batches appear again).
    var sentWrites: [MutationBatch] { writeStream?.sentBatches ?? [] }

    /// How many times the write stream was started.
    var writeStreamStartCount: Int { writeStream?.startCount ?? 0 }

    /// Whether the write stream is open.
    var isWriteStreamOpen: Bool { writeStream?.isOpen ?? false }

    /// `writeAck`: the server committed the oldest batch in flight at `version`. Without
    /// `results`, each mutation of the batch gets a result at `version`.
    func writeAck(version: SnapshotVersion, results: [MutationResult]? = nil, streamToken: ResumeToken? = nil) {
        guard let writeStream else {
            Issue.record("no write stream was created")
            return
        }
        writeStream.acknowledge(version: version, results: results, streamToken: streamToken)
    }

    /// `failWrite`: the write stream fails with `error` (the remote store decides whether the
    /// oldest batch is rejected or retried).
    func failWrite(error: DocError) {
        writeStream?.fail(error)
    }
}

/// The watch stream of a ``FakeDatastore``.
final class FakeWatchStream: WatchStream {
    /// A request the client sent.
    enum Request: Equatable {
        case watch(TargetData)
        case unwatch(TargetID)
    }

    private unowned let datastore: FakeDatastore
    private weak var delegate: (any WatchStreamDelegate)?
    private let scheduler: (any Scheduler)?
    private var idleTimer: (any ScheduledTimer)?

    private(set) var isStarted = false
    private(set) var isOpen = false
    /// How many times `start()` was called.
    private(set) var startCount = 0
    /// How many times the stream was marked idle.
    private(set) var markIdleCount = 0
    /// The targets added and not removed since the stream opened.
    private(set) var activeTargets: [TargetID: TargetData] = [:]
    /// Every request, in order, across reconnects.
    private(set) var requests: [Request] = []

    fileprivate init(datastore: FakeDatastore, delegate: any WatchStreamDelegate, scheduler: (any Scheduler)?) {
        self.datastore = datastore
        self.delegate = delegate
        self.scheduler = scheduler
    }

    /// Whether the idle timer is running.
    var isIdle: Bool { idleTimer != nil }

    func start() {
        if isStarted { Issue.record("the watch stream was started twice") }
        isStarted = true
        startCount += 1
        if datastore.opensStreamsOnStart { open() }
    }

    /// The connection is established.
    func open() {
        guard isStarted, !isOpen else {
            Issue.record("open() on a watch stream that is not starting")
            return
        }
        isOpen = true
        delegate?.watchStreamDidOpen()
    }

    func stop() {
        reset()
    }

    func markIdle() {
        markIdleCount += 1
        guard isOpen, idleTimer == nil, let scheduler else { return }
        idleTimer = scheduler.schedule(.listenStreamIdle, after: .seconds(60)) { [weak self] in
            guard let self else { return }
            self.idleTimer = nil
            self.reset()
            self.delegate?.watchStreamDidClose(error: nil)
        }
    }

    func watch(_ targetData: TargetData) {
        guard isOpen else {
            Issue.record("watch(\(targetData.targetID)) on a closed watch stream")
            return
        }
        cancelIdle()
        datastore.watchStreamRequestCount += 1
        requests.append(.watch(targetData))
        activeTargets[targetData.targetID] = targetData
    }

    func unwatch(_ targetID: TargetID) {
        guard isOpen else {
            Issue.record("unwatch(\(targetID)) on a closed watch stream")
            return
        }
        cancelIdle()
        datastore.watchStreamRequestCount += 1
        requests.append(.unwatch(targetID))
        activeTargets[targetID] = nil
    }

    /// The server sends a message.
    func receive(_ change: WatchChange, snapshotVersion: SnapshotVersion) {
        guard isOpen else {
            Issue.record("a watch message was sent on a closed watch stream")
            return
        }
        var version = snapshotVersion
        if case .target(let targetChange) = change {
            if targetChange.cause != nil {
                // A removal with an error ends the listen on the server.
                for targetID in targetChange.targetIDs {
                    if activeTargets.removeValue(forKey: targetID) == nil {
                        Issue.record("the server removed target \(targetID), which is not active")
                    }
                }
            }
            if !targetChange.targetIDs.isEmpty {
                // Only a change for all targets carries a global snapshot version.
                version = .none
            }
        }
        delegate?.watchStreamDidChange(change, snapshotVersion: version)
    }

    /// The server closes the stream without an error.
    func closeCleanly() {
        guard isStarted else {
            Issue.record("closeCleanly() on a watch stream that is not started")
            return
        }
        reset()
        delegate?.watchStreamDidClose(error: nil)
    }

    /// The stream fails with `error`.
    func fail(_ error: DocError) {
        guard isStarted else {
            Issue.record("fail() on a watch stream that is not started")
            return
        }
        reset()
        delegate?.watchStreamDidClose(error: error)
    }

    private func cancelIdle() {
        idleTimer?.cancel()
        idleTimer = nil
    }

    private func reset() {
        cancelIdle()
        isStarted = false
        isOpen = false
        activeTargets.removeAll()
    }
}

/// The write stream of a ``FakeDatastore``.
final class FakeWriteStream: WriteStream {
    private unowned let datastore: FakeDatastore
    private weak var delegate: (any WriteStreamDelegate)?
    private let scheduler: (any Scheduler)?
    private var idleTimer: (any ScheduledTimer)?

    private(set) var isStarted = false
    private(set) var isOpen = false
    private(set) var isHandshakeComplete = false
    var lastStreamToken: ResumeToken = []
    /// How many times `start()` was called.
    private(set) var startCount = 0
    /// How many times the stream was marked idle.
    private(set) var markIdleCount = 0
    /// The stream token sent with each handshake, in order.
    private(set) var handshakes: [ResumeToken] = []
    /// Every batch written, in order, across reconnects.
    private(set) var sentBatches: [MutationBatch] = []
    /// Batches written on the current connection and not yet acknowledged, oldest first.
    private(set) var inFlight: [MutationBatch] = []
    /// Batches written while an acknowledgement is handled: like the network stream, they leave
    /// when the handling ends or at ``sendWritten()``.
    private var heldWhileAcknowledging: [MutationBatch]?

    fileprivate init(datastore: FakeDatastore, delegate: any WriteStreamDelegate, scheduler: (any Scheduler)?) {
        self.datastore = datastore
        self.delegate = delegate
        self.scheduler = scheduler
    }

    /// Whether the idle timer is running.
    var isIdle: Bool { idleTimer != nil }

    func start() {
        if isStarted { Issue.record("the write stream was started twice") }
        isStarted = true
        startCount += 1
        if datastore.opensStreamsOnStart { open() }
    }

    /// The connection is established.
    func open() {
        guard isStarted, !isOpen else {
            Issue.record("open() on a write stream that is not starting")
            return
        }
        isOpen = true
        delegate?.writeStreamDidOpen()
    }

    func stop() {
        if isHandshakeComplete {
            // Closing a handshaken stream sends a final, empty write request.
            datastore.writeStreamRequestCount += 1
        }
        reset()
    }

    func markIdle() {
        markIdleCount += 1
        guard isOpen, idleTimer == nil, let scheduler else { return }
        idleTimer = scheduler.schedule(.writeStreamIdle, after: .seconds(60)) { [weak self] in
            guard let self else { return }
            self.idleTimer = nil
            self.stop()
            self.delegate?.writeStreamDidClose(error: nil)
        }
    }

    func writeHandshake() {
        guard isOpen, !isHandshakeComplete else {
            Issue.record("writeHandshake() on a write stream that is not open or already handshaken")
            return
        }
        cancelIdle()
        datastore.writeStreamRequestCount += 1
        handshakes.append(lastStreamToken)
        if datastore.completesHandshakes { completeHandshake() }
    }

    /// The server answers the handshake, optionally with a new stream token.
    func completeHandshake(streamToken: ResumeToken? = nil) {
        guard isOpen, !isHandshakeComplete else {
            Issue.record("completeHandshake() without a pending handshake")
            return
        }
        if let streamToken { lastStreamToken = streamToken }
        isHandshakeComplete = true
        delegate?.writeStreamDidCompleteHandshake()
    }

    func write(_ batch: MutationBatch) {
        guard isOpen, isHandshakeComplete else {
            Issue.record("write(\(batch.batchID)) before the handshake completed")
            return
        }
        cancelIdle()
        inFlight.append(batch)
        if heldWhileAcknowledging != nil { heldWhileAcknowledging?.append(batch) } else { send(batch) }
    }

    func sendWritten() {
        guard let held = heldWhileAcknowledging else { return }
        heldWhileAcknowledging = []
        held.forEach(send)
    }

    private func send(_ batch: MutationBatch) {
        datastore.writeStreamRequestCount += 1
        sentBatches.append(batch)
    }

    /// The server commits the oldest batch in flight.
    func acknowledge(version: SnapshotVersion, results: [MutationResult]?, streamToken: ResumeToken?) {
        guard isOpen, let batch = inFlight.first else {
            Issue.record("writeAck without a write in flight")
            return
        }
        inFlight.removeFirst()
        if let streamToken { lastStreamToken = streamToken }
        let results = results ?? batch.mutations.map { _ in MutationResult(version: version) }
        heldWhileAcknowledging = []
        delegate?.writeStreamDidReceiveResult(commitVersion: version, results: results)
        let held = heldWhileAcknowledging ?? []
        heldWhileAcknowledging = nil
        held.forEach(send)
    }

    /// The server closes the stream without an error.
    func closeCleanly() {
        guard isStarted else {
            Issue.record("closeCleanly() on a write stream that is not started")
            return
        }
        reset()
        delegate?.writeStreamDidClose(error: nil)
    }

    /// The stream fails with `error` (the delegate may restart it from the callback).
    func fail(_ error: DocError) {
        guard isStarted else {
            Issue.record("fail() on a write stream that is not started")
            return
        }
        reset()
        delegate?.writeStreamDidClose(error: error)
    }

    private func cancelIdle() {
        idleTimer?.cancel()
        idleTimer = nil
    }

    private func reset() {
        cancelIdle()
        isStarted = false
        isOpen = false
        isHandshakeComplete = false
        inFlight.removeAll()
        if heldWhileAcknowledging != nil { heldWhileAcknowledging = [] }
    }
}

import DocModel
import DocProtocol
import Synchronization
import Testing
@testable import DocServer

/// Group commit across connections: commits of different connections (and the server's own)
/// that wait for a tenant's hub at the same time are stored in one store transaction, each
/// still on its own — its author's rules, its outcome, its commit version in arrival order —
/// and a failing batch only stops the later batches of its own frame.
@Suite struct CrossConnectionGroupCommitTests {
    /// A core over a store whose first single commit waits until the test opens the gate (so
    /// the hub stays busy while other commits arrive), which records the batches of every group
    /// it stores, and whose outcome reads fail for chosen batches.
    final class GatedServer: Sendable {
        let server = TestServer()
        let gate = CommitGate()
        let core: DocServerCore

        init(maxBatchesPerFrame: Int? = nil) {
            var configuration = ServerConfiguration()
            configuration.clock = server.clock.serverClock
            if let maxBatchesPerFrame { configuration.frameLimits.maxBatchesPerFrame = maxBatchesPerFrame }
            core = DocServerCore(store: GatedStore(base: server.store, gate: gate), configuration: configuration, logger: .discarding)
        }

        func connect(uid: String, client: String) async throws -> ServerConnection {
            let connection = try await core.handshake(tenant: "acme", uid: uid, clientID: client)
            _ = connection.outbound.drain()
            return connection
        }

        /// Waits until `count` commits wait behind the hub's current one.
        func waitForQueuedCommits(_ count: Int) async throws {
            let hub = try await core.hub(for: TenantID("acme"))
            for _ in 0..<20_000 {
                if await hub.waitingUnitCount >= count { return }
                try await Task.sleep(for: .milliseconds(1))
            }
            Issue.record("\(count) commits never queued behind the busy hub")
        }
    }

    static func version(_ message: ServerMessage) -> SnapshotVersion? { message.writeResult?.commitVersion }

    @Test func commitsOfDifferentConnectionsThatWaitTogetherAreStoredTogetherInArrivalOrder() async throws {
        let gated = GatedServer()
        let ann = try await gated.connect(uid: "ann", client: "ann-phone")
        let bob = try await gated.connect(uid: "bob", client: "bob-phone")
        let cy = try await gated.connect(uid: "cy", client: "cy-phone")

        // Ann's commit takes the hub and waits inside the store.
        let first = Task { await gated.core.write(.init(clientID: ann.clientID, batchID: 1, mutations: [T.set("notes/a", ["n": 1])]), on: ann) }
        await gated.gate.waitUntilEntered()
        // Bob's batch, then Cy's frame of two batches, wait for the hub.
        let second = Task { await gated.core.write(.init(clientID: bob.clientID, batchID: 1, mutations: [T.set("notes/b", ["n": 2])]), on: bob) }
        try await gated.waitForQueuedCommits(1)
        let third = Task {
            await gated.core.write(ClientMessage.WriteBatches(clientID: cy.clientID, batches: [
                .init(batchID: 1, mutations: [T.set("notes/c", ["n": 3])]),
                .init(batchID: 2, mutations: [T.increment("notes/b")]),
            ]), on: cy)
        }
        try await gated.waitForQueuedCommits(2)
        #expect(gated.gate.groups.isEmpty, "nothing is stored as a group while the hub is busy")
        gated.gate.open()

        let annVersion = try #require(Self.version(await first.value))
        let bobVersion = try #require(Self.version(await second.value))
        guard case .writeResults(let results) = await third.value else {
            Issue.record("Cy's frame was not answered with writeResults")
            return
        }
        let cyVersions = results.answers.compactMap { answer -> SnapshotVersion? in
            if case .committed(_, let version, _) = answer { version } else { nil }
        }
        #expect(cyVersions.count == 2, "both of Cy's batches commit: \(results.answers)")
        #expect([annVersion, bobVersion] + cyVersions == ([annVersion, bobVersion] + cyVersions).sorted() && Set(cyVersions).count == 2,
                "commit versions follow arrival order")
        #expect(gated.gate.groups == [[
            BatchKey(clientID: bob.clientID, batchID: 1), BatchKey(clientID: cy.clientID, batchID: 1), BatchKey(clientID: cy.clientID, batchID: 2),
        ]], "the waiting commits were stored as one group, in arrival order")
        // Cy's increment saw Bob's document of the same group.
        let stored = try await gated.server.tenantStore("acme").documents([T.key("notes/b")]).documents[T.key("notes/b")]
        #expect(stored?.data["n"] == .integer(3))
    }

    /// Ann's commit takes the hub and waits inside the store; then Bob's commits wait behind
    /// it, in order: one per element of `units`, a `write` for a single batch id, a
    /// `writeBatches` frame for several (batch `i` writes `notes/q<i>`).
    func bobsCommitsBehindAHeldOne(_ gated: GatedServer, units: [[Int]]) async throws
        -> (ann: Task<ServerMessage, Never>, bob: ServerConnection, commits: [Task<ServerMessage, Never>])
    {
        let ann = try await gated.connect(uid: "ann", client: "ann-phone")
        let bob = try await gated.connect(uid: "bob", client: "bob-phone")
        let first = Task { await gated.core.write(.init(clientID: ann.clientID, batchID: 1, mutations: [T.set("notes/a", ["n": 1])]), on: ann) }
        await gated.gate.waitUntilEntered()
        func batch(_ i: Int) -> ClientMessage.WriteBatches.Batch {
            .init(batchID: i, mutations: [T.set("notes/q\(i)", ["n": .integer(Int64(i))])])
        }
        var commits: [Task<ServerMessage, Never>] = []
        for (index, ids) in units.enumerated() {
            commits.append(Task {
                if ids.count == 1 {
                    return await gated.core.write(.init(clientID: bob.clientID, batchID: ids[0], mutations: batch(ids[0]).mutations), on: bob)
                }
                return await gated.core.write(ClientMessage.WriteBatches(clientID: bob.clientID, batches: ids.map(batch)), on: bob)
            })
            try await gated.waitForQueuedCommits(index + 1)
        }
        return (first, bob, commits)
    }

    @Test func aFullGroupLeavesTheUnitsAfterItToTheNextGroup() async throws {
        let gated = GatedServer()
        // Two more single-batch commits than a group takes wait behind Ann's, in order.
        let count = TenantHub.maxGroupUnits + 2
        let (first, bob, writes) = try await bobsCommitsBehindAHeldOne(gated, units: (1...count).map { [$0] })
        gated.gate.open()
        #expect(Self.version(await first.value) != nil)
        var versions: [SnapshotVersion] = []
        for write in writes { versions.append(try #require(Self.version(await write.value))) }
        #expect(versions == versions.sorted() && Set(versions).count == count, "every commit is answered, in arrival order")
        let keys = (1...count).map { BatchKey(clientID: bob.clientID, batchID: $0) }
        #expect(gated.gate.groups == [Array(keys.prefix(TenantHub.maxGroupUnits)), Array(keys.dropFirst(TenantHub.maxGroupUnits))],
                "a full group, then the rest as the next group")
    }

    @Test func aGroupTakesNoMoreBatchesThanAFrameMayHold() async throws {
        let gated = GatedServer(maxBatchesPerFrame: 4)
        // Three frames of two batches wait: the first two fill a group of four batches.
        let (first, bob, frames) = try await bobsCommitsBehindAHeldOne(gated, units: [[1, 2], [3, 4], [5, 6]])
        gated.gate.open()
        _ = await first.value
        for frame in frames {
            guard case .writeResults(let results) = await frame.value else {
                Issue.record("a frame was not answered with writeResults")
                continue
            }
            #expect(results.answers.allSatisfy { if case .committed = $0 { true } else { false } })
        }
        let keys = (1...6).map { BatchKey(clientID: bob.clientID, batchID: $0) }
        #expect(gated.gate.groups == [Array(keys.prefix(4)), Array(keys.dropFirst(4))])
    }

    @Test func drainingWaitsForEveryQueuedCommitBeyondAFullGroup() async throws {
        let gated = GatedServer()
        let count = TenantHub.maxGroupUnits + 2
        let (first, _, writes) = try await bobsCommitsBehindAHeldOne(gated, units: (1...count).map { [$0] })
        // A drain that starts now waits for all of them, the ones after the first full group too.
        let hub = try await gated.core.hub(for: TenantID("acme"))
        let drained = Task { await hub.drain() }
        for _ in 0..<20_000 where await hub.hubWaiterCount < 2 { try await Task.sleep(for: .milliseconds(1)) }
        #expect(await hub.hubWaiterCount == 2, "the group's leader and the drain wait for the hub")
        gated.gate.open()
        await drained.value
        let keys = (1...count).map { T.key("notes/q\($0)") }
        let stored = try await gated.server.tenantStore("acme").documents(keys).documents
        #expect(stored.count == count, "stored when the drain returned: \(stored.count) of \(count)")
        _ = await first.value
        for write in writes { _ = await write.value }
    }

    /// What became of a frame of two batches (Cy's, `notes/c1` and `notes/c2`) and a single
    /// batch (Bob's, `notes/b`) that waited together behind Ann's held commit: Ann's and Bob's
    /// answers, and the codes of Cy's two answers (`nil` for a committed batch).
    func frameAndBatchBehindABusyHub(
        _ gated: GatedServer, arm: (_ cy: ServerConnection) -> Void
    ) async throws -> (ann: ServerMessage, bob: ServerMessage, cy: [DocError.Code?]?) {
        let ann = try await gated.connect(uid: "ann", client: "ann-phone")
        let bob = try await gated.connect(uid: "bob", client: "bob-phone")
        let cy = try await gated.connect(uid: "cy", client: "cy-phone")
        arm(cy)
        let first = Task { await gated.core.write(.init(clientID: ann.clientID, batchID: 1, mutations: [T.set("notes/a", ["n": 1])]), on: ann) }
        await gated.gate.waitUntilEntered()
        let cyFrame = Task {
            await gated.core.write(ClientMessage.WriteBatches(clientID: cy.clientID, batches: [
                .init(batchID: 1, mutations: [T.set("notes/c1", ["n": 1])]),
                .init(batchID: 2, mutations: [T.set("notes/c2", ["n": 2])]),
            ]), on: cy)
        }
        try await gated.waitForQueuedCommits(1)
        let bobWrite = Task { await gated.core.write(.init(clientID: bob.clientID, batchID: 1, mutations: [T.set("notes/b", ["n": 2])]), on: bob) }
        try await gated.waitForQueuedCommits(2)
        gated.gate.open()
        let (annAnswer, bobAnswer) = (await first.value, await bobWrite.value)
        guard case .writeResults(let results) = await cyFrame.value else {
            Issue.record("Cy's frame was not answered with writeResults")
            return (annAnswer, bobAnswer, nil)
        }
        return (annAnswer, bobAnswer, results.answers.map { answer -> DocError.Code? in
            if case .failed(_, let error) = answer { error.code } else { nil }
        })
    }

    @Test func aFailingBatchStopsTheRestOfItsFrameButNotTheOtherConnections() async throws {
        let gated = GatedServer()
        let outcome = try await frameAndBatchBehindABusyHub(gated) { cy in
            gated.gate.failOutcomeReads(of: BatchKey(clientID: cy.clientID, batchID: 1))
        }
        #expect(Self.version(outcome.ann) != nil)
        #expect(Self.version(outcome.bob) != nil, "Bob's batch commits although a batch before it in the group failed")
        #expect(outcome.cy == [.unavailable, .unavailable], "the failing batch and the one after it in its frame")
        let stored = try await gated.server.tenantStore("acme").documents([T.key("notes/c1"), T.key("notes/c2"), T.key("notes/b")]).documents
        #expect(stored[T.key("notes/c1")] == nil && stored[T.key("notes/c2")] == nil, "nothing of Cy's frame is stored")
        #expect(stored[T.key("notes/b")] != nil)
        #expect(gated.gate.groups == [[BatchKey(clientID: "bob-phone", batchID: 1)]])
    }

    @Test func whenTheGroupFailsItsBatchesCommitOneByOneAndAFailureStillStopsItsFrame() async throws {
        let gated = GatedServer()
        // The group's transaction fails; then, committing one by one, Cy's first batch fails.
        let outcome = try await frameAndBatchBehindABusyHub(gated) { cy in
            gated.gate.failGroupCommits(thenOutcomeReadsOf: [BatchKey(clientID: cy.clientID, batchID: 1)])
        }
        #expect(Self.version(outcome.ann) != nil)
        #expect(Self.version(outcome.bob) != nil, "Bob's batch commits on its own")
        #expect(outcome.cy == [.unavailable, .unavailable], "the failing batch and the one after it")
        let stored = try await gated.server.tenantStore("acme").documents([T.key("notes/c2"), T.key("notes/b")]).documents
        #expect(stored[T.key("notes/c2")] == nil, "the batch after the failing one is not committed before it")
        #expect(stored[T.key("notes/b")] != nil)
        #expect(gated.gate.groups.count == 1, "one group was tried, then the batches went one by one")
    }

    @Test func aLoneCommitIsNotStoredAsAGroup() async throws {
        let gated = GatedServer()
        gated.gate.open()
        let ann = try await gated.connect(uid: "ann", client: "ann-phone")
        for i in 1...3 {
            let answer = await gated.core.write(.init(clientID: ann.clientID, batchID: i, mutations: [T.set("notes/a\(i)", ["n": 1])]), on: ann)
            #expect(Self.version(answer) != nil)
        }
        #expect(gated.gate.groups.isEmpty)
    }
}

/// The test's control over ``GatedStore``.
final class CommitGate: Sendable {
    private struct State {
        var armed = true
        var opened = false
        var waiting: CheckedContinuation<Void, Never>?
        var entered: CheckedContinuation<Void, Never>?
        var hasEntered = false
        var groups: [[BatchKey]] = []
        var failing: Set<BatchKey> = []
        var failGroups = false
        var failingAfterGroup: Set<BatchKey> = []
    }

    private let state = Mutex(State())

    /// The batch keys of every group stored, in order.
    var groups: [[BatchKey]] { state.withLock { $0.groups } }

    /// Reading `batch`'s outcome fails (`unavailable`) from now on.
    func failOutcomeReads(of batch: BatchKey) { state.withLock { _ = $0.failing.insert(batch) } }

    func fails(_ batch: BatchKey) -> Bool { state.withLock { $0.failing.contains(batch) } }

    /// Every group commit fails (`unavailable`); from the first one on, reading the outcome of
    /// `batches` fails too (so the group's one-by-one fallback meets a failing batch).
    func failGroupCommits(thenOutcomeReadsOf batches: Set<BatchKey>) {
        state.withLock { state in
            state.failGroups = true
            state.failingAfterGroup = batches
        }
    }

    /// Records a group about to be stored; `false` when it must fail.
    func record(_ group: [BatchKey]) -> Bool {
        state.withLock { state in
            state.groups.append(group)
            guard state.failGroups else { return true }
            state.failing.formUnion(state.failingAfterGroup)
            return false
        }
    }

    /// Lets the held commit (and every later one) through.
    func open() {
        let waiting = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.opened = true
            defer { state.waiting = nil }
            return state.waiting
        }
        waiting?.resume()
    }

    /// Returns once the first commit waits at the gate.
    func waitUntilEntered() async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                if state.hasEntered { return true }
                state.entered = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// Called by the store's single commit: the first one waits until ``open()``.
    func pass() async {
        let hold = state.withLock { state -> Bool in
            defer { state.armed = false }
            return state.armed && !state.opened
        }
        guard hold else { return }
        await withCheckedContinuation { continuation in
            let (resumeNow, entered) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
                state.hasEntered = true
                defer { state.entered = nil }
                if state.opened { return (true, state.entered) }
                state.waiting = continuation
                return (false, state.entered)
            }
            entered?.resume()
            if resumeNow { continuation.resume() }
        }
    }
}

/// A LevelDB store with a ``CommitGate`` in front of its tenants' commits.
final class GatedStore: ServerStore {
    let base: LevelDBServerStore
    let gate: CommitGate

    init(base: LevelDBServerStore, gate: CommitGate) {
        self.base = base
        self.gate = gate
    }

    func tenant(_ tenant: TenantID) async throws(DocError) -> any TenantStore {
        GatedTenantStore(base: try await base.tenant(tenant), gate: gate)
    }

    func tenantIDs() async throws(DocError) -> [TenantID] { try await base.tenantIDs() }
    func checkHealth() async throws(DocError) { try await base.checkHealth() }
    func close() async {}
}

struct GatedTenantStore: ForwardingTenantStore {
    let base: any TenantStore
    let gate: CommitGate

    func outcome(of batch: BatchKey) async throws(DocError) -> BatchOutcome? {
        if gate.fails(batch) { throw DocError(.unavailable, "outcome read of \(batch) fails (test)") }
        return try await base.outcome(of: batch)
    }
    /// A group's read-ahead of its outcomes fails as the failing batch's read does (the group
    /// then reads batch by batch, and meets the failure at that batch).
    func readAhead(batches: [BatchKey], documents keys: [DocumentKey]) async throws(DocError) -> GroupReadAhead {
        if let batch = batches.first(where: gate.fails) { throw DocError(.unavailable, "outcome read of \(batch) fails (test)") }
        return try await base.readAhead(batches: batches, documents: keys)
    }
    func commit(_ request: CommitRequest) async throws(DocError) -> CommitResult {
        await gate.pass()
        return try await base.commit(request)
    }
    func commitGroup(_ requests: [CommitRequest]) async throws(DocError) -> SnapshotVersion {
        guard gate.record(requests.map(\.outcome.batch)) else { throw DocError(.unavailable, "group commit fails (test)") }
        return try await base.commitGroup(requests)
    }
}

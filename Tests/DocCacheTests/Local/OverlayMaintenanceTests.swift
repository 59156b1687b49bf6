import DocModel
import DocTestSupport
import DocTestTraits
import Synchronization
import Testing
@testable import DocCache

/// The local view after acknowledgements, rejections, reverts and remote events is what a
/// full recompute (remote document + every pending batch, in order) gives, also when the
/// server's values differ from what the local view assumed (another writer's increments,
/// server timestamps). The local store re-applies only the batches whose result can change
/// (`OverlayMaintenance`); these tests compare it with the full recompute after every step.
@Suite("Overlays after acknowledgements and remote events", .cpuBound)
struct OverlayMaintenanceTests {
    typealias F = PersistenceFixtures

    @Test func interleavedIncrementsAndSetsAcknowledgedWithOtherServerValues() throws {
        try OverlayHarness.run { h in
            let c = F.key("counters/c")
            let other = F.key("counters/other")
            // Five batches on one document (and a second document in some of them).
            try h.write(.setMerge(c, ObjectValue(), transforms: [.increment(F.field("n"), by: 1)]))       // n = 1
            try h.write(.set(c, ObjectValue(["n": 100, "label": "set"])),                                    // n = 100
                        .set(other, ObjectValue(["seq": 1])))
            try h.write(.update(c, fields: [:], transforms: [.increment(F.field("n"), by: 5)]))             // n = 105
            try h.write(.update(c, fields: [F.field("label"): "patched"],
                                transforms: [.serverTimestamp(F.field("at")), .increment(F.field("n"), by: 1)]))  // n = 106
            try h.write(.setMerge(other, ObjectValue(), transforms: [.increment(F.field("seq"), by: 1)]))
            try h.check()
            #expect(try h.local(c)?.data["n"] == 106)
            #expect(try h.local(c)?.data["at"]?.isServerTimestamp == true)

            // Another client incremented n on the server before our first batch arrived:
            // the server answers n = 50 where we assumed 1. The set of batch 2 hides it.
            h.server.foreignIncrement(c, field: "n", by: 49)
            try h.acknowledgeOldest()
            try h.check()
            #expect(try h.local(c)?.data["n"] == 106)

            try h.acknowledgeOldest()   // the set: n = 100 on the server too
            try h.check()
            #expect(try h.local(c)?.data["n"] == 106)

            // Someone adds 2 before our increment of 5: the server says 107, not 105, and the
            // pending increment of 1 now shows 108.
            h.server.foreignIncrement(c, field: "n", by: 2)
            try h.acknowledgeOldest()
            try h.check()
            #expect(try h.local(c)?.data["n"] == 108)
            #expect(try h.local(c)?.hasLocalMutations == true)

            // The server timestamp and increment come back with the server's values.
            try h.acknowledgeOldest()
            try h.check()
            let acknowledged = try #require(try h.local(c))
            #expect(acknowledged.data["n"] == 108)
            #expect(acknowledged.data["at"]?.timestampValue != nil, "the server's commit time replaced the pending timestamp")
            #expect(acknowledged.data["label"] == "patched")
            #expect(!acknowledged.hasLocalMutations)

            try h.acknowledgeOldest()
            try h.check()
            #expect(try h.local(other)?.data["seq"] == 2)
            #expect(try h.localStore.pendingBatchCount() == 0)
            #expect(try h.overlayCount() == 0, "no pending batch, no overlay")
        }
    }

    @Test func manyIncrementsOnOneDocumentStayExactWhileAcknowledged() throws {
        try OverlayHarness.run { h in
            let c = F.key("counters/visits")
            let last = F.key("counters/last")
            for i in 1...60 {
                try h.write(.setMerge(c, ObjectValue(), transforms: [.increment(F.field("n"), by: 1)]),
                            .set(last, ObjectValue(["seq": .integer(Int64(i))])))
            }
            #expect(try h.local(c)?.data["n"] == 60)
            for step in 1...60 {
                if step % 7 == 0 { h.server.foreignIncrement(c, field: "n", by: 1_000) }
                if step % 11 == 0 { try h.deliverFromServer(c) }
                try h.acknowledgeOldest()
                try h.check()
            }
            // 60 of ours and 8 foreign increments of 1,000.
            #expect(try h.local(c)?.data["n"] == 8_060)
            #expect(try h.local(last)?.data["seq"] == 60)
        }
    }

    @Test func rejectingAndRevertingKeepTheLocalViewExact() throws {
        try OverlayHarness.run { h in
            let a = F.key("items/a")
            try h.write(.set(a, ObjectValue(["n": 1])))
            try h.write(.update(a, fields: [:], transforms: [.increment(F.field("n"), by: 10)]))
            let middle = try h.write(.update(a, fields: [F.field("tag"): "x"], transforms: [.increment(F.field("n"), by: 100)]))
            try h.write(.update(a, fields: [:], transforms: [.increment(F.field("n"), by: 1_000)]))
            #expect(try h.local(a)?.data["n"] == 1_111)

            _ = try h.localStore.rejectBatch(middle)   // a revert of a batch in the middle
            try h.check()
            #expect(try h.local(a)?.data["n"] == 1_011)
            #expect(try h.local(a)?.data["tag"] == nil)

            _ = try h.localStore.rejectBatch(try h.oldestBatch().batchID)   // the set: updates of a missing document
            try h.check()
            #expect(try h.local(a) == nil, "without the set, the updates do not apply locally")
        }
    }

    @Test func aDocumentThatComesTwiceInOneUpdateKeepsOnlyItsLastRows() throws {
        try OverlayHarness.run { h in
            let a = F.key("items/a")
            try h.write(.update(a, fields: [F.field("local"): true]))
            // The same document twice in one set of updates (a bundle may hold it twice): the
            // second is stored over the first, so the first's read-time and index rows go.
            _ = try h.persistence.run("updates") { txn throws(DocError) in
                try h.localStore.applyDocumentUpdates([
                    (a, F.document("items/a", ["v": 1, "first": true], version: 1), SnapshotVersion(microseconds: 1)),
                    (a, F.document("items/a", ["v": 2], version: 2), SnapshotVersion(microseconds: 2)),
                ], in: txn)
            }
            #expect(try F.keys(of: .readTimeIndex, in: h.persistence).count == 1)
            let fieldRows = try F.keys(of: .fieldIndex, in: h.persistence)
            #expect(!fieldRows.contains { String(decoding: $0, as: UTF8.self).contains("first") },
                    "no index row of the first version's field")
            #expect(try h.local(a)?.data == ObjectValue(["v": 2, "local": true]))
            try h.check()
        }
    }

    @Test func aRemoteDocumentWithoutAPendingWriteLeavesNothingInTheOverlays() throws {
        try OverlayHarness.run { h in
            let pending = F.key("items/pending"), plain = F.key("items/plain")
            try h.write(.update(pending, fields: [F.field("local"): true]))
            // Only the document with a pending write gets an overlay row. A delete of the
            // other one's (absent) overlay would leave a LevelDB deletion marker that every
            // later seek into the overlays steps over until a compaction drops it.
            let overlayWrites = try h.persistence.run("updates") { txn throws(DocError) in
                _ = try h.localStore.applyDocumentUpdates([
                    (pending, F.document("items/pending", ["v": 1], version: 1), SnapshotVersion(microseconds: 1)),
                    (plain, F.document("items/plain", ["v": 1], version: 1), SnapshotVersion(microseconds: 1)),
                ], in: txn)
                return txn.bufferedWrites(in: .prefix(KeySchema.Table.overlays.prefix))
            }
            #expect(overlayWrites.map(\.0) == [KeySchema.overlay("u", pending)])
            #expect(overlayWrites.allSatisfy { if case .put = $0.1 { true } else { false } })
            #expect(try h.local(pending)?.data == ObjectValue(["v": 1, "local": true]))
            try h.check()
            // When the batch leaves, its document's overlay goes.
            try h.acknowledgeOldest()
            #expect(try h.overlayCount() == 0)
            try h.check()
        }
    }

    @Test func aLoneSetsOverlayRefersToItsBatchUntilTheBatchLeaves() throws {
        try OverlayHarness.run { h in
            let a = F.key("items/a"), b = F.key("items/b")
            try h.write(.set(a, ObjectValue(["n": 1, "s": "one"])))
            #expect(try h.overlayRefersToBatch(a))
            let view = try #require(try h.local(a))
            #expect(view.data == ObjectValue(["n": 1, "s": "one"]))
            #expect(view.hasLocalMutations)
            try h.check()
            // A later lone set refers to its own batch; a patch stores the view it makes.
            try h.write(.set(a, ObjectValue(["n": 2])))
            #expect(try h.overlayRefersToBatch(a))
            #expect(try h.local(a)?.data == ObjectValue(["n": 2]))
            try h.write(.update(a, fields: [F.field("s"): "patched"]))
            #expect(try !h.overlayRefersToBatch(a))
            // Nor does a batch of two writes, or a set with a transform or a precondition.
            try h.write(.set(b, ObjectValue(["n": 1])), .set(F.key("items/c"), ObjectValue(["n": 1])))
            #expect(try !h.overlayRefersToBatch(b))
            try h.write(.set(F.key("items/d"), ObjectValue(), transforms: [.serverTimestamp(F.field("at"))]))
            #expect(try !h.overlayRefersToBatch(F.key("items/d")))
            try h.write(.create(F.key("items/e"), ObjectValue(["n": 1])))
            #expect(try !h.overlayRefersToBatch(F.key("items/e")))
            try h.check()
            // Acknowledged one by one, every overlay stays readable: none outlives its batch.
            while try h.localStore.pendingBatchCount() > 0 {
                try h.acknowledgeOldest()
                try h.check()
            }
            #expect(try h.overlayCount() == 0)
            // Reverting the batch an overlay refers to removes the overlay.
            let lone = try h.write(.set(a, ObjectValue(["n": 3])))
            #expect(try h.overlayRefersToBatch(a))
            _ = try h.localStore.rejectBatch(lone)
            try h.check()
            #expect(try h.overlayCount() == 0)
            #expect(try h.local(a)?.data == ObjectValue(["n": 2, "s": "patched"]))
            // A remote change under a referring overlay leaves it referring (the set hides it).
            try h.write(.set(a, ObjectValue(["n": 4])))
            h.server.foreignIncrement(a, field: "n", by: 10)
            try h.deliverFromServer(a)
            #expect(try h.overlayRefersToBatch(a))
            #expect(try h.local(a)?.data == ObjectValue(["n": 4]))
            try h.check()
        }
    }

    @Test func anOverlayReferringToAMissingBatchIsReportedAsDataLoss() throws {
        try OverlayHarness.run { h in
            let a = F.key("items/a")
            let id = try h.write(.set(a, ObjectValue(["n": 1])))
            try h.persistence.run("damage") { txn throws(DocError) in txn.delete(KeySchema.mutation("u", id)) }
            let error = #expect(throws: DocError.self) { try h.localStore.readDocument(a) }
            #expect(error?.code == .dataLoss)
            #expect(error?.message.contains("refers to batch \(id)") == true, "\(String(describing: error))")
        }
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func randomHistoriesMatchAFullRecompute(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        try OverlayHarness.run { h in
            let keys = [F.key("docs/a"), F.key("docs/b"), F.key("docs/c")]
            for _ in 0..<250 {
                try h.randomStep(keys, using: &rng)
                try h.check()
            }
            #expect(h.referringOverlaysSeen > 0, "the histories include overlays that refer to their batch")
        }
    }

    static func randomMutation(_ key: DocumentKey, using rng: inout SplitMix64) -> Mutation {
        let n = F.field("n"), at = F.field("at"), tags = F.field("tags")
        switch Int.random(in: 0..<9, using: &rng) {
        case 0: return .set(key, ObjectValue(["n": .integer(Int64.random(in: 0..<5, using: &rng)), "s": "set"]))
        case 1, 2: return .setMerge(key, ObjectValue(), transforms: [.increment(n, by: 1)])
        case 3: return .update(key, fields: [F.field("s"): "updated"], transforms: [.increment(n, by: 2)])
        case 4: return .setMerge(key, ObjectValue(["s": "stamped"]), transforms: [.serverTimestamp(at)])
        case 5: return .update(key, fields: [:], transforms: [.arrayUnion(tags, [.integer(Int64.random(in: 0..<3, using: &rng))])])
        case 6: return .delete(key)
        case 7: return .tombstone(key)
        default: return .set(key, ObjectValue(["s": "reset"]), transforms: [.increment(n, by: 1), .serverTimestamp(at)])
        }
    }
}

/// A local store on a temporary directory, a simulated server that commits the store's
/// batches in order (with `Mutation.applyOnServer`, so its transform results are the real
/// ones), and the full-recompute oracle.
final class OverlayHarness {
    typealias F = PersistenceFixtures
    let persistence: Persistence
    let localStore: LocalStore
    let server = SimulatedServer()
    /// Every document written locally.
    private(set) var written = Set<DocumentKey>()

    private init(persistence: Persistence) throws {
        self.persistence = persistence
        let clock = LocalClock()
        localStore = try LocalStore(persistence: persistence, user: "u", clock: { clock.next() })
    }

    static func run(_ body: (OverlayHarness) throws -> Void) throws {
        try F.withDirectory { directory in
            let persistence = try Persistence.open(directory: directory)
            defer { persistence.close() }
            try body(try OverlayHarness(persistence: persistence))
        }
    }

    @discardableResult
    func write(_ mutations: Mutation...) throws -> BatchID { try write(mutations) }

    @discardableResult
    func write(_ mutations: [Mutation]) throws -> BatchID {
        written.formUnion(mutations.map(\.key))
        return try localStore.writeLocally(mutations).batchID
    }

    func oldestBatch() throws -> MutationBatch { try #require(try localStore.pendingBatches().first) }

    /// The server commits the oldest pending batch and the store gets the acknowledgement;
    /// a batch the server refuses is rejected.
    func acknowledgeOldest() throws {
        let batch = try oldestBatch()
        if let results = server.commit(batch) {
            _ = try localStore.acknowledgeBatches([try MutationBatchResult(
                batch: batch, commitVersion: server.version, mutationResults: results)])
        } else {
            _ = try localStore.rejectBatch(batch.batchID)
        }
    }

    /// One random step of a history over `keys`: a write of one or two random mutations, an
    /// acknowledgement of the oldest pending batch (sometimes after another writer's increment),
    /// a rejection of a random pending batch, or watch delivering a document (sometimes after
    /// another writer's increment); with `indexing`, also steps of the overlay index.
    func randomStep(_ keys: [DocumentKey], indexing: Bool = false, using rng: inout SplitMix64) throws {
        let key = keys.randomElement(using: &rng)!
        switch Int.random(in: 0..<100, using: &rng) {
        case 0..<42:
            var mutations = [OverlayMaintenanceTests.randomMutation(key, using: &rng)]
            if Bool.random(using: &rng) {
                mutations.append(OverlayMaintenanceTests.randomMutation(keys.randomElement(using: &rng)!, using: &rng))
            }
            try write(mutations)
        case 42..<68:
            guard try localStore.pendingBatchCount() > 0 else { return }
            if Int.random(in: 0..<3, using: &rng) == 0 { server.foreignIncrement(key, field: "n", by: 7) }
            try acknowledgeOldest()
        case 68..<74:
            guard let batch = try localStore.pendingBatches().randomElement(using: &rng) else { return }
            _ = try localStore.rejectBatch(batch.batchID)
        case 74..<82:
            server.foreignIncrement(key, field: "n", by: Int64.random(in: -4...4, using: &rng))
            try deliverFromServer(key)
        case 82..<96 where indexing:
            _ = try localStore.indexOverlays(maxBatches: Int.random(in: 1...4, using: &rng))
        default:
            try deliverFromServer(key)
        }
    }

    /// Watch delivers the server's current state of `key`.
    func deliverFromServer(_ key: DocumentKey) throws {
        let document = server.documents[key] ?? .noDocument(NoDocument(key: key, version: server.version))
        _ = try localStore.applyRemoteEvent(RemoteEvent(snapshotVersion: server.version, documentUpdates: [key: document]))
    }

    func local(_ key: DocumentKey) throws -> Document? { try localStore.readDocument(key)?.document }

    /// Whether the stored overlay of `key` refers to its batch instead of holding the view.
    func overlayRefersToBatch(_ key: DocumentKey) throws -> Bool {
        let raw = try persistence.run("read overlay row") { txn throws(DocError) in try txn.get(KeySchema.overlay("u", key)) }
        guard let raw, raw.count > 1 else { return false }
        return raw[1] & DocumentRecord.batchReference != 0
    }

    /// Overlays that referred to their batch, summed over the calls of ``check(sourceLocation:)``.
    private(set) var referringOverlaysSeen = 0

    func overlayCount() throws -> Int {
        try persistence.run("count overlays") { txn throws(DocError) in try persistence.overlays.count(user: "u", in: txn) }
    }

    /// Every document's local view equals its remote document with every pending batch
    /// applied in order (create times aside: a local view's create time is not observable, and
    /// a local `set` does not read the document it replaces).
    func check(sourceLocation: SourceLocation = #_sourceLocation) throws {
        let batches = try localStore.pendingBatches()
        let keys = written.union(server.touched)
        let (remote, overlays) = try persistence.run("oracle") { txn throws(DocError) in
            (try persistence.remoteDocuments.getAll(keys, in: txn), try persistence.overlays.allOverlays(user: "u", in: txn))
        }
        for key in keys {
            var expected = remote[key]
            var applied = false
            for batch in batches where batch.keys.contains(key) {
                expected = batch.applyToLocalView(expected, for: key)
                applied = true
            }
            let actual = try localStore.readDocument(key)
            #expect(Self.comparable(actual) == Self.comparable(expected),
                    "local view of \(key): \(Self.describe(actual)), expected \(Self.describe(expected))", sourceLocation: sourceLocation)
            #expect((overlays[key] != nil) == (applied && expected != nil), "overlay of \(key)", sourceLocation: sourceLocation)
            if overlays[key] != nil, try overlayRefersToBatch(key) { referringOverlaysSeen += 1 }
        }
    }

    static func describe(_ document: MaybeDocument?) -> String {
        guard let document else { return "nothing" }
        guard case .document(let d) = document else { return "\(document)" }
        return "\(d) \(Value.map(d.data.fields).canonicalString)"
    }

    static func comparable(_ document: MaybeDocument?) -> MaybeDocument? {
        guard case .document(var d)? = document else { return document }
        d.createTime = .none
        return .document(d)
    }
}

/// The server side: documents, a version counter, other writers.
final class SimulatedServer {
    private(set) var documents: [DocumentKey: MaybeDocument] = [:]
    private(set) var version = SnapshotVersion(microseconds: 1_000_000)
    private(set) var touched = Set<DocumentKey>()

    /// Commits `batch` all or nothing; `nil` when a mutation fails (its precondition).
    func commit(_ batch: MutationBatch) -> [MutationResult]? {
        let commitVersion = SnapshotVersion(microseconds: version.microseconds + 1)
        var staged = documents
        var results: [MutationResult] = []
        for mutation in batch.mutations {
            guard let (document, result) = try? mutation.applyOnServer(staged[mutation.key], commitVersion: commitVersion) else {
                return nil
            }
            staged[mutation.key] = document
            results.append(result)
        }
        documents = staged
        version = commitVersion
        touched.formUnion(batch.keys)
        return results
    }

    /// Another client adds `amount` to an integer field (creating the document if needed).
    func foreignIncrement(_ key: DocumentKey, field: String, by amount: Int64) {
        let mutation = Mutation.setMerge(key, ObjectValue(), transforms: [.increment(try! FieldPath(field), by: .integer(amount))])
        version = SnapshotVersion(microseconds: version.microseconds + 1)
        documents[key] = try! mutation.applyOnServer(documents[key], commitVersion: version).0
        touched.insert(key)
    }
}

/// Distinct, increasing local write times.
final class LocalClock: Sendable {
    private let micros = Atomic<Int64>(1_700_000_000_000_000)
    func next() -> Timestamp { Timestamp(microseconds: micros.add(1, ordering: .relaxed).newValue) }
}

import DocModel
import DocServer
import Testing

/// The contract of ``ServerStore`` and ``TenantStore``, run against every store: what the
/// server core relies on, whichever store is behind it. Layout specifics (LevelDB keys, SQL
/// tables) are tested with each store.
@Suite struct StoreContractTests {
    // MARK: Commits

    @Test(arguments: StoreKind.allCases)
    func commitStoresDocumentsLogAndOutcomeTogether(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        let store = try await fixture.tenant("acme")
        let created = try await store.state()
        #expect(created.lastVersion.microseconds == fixture.clock.micros)
        #expect(created.changeLogFloor == created.lastVersion)
        let v = created.lastVersion.microseconds + 10
        let result = try await store.commit(CommitRequest(
            outcome: C.outcome("c", 1, version: v),
            writes: [C.put("a/1", ["x": 1], version: v), C.put("a/2", ["x": 2], version: v)]))
        #expect(result == .stored(previousVersion: created.lastVersion))
        let read = try await store.documents([C.key("a/1"), C.key("a/2"), C.key("a/3")])
        #expect(read.version.microseconds == v)
        #expect(read.documents.count == 2)
        #expect(read.documents[C.key("a/2")]?.data["x"] == 2)
        #expect(read.documents[C.key("a/2")]?.version.microseconds == v)
        guard case .complete(let log, let through) = try await store.changes(after: created.lastVersion, maxEntries: 100) else {
            Issue.record("log unavailable")
            return
        }
        #expect(through.microseconds == v)
        #expect(log.map(\.key.description) == ["a/1", "a/2"])
        #expect(log.allSatisfy { $0.version.microseconds == v })
        #expect(try await store.outcome(of: BatchKey(clientID: "c", batchID: 1)) == C.outcome("c", 1, version: v))
        #expect(try await store.state().lastVersion.microseconds == v)

        // A delete removes the document and logs a NoDocument.
        _ = try await store.commit(CommitRequest(outcome: C.outcome("c", 2, version: v + 1), writes: [C.delete("a/1")]))
        #expect(try await store.documents([C.key("a/1")]).documents.isEmpty)
        guard case .complete(let after, _) = try await store.changes(after: C.v(v), maxEntries: 100) else {
            Issue.record("log unavailable")
            return
        }
        #expect(after.count == 1)
        #expect(after.first?.document == .noDocument(NoDocument(key: C.key("a/1"), version: C.v(v + 1))))
    }

    @Test(arguments: StoreKind.allCases)
    func refusedCommitStoresNothing(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        let store = try await fixture.tenant("acme")
        let last = try await store.state().lastVersion.microseconds
        // A version that is not above the last one: aborted, and nothing of the request stored.
        let error = await #expect(throws: DocError.self) {
            try await store.commit(CommitRequest(outcome: C.outcome("c", 1, version: last),
                                                 writes: [C.put("a/1", [:], version: last)]))
        }
        #expect(error?.code == .aborted)
        #expect(try await store.documents([C.key("a/1")]).documents.isEmpty)
        #expect(try await store.outcome(of: BatchKey(clientID: "c", batchID: 1)) == nil)
        #expect(try await store.state().lastVersion.microseconds == last)
        #expect(try await store.changes(after: C.v(last), maxEntries: 10).entries?.isEmpty == true)
        // A rejection may not carry writes.
        await #expect(throws: DocError.self) {
            try await store.commit(CommitRequest(outcome: C.outcome("c", 2, version: nil), writes: [C.delete("a/1")]))
        }
        #expect(try await store.outcome(of: BatchKey(clientID: "c", batchID: 2)) == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func readVersionMismatchAbortsAndStoresNothing(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        let store = try await fixture.tenant("acme")
        let v = try await store.state().lastVersion.microseconds + 1
        _ = try await store.commit(CommitRequest(outcome: C.outcome("c", 1, version: v), writes: [C.put("a/1", ["n": 1], version: v)]))

        // The batch read a/1 at an older version (another commit came between): aborted.
        let stale = await #expect(throws: DocError.self) {
            try await store.commit(CommitRequest(
                outcome: C.outcome("c", 2, version: v + 1), writes: [C.put("a/1", ["n": 2], version: v + 1)],
                readVersions: [C.key("a/1"): C.v(v - 5)]))
        }
        #expect(stale?.code == .aborted)
        // It read a/1 as absent, but a/1 exists: aborted (a/2 really is absent).
        let absent = await #expect(throws: DocError.self) {
            try await store.commit(CommitRequest(
                outcome: C.outcome("c", 3, version: v + 1), writes: [C.put("a/2", ["n": 1], version: v + 1)],
                readVersions: [C.key("a/2"): .none, C.key("a/1"): .none]))
        }
        #expect(absent?.code == .aborted)
        // Nothing of either stored.
        #expect(try await store.documents([C.key("a/1")]).documents[C.key("a/1")]?.data["n"] == 1)
        #expect(try await store.documents([C.key("a/2")]).documents.isEmpty)
        #expect(try await store.outcome(of: BatchKey(clientID: "c", batchID: 2)) == nil)
        #expect(try await store.outcome(of: BatchKey(clientID: "c", batchID: 3)) == nil)
        #expect(try await store.state().lastVersion.microseconds == v)
        #expect(try await store.changes(after: C.v(v), maxEntries: 10).entries?.isEmpty == true)

        // With the versions it really read: stored.
        let ok = try await store.commit(CommitRequest(
            outcome: C.outcome("c", 4, version: v + 2), writes: [C.put("a/1", ["n": 2], version: v + 2), C.put("a/2", ["n": 1], version: v + 2)],
            readVersions: [C.key("a/1"): C.v(v), C.key("a/2"): .none]))
        #expect(ok == .stored(previousVersion: C.v(v)))
        #expect(try await store.documents([C.key("a/1")]).documents[C.key("a/1")]?.data["n"] == 2)
    }

    @Test(arguments: StoreKind.allCases)
    func duplicateBatchAppliesNothing(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        let store = try await fixture.tenant("acme")
        let v = try await store.state().lastVersion.microseconds + 1
        let first = C.outcome("c", 1, version: v)
        #expect(try await store.commit(CommitRequest(outcome: first, writes: [C.put("a/1", ["n": 1], version: v)]))
                == .stored(previousVersion: C.v(v - 1)))
        let again = try await store.commit(CommitRequest(
            outcome: C.outcome("c", 1, version: v + 5), writes: [C.put("a/1", ["n": 2], version: v + 5)]))
        #expect(again == .duplicate(first))
        #expect(try await store.documents([C.key("a/1")]).documents[C.key("a/1")]?.data["n"] == 1)
        #expect(try await store.state().lastVersion.microseconds == v)
        #expect(try await store.changes(after: C.v(v), maxEntries: 10).entries?.isEmpty == true)
    }

    @Test(arguments: StoreKind.allCases)
    func rejectionStoresOnlyItsOutcome(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        let store = try await fixture.tenant("acme")
        let last = try await store.state().lastVersion
        let rejected = C.outcome("c", 1, version: nil, at: 42)
        #expect(try await store.commit(CommitRequest(outcome: rejected, writes: [])) == .stored(previousVersion: last))
        let stored = try await store.outcome(of: BatchKey(clientID: "c", batchID: 1))
        #expect(stored == rejected)
        if case .rejected(let error)? = stored?.result {
            #expect(error.code == .notFound && error.message == "nope" && error.location == "a/b")
        } else {
            Issue.record("expected a rejection, got \(String(describing: stored))")
        }
        #expect(try await store.state().lastVersion == last)
        #expect(try await store.changes(after: last, maxEntries: 10).entries?.isEmpty == true)
        // Re-sent as a commit: the rejection stands.
        let again = try await store.commit(CommitRequest(outcome: C.outcome("c", 1, version: last.microseconds + 1),
                                                         writes: [C.put("a/1", [:], version: last.microseconds + 1)]))
        #expect(again == .duplicate(rejected))
        #expect(try await store.documents([C.key("a/1")]).documents.isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func aRejectionIsStoredOnlyOnTheVersionsItWasDecidedOn(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        let store = try await fixture.tenant("acme")
        let v = try await store.state().lastVersion.microseconds + 1
        _ = try await store.commit(CommitRequest(outcome: C.outcome("c", 1, version: v), writes: [C.put("a/1", ["n": 1], version: v)]))

        // Decided on a/1 as absent (it exists now): aborted, the rejection not remembered.
        let stale = await #expect(throws: DocError.self) {
            try await store.commit(CommitRequest(outcome: C.outcome("c", 2, version: nil), writes: [],
                                                 readVersions: [C.key("a/1"): .none]))
        }
        #expect(stale?.code == .aborted)
        #expect(try await store.outcome(of: BatchKey(clientID: "c", batchID: 2)) == nil)
        // In a group too: the whole group is refused, the commit before it included.
        let grouped = await #expect(throws: DocError.self) {
            try await store.commitGroup([
                CommitRequest(outcome: C.outcome("c", 3, version: v + 1), writes: [C.put("a/2", ["n": 1], version: v + 1)]),
                CommitRequest(outcome: C.outcome("c", 4, version: nil), writes: [], readVersions: [C.key("a/1"): C.v(v - 1)]),
            ])
        }
        #expect(grouped?.code == .aborted)
        #expect(try await store.outcome(of: BatchKey(clientID: "c", batchID: 3)) == nil)
        #expect(try await store.outcome(of: BatchKey(clientID: "c", batchID: 4)) == nil)
        #expect(try await store.documents([C.key("a/2")]).documents.isEmpty)
        #expect(try await store.state().lastVersion.microseconds == v)

        // On the versions as they are (a/2 written earlier in the same group counts): stored.
        _ = try await store.commitGroup([
            CommitRequest(outcome: C.outcome("c", 5, version: v + 1), writes: [C.put("a/2", ["n": 1], version: v + 1)]),
            CommitRequest(outcome: C.outcome("c", 6, version: nil), writes: [],
                          readVersions: [C.key("a/1"): C.v(v), C.key("a/2"): C.v(v + 1), C.key("a/3"): .none]),
        ])
        #expect(try await store.outcome(of: BatchKey(clientID: "c", batchID: 6)) == C.outcome("c", 6, version: nil))
        #expect(try await store.commit(CommitRequest(outcome: C.outcome("c", 7, version: nil), writes: [],
                                                     readVersions: [C.key("a/2"): C.v(v + 1)]))
                == .stored(previousVersion: C.v(v + 1)))
    }

    // MARK: Tenants

    @Test(arguments: StoreKind.allCases)
    func tenantsAreIsolated(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        // "a" is a prefix of "ab": still two databases.
        let a = try await fixture.tenant("a")
        let ab = try await fixture.tenant("ab")
        let va = try await a.state().lastVersion.microseconds + 1
        let vab = try await ab.state().lastVersion.microseconds + 1
        _ = try await a.commit(CommitRequest(outcome: C.outcome("c", 1, version: va), writes: [C.put("rooms/r1", ["who": "a"], version: va)]))
        _ = try await ab.commit(CommitRequest(outcome: C.outcome("c", 1, version: vab + 100),
                                              writes: [C.put("rooms/r1", ["who": "ab"], version: vab + 100),
                                                       C.put("rooms/r2", ["who": "ab"], version: vab + 100)]))
        #expect(try await a.documents([C.key("rooms/r1")]).documents[C.key("rooms/r1")]?.data["who"] == "a")
        #expect(try await ab.documents([C.key("rooms/r1")]).documents[C.key("rooms/r1")]?.data["who"] == "ab")
        #expect(try await a.query(C.collection("rooms"), limit: nil).documents.count == 1)
        #expect(try await ab.query(C.collection("rooms"), limit: nil).documents.count == 2)
        #expect(try await a.outcome(of: BatchKey(clientID: "c", batchID: 1))?.commitVersion?.microseconds == va)
        #expect(try await ab.outcome(of: BatchKey(clientID: "c", batchID: 1))?.commitVersion?.microseconds == vab + 100)
        #expect(try await a.state().lastVersion.microseconds == va)
        #expect(try await ab.state().lastVersion.microseconds == vab + 100)
        #expect(try await a.state().incarnation != ab.state().incarnation)
        #expect(try await a.changes(after: C.v(va - 1), maxEntries: 10).entries?.map(\.key.description) == ["rooms/r1"])
        // Pruning one tenant leaves the other alone (a client's latest outcome stays: c#2).
        _ = try await a.commit(CommitRequest(outcome: C.outcome("c", 2, version: nil), writes: []))
        #expect(try await a.pruneOutcomes(recordedBefore: 1_000) == 1)
        #expect(try await ab.outcome(of: BatchKey(clientID: "c", batchID: 1)) != nil)
        #expect(try await a.pruneChangeLog(before: C.v(va + 1)) == 1)
        #expect(try await ab.changes(after: C.v(vab - 1), maxEntries: 10).entries?.count == 2)
        let ids = try await fixture.store.tenantIDs()
        #expect(ids == [try TenantID("a"), try TenantID("ab")])
        // The same tenant again is the same database.
        let again = try await fixture.tenant("a")
        #expect(try await again.state().incarnation == a.state().incarnation)
    }

    @Test(arguments: StoreKind.allCases)
    func unusualNamesRoundTrip(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        let store = try await fixture.tenant("Tenant with spaces ✓")
        let v = try await store.state().lastVersion.microseconds + 1
        let path = "c\u{0}x/d\u{0}1/sub ü/🙂"
        let client = "client\u{0}'; DROP TABLE x; --"
        _ = try await store.commit(CommitRequest(outcome: C.outcome(client, 7, version: v),
                                                 writes: [C.put(path, ["s": "\u{0}'\""], version: v)]))
        #expect(try await store.documents([C.key(path)]).documents[C.key(path)]?.data["s"] == "\u{0}'\"")
        let group = C.target(try DocModel.Query(collectionGroup: "sub ü").limit(to: 10))
        #expect(try await store.query(group, limit: nil).documents.map(\.key) == [C.key(path)])
        #expect(try await store.outcome(of: BatchKey(clientID: client, batchID: 7))?.batch.clientID == client)
        #expect(try await store.outcome(of: BatchKey(clientID: "client", batchID: 7)) == nil)
        #expect(try await fixture.store.tenantIDs() == [try TenantID("Tenant with spaces ✓")])
    }

    // MARK: Queries

    @Test(arguments: StoreKind.allCases)
    func queriesUseCollectionsAndGroups(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        let store = try await fixture.tenant("acme")
        var v = try await store.state().lastVersion.microseconds
        let paths = ["rooms/r1", "rooms/r2", "rooms/r1/messages/m1", "rooms/r2/messages/m2", "users/u/messages/m3", "roomsX/r9",
                     "rooms/r2x/messages/m4", "messages/m5", "messages/m5/messages/m0"]
        for (i, path) in paths.enumerated() {
            v += 1
            _ = try await store.commit(CommitRequest(outcome: C.outcome("c", i, version: v),
                                                     writes: [C.put(path, ["i": .integer(Int64(i))], version: v)]))
        }
        let rooms = try await store.query(C.collection("rooms"), limit: nil)
        #expect(rooms.documents.map(\.key.description) == ["rooms/r1", "rooms/r2"])
        #expect(rooms.version.microseconds == v)
        let group = C.target(try DocModel.Query(collectionGroup: "messages").limit(to: 10))
        #expect(try await store.query(group, limit: nil).documents.map(\.key.description)
                == ["messages/m5", "messages/m5/messages/m0", "rooms/r1/messages/m1", "rooms/r2/messages/m2", "rooms/r2x/messages/m4",
                    "users/u/messages/m3"])
        let under = C.target(try DocModel.Query(collectionGroup: "messages", parent: ResourcePath("rooms/r2")).limit(to: 10))
        #expect(try await store.query(under, limit: nil).documents.map(\.key.description) == ["rooms/r2/messages/m2"])
        let underUser = C.target(try DocModel.Query(collectionGroup: "messages", parent: ResourcePath("users/u")).limit(to: 10))
        #expect(try await store.query(underUser, limit: nil).documents.map(\.key.description) == ["users/u/messages/m3"])
        #expect(try await store.query(C.collection("rooms/r1/messages", limit: 1), limit: 1).documents.count == 1)
        let desc = C.target(try DocModel.Query(collectionGroup: "messages").order(by: C.field("i"), descending: true).limit(to: 2))
        #expect(try await store.query(desc, limit: 2).documents.map(\.key.description) == ["messages/m5/messages/m0", "messages/m5"])
        let underM5 = C.target(try DocModel.Query(collectionGroup: "messages", parent: ResourcePath("messages/m5")).limit(to: 10))
        // `Target.matches`: the parent itself is "under" the parent (its path is a prefix).
        #expect(try await store.query(underM5, limit: nil).documents.map(\.key.description) == ["messages/m5", "messages/m5/messages/m0"])
        #expect(try await store.query(C.target(DocModel.Query(document: C.key("rooms/r2"))), limit: nil).documents.count == 1)
        #expect(try await store.query(C.target(DocModel.Query(document: C.key("rooms/nope"))), limit: nil).documents.isEmpty)
        #expect(try await store.query(C.collection("empty"), limit: nil).documents.isEmpty)
        #expect(try await store.query(C.collection("empty"), limit: nil).version.microseconds == v)
    }

    @Test(arguments: StoreKind.allCases)
    func queriesFilterOrderAndHideTombstones(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        let store = try await fixture.tenant("acme")
        let v = try await store.state().lastVersion.microseconds + 1
        var writes: [DocumentWrite] = []
        for i in 0..<20 {
            var fields: [String: Value] = ["n": .integer(Int64(i)), "even": .boolean(i % 2 == 0)]
            if i == 4 { fields[tombstoneField] = .integer(1) }
            writes.append(C.put("items/i\(i)", fields, version: v))
        }
        _ = try await store.commit(CommitRequest(outcome: C.outcome("c", 1, version: v), writes: writes))
        let query = try DocModel.Query(collection: "items").filter("even", .equal, true).order(by: "n", descending: true).limit(to: 3)
        let found = try await store.query(C.target(query), limit: 3).documents
        #expect(found.map(\.key.description) == ["items/i18", "items/i16", "items/i14"])
        let all = try await store.query(C.target(try DocModel.Query(collection: "items").filter("even", .equal, true).limit(to: 100)), limit: nil)
        #expect(all.documents.count == 9)   // i4 is a tombstone
        let withDeleted = C.target(try DocModel.Query(collection: "items").filter("even", .equal, true).limit(to: 100).includingDeleted())
        #expect(try await store.query(withDeleted, limit: nil).documents.count == 10)
        let range = C.target(try DocModel.Query(collection: "items").order(by: "n").start(after: [.integer(10)]).limit(to: 100))
        #expect(try await store.query(range, limit: nil).documents.map(\.key.description) == (11..<20).map { "items/i\($0)" })
    }

    // MARK: Pruning and the change log

    @Test(arguments: StoreKind.allCases)
    func outcomesArePrunedAfterRetention(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        let store = try await fixture.tenant("acme")
        var v = try await store.state().lastVersion.microseconds
        for i in 0..<5 {
            v += 1
            _ = try await store.commit(CommitRequest(outcome: C.outcome("c", i, version: v, at: Int64(i) * 1_000), writes: []))
        }
        // Client d's only outcome, old: kept, as each client's latest is.
        v += 1
        _ = try await store.commit(CommitRequest(outcome: C.outcome("d", 1, version: v, at: 500), writes: []))
        #expect(try await store.pruneOutcomes(recordedBefore: 2_500) == 3)
        for i in 0..<5 {
            let kept = try await store.outcome(of: BatchKey(clientID: "c", batchID: i)) != nil
            #expect(kept == (i >= 3), "batch \(i)")
        }
        #expect(try await store.outcome(of: BatchKey(clientID: "d", batchID: 1)) != nil)
        #expect(try await store.pruneOutcomes(recordedBefore: 2_500) == 0)
        // Past every outcome's age: only the clients' latest stay.
        #expect(try await store.pruneOutcomes(recordedBefore: 10_000) == 1)
        #expect(try await store.outcome(of: BatchKey(clientID: "c", batchID: 3)) == nil)
        #expect(try await store.outcome(of: BatchKey(clientID: "c", batchID: 4)) != nil)
        #expect(try await store.outcome(of: BatchKey(clientID: "d", batchID: 1)) != nil)
    }

    /// The wire takes batch ids up to Int64.max: pruning and the later-outcome lookup handle
    /// the last one (nothing can come after it) without overflowing.
    @Test(arguments: StoreKind.allCases)
    func theLargestBatchIdIsPrunedAndLookedUpLikeAnyOther(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        let store = try await fixture.tenant("acme")
        var v = try await store.state().lastVersion.microseconds
        for batch in [Int.max - 1, Int.max] {
            v += 1
            _ = try await store.commit(CommitRequest(outcome: C.outcome("c", batch, version: v, at: 100), writes: []))
        }
        #expect(try await store.laterOutcomeExists(after: BatchKey(clientID: "c", batchID: Int.max - 1)))
        #expect(try await !store.laterOutcomeExists(after: BatchKey(clientID: "c", batchID: Int.max)))
        #expect(try await store.pruneOutcomes(recordedBefore: 10_000) == 1)
        #expect(try await store.outcome(of: BatchKey(clientID: "c", batchID: Int.max)) != nil, "the client's latest stays")
        #expect(try await store.pruneOutcomes(recordedBefore: 10_000) == 0)
    }

    /// A batch without an outcome and a later batch of its client with one was processed
    /// before (its outcome pruned); the read-ahead tells so too.
    @Test(arguments: StoreKind.allCases)
    func aLaterOutcomeOfTheSameClientIsFound(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        let store = try await fixture.tenant("acme")
        var v = try await store.state().lastVersion.microseconds
        for (client, batch) in [("c", 3), ("c", 5), ("cc", 9)] {
            v += 1
            _ = try await store.commit(CommitRequest(outcome: C.outcome(client, batch, version: v), writes: []))
        }
        func later(_ client: String, _ batch: Int) async throws -> Bool {
            try await store.laterOutcomeExists(after: BatchKey(clientID: client, batchID: batch))
        }
        var found: [String: Bool] = [:]
        for (client, batch) in [("c", 1), ("c", 3), ("c", 4), ("c", 5), ("c", 6), ("cc", 2), ("cc", 9), ("b", 1), ("d", 1)] {
            found["\(client)#\(batch)"] = try await later(client, batch)
        }
        // Client ids that share a prefix ("c", "cc") are apart.
        #expect(found == ["c#1": true, "c#3": true, "c#4": true, "c#5": false, "c#6": false,
                          "cc#2": true, "cc#9": false, "b#1": false, "d#1": false])
        let batches = [("c", 1), ("c", 4), ("c", 5), ("c", 6), ("cc", 9), ("d", 1)].map { BatchKey(clientID: $0, batchID: $1) }
        let read = try await store.readAhead(batches: batches, documents: [])
        #expect(Set(read.outcomes.keys) == [batches[2], batches[4]])
        #expect(read.processedBefore == [batches[0], batches[1]])
    }

    @Test(arguments: StoreKind.allCases)
    func changeLogPruningMovesTheFloor(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        let store = try await fixture.tenant("acme")
        let start = try await store.state().lastVersion.microseconds
        for i in 1...4 {
            let v = start + Int64(i) * 10
            _ = try await store.commit(CommitRequest(outcome: C.outcome("c", i, version: v), writes: [C.put("a/\(i)", [:], version: v)]))
        }
        #expect(try await store.pruneChangeLog(before: C.v(start + 25)) == 2)
        #expect(try await store.state().changeLogFloor.microseconds == start + 24)
        #expect(try await store.changes(after: C.v(start + 10), maxEntries: 100).isUnavailable, "a version below the floor must not resume")
        #expect(try await store.changes(after: C.v(start + 25), maxEntries: 100).entries?.map(\.key.description) == ["a/3", "a/4"])
        #expect(try await store.changes(after: C.v(start + 24), maxEntries: 100).entries?.map(\.key.description) == ["a/3", "a/4"])
        #expect(try await store.changes(after: C.v(start + 25), maxEntries: 1).isUnavailable, "more entries than allowed must not resume")
        #expect(try await store.changes(after: C.v(start + 25), maxEntries: 2).entries?.count == 2)
        #expect(try await store.changes(after: C.v(start + 1_000), maxEntries: 100).isUnavailable, "a version from the future must not resume")
        // The floor never passes the last version, and never moves back.
        #expect(try await store.pruneChangeLog(before: C.v(start + 1_000)) == 2)
        #expect(try await store.state().changeLogFloor.microseconds == start + 40)
        #expect(try await store.pruneChangeLog(before: C.v(start + 5)) == 0)
        #expect(try await store.state().changeLogFloor.microseconds == start + 40)
        guard case .complete(let none, let through) = try await store.changes(after: C.v(start + 40), maxEntries: 0) else {
            Issue.record("the last version resumes with nothing to deliver")
            return
        }
        #expect(none.isEmpty && through.microseconds == start + 40)
    }

    @Test(arguments: StoreKind.allCases)
    func changeLogOrdersByVersionThenPath(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        let store = try await fixture.tenant("acme")
        let v = try await store.state().lastVersion.microseconds + 1
        // Path order puts a/1/c/2 (under a/1) before a/2.
        _ = try await store.commit(CommitRequest(outcome: C.outcome("c", 1, version: v),
                                                 writes: [C.put("a/2", [:], version: v), C.put("a/1/c/2", [:], version: v), C.put("a/1", [:], version: v),
                                                          C.put("b/0", ["first": true], version: v), C.put("b/0", ["first": false], version: v)]))
        _ = try await store.commit(CommitRequest(outcome: C.outcome("c", 2, version: v + 1),
                                                 writes: [C.delete("a/2"), C.put("0/0", [:], version: v + 1), C.delete("never/existed")]))
        guard case .complete(let log, let through) = try await store.changes(after: C.v(v - 1), maxEntries: 100) else {
            Issue.record("log unavailable")
            return
        }
        #expect(through.microseconds == v + 1)
        #expect(log.map(\.key.description) == ["a/1", "a/1/c/2", "a/2", "b/0", "0/0", "a/2", "never/existed"])
        #expect(log.map(\.version.microseconds) == [v, v, v, v, v + 1, v + 1, v + 1])
        // A key written twice in one batch keeps its last write.
        #expect(log[3].document.document?.data["first"] == false)
        #expect(try await store.documents([C.key("b/0")]).documents[C.key("b/0")]?.data["first"] == false)
        #expect(log[5].document == .noDocument(NoDocument(key: C.key("a/2"), version: C.v(v + 1))))
        #expect(log[6].document == .noDocument(NoDocument(key: C.key("never/existed"), version: C.v(v + 1))))
        #expect(try await store.changes(after: C.v(v), maxEntries: 100).entries?.map(\.key.description) == ["0/0", "a/2", "never/existed"])
    }

    @Test(arguments: StoreKind.allCases)
    func aTenantsChoreIsClaimedOncePerInterval(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        let acme = try await fixture.tenant("acme")
        let globex = try await fixture.tenant("globex")
        let t: Int64 = 1_800_000_000_000_000
        let hour: Int64 = 3_600_000_000
        #expect(try await acme.claim(.maintenance, at: t, every: hour))
        #expect(try await !acme.claim(.maintenance, at: t + hour - 1, every: hour))
        // Per tenant.
        #expect(try await globex.claim(.maintenance, at: t + 1, every: hour))
        // The same tenant reached again through the store.
        #expect(try await !fixture.tenant("acme").claim(.maintenance, at: t + 2, every: hour))
        #expect(try await acme.claim(.maintenance, at: t + hour, every: hour))
        // Each chore on its own.
        #expect(try await acme.claim(.requestSweep, at: t + hour + 1, every: hour))
        #expect(try await !acme.claim(.requestSweep, at: t + hour + 2, every: hour))
        #expect(try await !acme.claim(.maintenance, at: t + hour + 3, every: hour))
        // A claim given back: the next one is granted at once; giving back a claim that is not
        // the last one changes nothing.
        try await acme.releaseClaim(.maintenance, claimedAt: t + hour)
        #expect(try await acme.claim(.maintenance, at: t + hour + 4, every: hour))
        try await acme.releaseClaim(.maintenance, claimedAt: t + hour)
        #expect(try await !acme.claim(.maintenance, at: t + hour + 5, every: hour))
        #expect(try await !acme.claim(.requestSweep, at: t + hour + 6, every: hour))
        // Of claims made at once, one is granted.
        let granted = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 { group.addTask { try await acme.claim(.maintenance, at: t + 3 * hour, every: hour) } }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(granted == 1)
    }

    // MARK: Lifecycle

    @Test(arguments: StoreKind.allCases)
    func stateSurvivesReopening(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        let tenant = try await fixture.tenant("acme")
        let before = try await tenant.state()
        let v = before.lastVersion.microseconds + 1
        _ = try await tenant.commit(CommitRequest(outcome: C.outcome("c", 1, version: v), writes: [C.put("a/1", ["x": 1], version: v)]))
        try await fixture.store.checkHealth()
        await fixture.close()
        await #expect(throws: DocError.self) { try await tenant.documents([C.key("a/1")]) }
        fixture.clock.advance(by: 1_000_000)
        let store = try await fixture.reopen()
        let reopened = try await store.tenant(TenantID("acme"))
        let after = try await reopened.state()
        #expect(after.incarnation == before.incarnation)
        #expect(after.lastVersion.microseconds == v)
        #expect(after.changeLogFloor == before.changeLogFloor)
        #expect(try await reopened.documents([C.key("a/1")]).documents[C.key("a/1")]?.data["x"] == 1)
        #expect(try await reopened.outcome(of: BatchKey(clientID: "c", batchID: 1)) != nil)
        #expect(try await reopened.changes(after: before.lastVersion, maxEntries: 10).entries?.count == 1)
        #expect(try await store.tenantIDs() == [try TenantID("acme")])
    }

    @Test(arguments: StoreKind.allCases)
    func closedStoreIsUnavailable(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        let store = try fixture.store
        // A statement first (the tests' operation timeout): the health probe's 3 s cap is a
        // product limit, and a pooled connection opened in a saturated test run can take longer.
        _ = try await store.tenantIDs()
        try await store.checkHealth()
        let tenant = try await store.tenant(TenantID("acme"))
        await store.close()
        let health = await #expect(throws: DocError.self) { try await store.checkHealth() }
        #expect(health?.code == .unavailable)
        let open = await #expect(throws: DocError.self) { try await store.tenant(TenantID("other")) }
        #expect(open?.code == .unavailable)
        let read = await #expect(throws: DocError.self) {
            _ = try await tenant.state()
            _ = try await tenant.documents([C.key("a/1")])
        }
        #expect(read?.code == .unavailable)
    }
}

import DocModel
import DocProtocol
import DocServer
import Testing

/// Group commit (``TenantStore/commitGroup(_:)`` and `writeBatches` through the core), run
/// against every store.
@Suite struct GroupCommitContractTests {
    @Test(arguments: StoreKind.allCases)
    func aGroupIsStoredInOrderEachAgainstTheOnesBeforeIt(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        let store = try await fixture.tenant("acme")
        let v = try await store.state().lastVersion.microseconds
        let previous = try await store.commitGroup([
            CommitRequest(outcome: C.outcome("c", 1, version: v + 1), writes: [C.put("a/1", ["color": "red"], version: v + 1)],
                          readVersions: [C.key("a/1"): .none]),
            // A rejection in between stores its outcome only.
            CommitRequest(outcome: C.outcome("c", 2, version: nil), writes: []),
            // Reads a/1 as the first request left it, and overwrites it.
            CommitRequest(outcome: C.outcome("c", 3, version: v + 2),
                          writes: [C.put("a/1", ["color": "blue"], version: v + 2), C.put("a/2", ["color": "red"], version: v + 2)],
                          readVersions: [C.key("a/1"): C.v(v + 1), C.key("a/2"): .none]),
        ])
        #expect(previous == C.v(v))
        #expect(try await store.state().lastVersion == C.v(v + 2))
        for batch in 1...3 { #expect(try await store.outcome(of: BatchKey(clientID: "c", batchID: batch)) != nil) }
        #expect(try await store.outcome(of: BatchKey(clientID: "c", batchID: 2))?.commitVersion == nil)
        let log = try #require(try await store.changes(after: C.v(v), maxEntries: 10).entries)
        #expect(log.map { "\($0.version.microseconds - v) \($0.key)" } == ["1 a/1", "2 a/1", "2 a/2"])
        // The index rows follow the last write of each document.
        let red = try await store.query(C.target(try DocModel.Query(collection: "a").filter("color", .equal, "red")), limit: nil)
        #expect(red.documents.map(\.key) == [C.key("a/2")])
    }

    /// A document written by several requests of a group is stored as the last one left it,
    /// with a change log entry per version, and its index and reference rows follow: a put
    /// then a delete, a delete then a put, two puts, and the same batch twice in one group.
    @Test(arguments: StoreKind.allCases)
    func documentsWrittenSeveralTimesInAGroupEndAsTheLastWriteLeftThem(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        let store = try await fixture.tenant("acme")
        let v = try await store.state().lastVersion.microseconds
        let photo = AttachmentID(digest: [UInt8](repeating: 7, count: 32))
        _ = try await store.commit(CommitRequest(outcome: C.outcome("c", 1, version: v + 1), writes: [
            C.put("a/gone", ["color": "red", "photo": .attachment(photo)], version: v + 1),
            C.put("a/back", ["color": "red"], version: v + 1),
        ]))
        _ = try await store.commitGroup([
            CommitRequest(outcome: C.outcome("c", 2, version: v + 2), writes: [
                C.put("a/gone", ["color": "blue", "photo": .attachment(photo)], version: v + 2),
                C.delete("a/back"),
                C.put("a/new", ["color": "green"], version: v + 2),
            ], readVersions: [C.key("a/gone"): C.v(v + 1), C.key("a/back"): C.v(v + 1), C.key("a/new"): .none]),
            CommitRequest(outcome: C.outcome("c", 3, version: v + 3), writes: [
                C.delete("a/gone"),
                C.put("a/back", ["color": "blue"], version: v + 3),
                C.put("a/new", ["color": "blue"], version: v + 3),
            ], readVersions: [C.key("a/gone"): C.v(v + 2), C.key("a/back"): .none, C.key("a/new"): C.v(v + 2)]),
        ])
        let read = try await store.documents([C.key("a/gone"), C.key("a/back"), C.key("a/new")])
        #expect(read.documents[C.key("a/gone")] == nil)
        #expect(read.documents[C.key("a/back")]?.version == C.v(v + 3))
        #expect(read.documents[C.key("a/new")]?.data["color"] == "blue")
        let log = try #require(try await store.changes(after: C.v(v + 1), maxEntries: 10).entries)
        #expect(log.map { "\($0.version.microseconds - v) \($0.key) \($0.document.document == nil ? "deleted" : "put")" }
            == ["2 a/back deleted", "2 a/gone put", "2 a/new put", "3 a/back put", "3 a/gone deleted", "3 a/new put"])
        for color in ["red", "green", "blue"] {
            let found = try await store.query(C.target(try DocModel.Query(collection: "a").filter("color", .equal, .string(color))), limit: nil)
            #expect(found.documents.map(\.key.description).sorted() == (color == "blue" ? ["a/back", "a/new"] : []), "\(color)")
        }
        #expect(try await store.referencedAttachments(among: [photo]).isEmpty)

        // The same batch twice in one group: nothing stored.
        let twice = CommitRequest(outcome: C.outcome("c", 4, version: v + 4), writes: [C.put("a/x", [:], version: v + 4)])
        var again = twice
        again.outcome = C.outcome("c", 4, version: v + 5)
        again.writes = [C.put("a/y", [:], version: v + 5)]
        let error = await #expect(throws: DocError.self) { try await store.commitGroup([twice, again]) }
        #expect(error?.code == .aborted)
        #expect(try await store.documents([C.key("a/x"), C.key("a/y")]).documents.isEmpty)
        #expect(try await store.state().lastVersion == C.v(v + 3))
    }

    /// What a group reads before processing: the state as ``TenantStore/state()`` reads it,
    /// the outcomes of the batches that have one, the documents that exist (tombstones too).
    @Test(arguments: StoreKind.allCases)
    func aReadAheadAnswersAsTheSeparateReadsDo(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        let store = try await fixture.tenant("acme")
        let v = try await store.state().lastVersion.microseconds
        _ = try await store.commit(CommitRequest(outcome: C.outcome("c", 1, version: v + 1), writes: [
            C.put("a/1", ["n": 1], version: v + 1), C.put("a/gone", [tombstoneField: .integer(1)], version: v + 1),
        ]))
        _ = try await store.commit(CommitRequest(outcome: C.outcome("d", 7, version: nil), writes: []))
        let batches = [BatchKey(clientID: "c", batchID: 1), BatchKey(clientID: "c", batchID: 2), BatchKey(clientID: "d", batchID: 7)]
        let keys = [C.key("a/1"), C.key("a/gone"), C.key("a/missing"), C.key("b/1")]
        let read = try await store.readAhead(batches: batches, documents: keys)
        #expect(read.state == (try await store.state()))
        #expect(read.outcomes == [batches[0]: C.outcome("c", 1, version: v + 1), batches[2]: C.outcome("d", 7, version: nil)])
        #expect(read.documents == (try await store.documents(keys)).documents)
        #expect(Set(read.documents.keys) == [C.key("a/1"), C.key("a/gone")])
        // Nothing asked, nothing answered but the state.
        let empty = try await store.readAhead(batches: [], documents: [])
        #expect(empty.outcomes.isEmpty && empty.documents.isEmpty && empty.state.lastVersion == C.v(v + 1))
    }

    @Test(arguments: StoreKind.allCases)
    func aGroupThatCannotBeStoredWholeStoresNothing(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        let store = try await fixture.tenant("acme")
        let v = try await store.state().lastVersion.microseconds
        _ = try await store.commit(CommitRequest(outcome: C.outcome("c", 1, version: v + 1), writes: [C.put("a/1", ["n": 1], version: v + 1)]))
        let fresh = CommitRequest(outcome: C.outcome("c", 2, version: v + 2), writes: [C.put("a/2", ["n": 2], version: v + 2)])
        let groups: [[CommitRequest]] = [
            // Its last batch already has an outcome.
            [fresh, CommitRequest(outcome: C.outcome("c", 1, version: v + 3), writes: [C.put("a/3", [:], version: v + 3)])],
            // Its last request read a/2 as absent, but the first one wrote it.
            [fresh, CommitRequest(outcome: C.outcome("c", 3, version: v + 3), writes: [C.put("a/3", [:], version: v + 3)],
                                  readVersions: [C.key("a/2"): .none])],
            // Versions that do not increase.
            [fresh, CommitRequest(outcome: C.outcome("c", 3, version: v + 2), writes: [C.put("a/3", [:], version: v + 2)])],
        ]
        for group in groups {
            let error = await #expect(throws: DocError.self) { try await store.commitGroup(group) }
            #expect(error?.code == .aborted)
            #expect(try await store.state().lastVersion == C.v(v + 1))
            #expect(try await store.outcome(of: BatchKey(clientID: "c", batchID: 2)) == nil)
            #expect(try await store.documents([C.key("a/2"), C.key("a/3")]).documents.isEmpty)
            #expect(try await store.changes(after: C.v(v + 1), maxEntries: 10).entries?.isEmpty == true)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aFrameOfBatchesCommitsAsAGroupThroughTheCore(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        var configuration = ServerConfiguration()
        configuration.clock = fixture.clock.serverClock
        let core = DocServerCore(store: try fixture.store, configuration: configuration, logger: .discarding)
        let connection = try await core.handshake(tenant: "acme", uid: "u1", clientID: "c1")
        let store = try await fixture.tenant("acme")
        let start = try await store.state().lastVersion
        let increment = Mutation.setMerge(C.key("counters/c"), ObjectValue(), transforms: [.increment(C.field("n"), by: .integer(1))])
        let frame = ClientMessage.WriteBatches(clientID: "c1", batches: [
            .init(batchID: 1, mutations: [increment]),
            .init(batchID: 2, mutations: [.update(C.key("items/missing"), fields: [C.field("n"): 1])]),
            .init(batchID: 3, mutations: [increment, .set(C.key("items/a"), ObjectValue(["n": 3]))]),
        ])
        guard case .writeResults(let first) = await core.write(frame, on: connection) else {
            Issue.record("no writeResults")
            return
        }
        #expect(first.answers.map(\.batchID) == [1, 2, 3])
        guard case .committed(_, let v1, let r1) = first.answers[0], case .failed(_, let error) = first.answers[1],
              case .committed(_, let v3, let r3) = first.answers[2] else {
            Issue.record("\(first.answers)")
            return
        }
        #expect(error.code == .notFound)
        #expect(start < v1 && v1 < v3)
        #expect(r1.first?.transformResults == [.integer(1)] && r3.first?.transformResults == [.integer(2)])

        // Sent again: the stored outcomes, nothing applied twice.
        fixture.clock.advance(by: 1_000)
        guard case .writeResults(let second) = await core.write(frame, on: connection) else {
            Issue.record("no second writeResults")
            return
        }
        #expect(second.answers == first.answers)
        let counter = try await store.documents([C.key("counters/c")]).documents[C.key("counters/c")]
        #expect(counter?.data["n"] == .integer(2))
        let log = try #require(try await store.changes(after: start, maxEntries: 100).entries)
        #expect(log.map { "\($0.version == v1 ? 1 : 3) \($0.key)" } == ["1 counters/c", "3 counters/c", "3 items/a"])
        await core.shutdown()
    }
}

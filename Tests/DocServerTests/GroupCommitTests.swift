import DocModel
import DocProtocol
import DocRules
import Testing
@testable import DocServer

/// Group commit: the batches of one `writeBatches` frame are committed in one store
/// transaction, each still on its own (rules, preconditions, outcome, version, change log),
/// each seeing the batches before it; a failing batch does not take its neighbours down.
@Suite struct GroupCommitTests {
    /// Sends one `writeBatches` frame; returns its `writeResults` answers.
    func writeBatches(_ server: TestServer, _ connection: ServerConnection, _ batches: [(Int, [Mutation])]) async throws
        -> [ServerMessage.WriteResults.Answer]
    {
        let frame = ClientMessage.WriteBatches(
            clientID: connection.clientID, batches: batches.map { .init(batchID: $0.0, mutations: $0.1) })
        let answer = await server.core.write(frame, on: connection)
        #expect(connection.outbound.drain().contains(answer), "the answer is delivered on the connection")
        guard case .writeResults(let results) = answer else {
            Issue.record("not a writeResults frame: \(answer)")
            return []
        }
        #expect(results.clientID == connection.clientID)
        #expect(results.answers.map(\.batchID) == batches.map(\.0), "one answer per batch, in order")
        return results.answers
    }

    func changeLog(_ server: TestServer, after version: SnapshotVersion) async throws -> [ChangeLogEntry] {
        guard case .complete(let entries, _) = try await server.tenantStore("acme").changes(after: version, maxEntries: 1_000) else {
            Issue.record("the change log cannot answer")
            return []
        }
        return entries
    }

    static func version(_ answer: ServerMessage.WriteResults.Answer) -> SnapshotVersion? {
        if case .committed(_, let version, _) = answer { return version }
        return nil
    }

    static func error(_ answer: ServerMessage.WriteResults.Answer) -> DocError? {
        if case .failed(_, let error) = answer { return error }
        return nil
    }

    /// A frame that sends again batches whose answers were lost, after the outcome retention:
    /// the pruned one is refused (a later batch of the client has an outcome) and nothing after
    /// it is attempted; sent again on a new connection, the kept latest is answered from its
    /// outcome and a new one is applied. Nothing counts twice.
    @Test func aFrameResentPastTheRetentionAppliesNothingTwice() async throws {
        let server = TestServer(configuration: ServerConfiguration(outcomeRetentionMicros: 24 * 3_600 * 1_000_000))
        let c = try await server.connect()
        let first = try await writeBatches(server, c, [(1, [T.increment("counters/c")]), (2, [T.increment("counters/c")])])
        #expect(first.allSatisfy { if case .committed = $0 { true } else { false } })
        server.clock.advance(by: 25 * 3_600 * 1_000_000)
        #expect(await server.core.runMaintenance().outcomesPruned == 1)
        let again = try await writeBatches(server, c, [
            (1, [T.increment("counters/c")]), (2, [T.increment("counters/c")]), (3, [T.increment("counters/c")]),
        ])
        guard case .failed(_, let error) = again[0] else {
            Issue.record("batch 1 should be refused: \(again[0])")
            return
        }
        #expect(error.isBatchProcessedBefore && error.message.contains("not applied again"), "\(error)")
        #expect(again.dropFirst().allSatisfy { Self.error($0)?.code == .unavailable }, "\(again)")
        let next = try await server.connect()
        let rest = try await writeBatches(server, next, [(2, [T.increment("counters/c")]), (3, [T.increment("counters/c")])])
        #expect(rest[0] == first[1], "batch 2 is answered from its outcome")
        if case .committed = rest[1] {} else { Issue.record("batch 3 should be applied: \(rest[1])") }
        let counter = try await server.tenantStore("acme").documents([T.key("counters/c")]).documents[T.key("counters/c")]
        #expect(counter?.data["n"]?.isIdentical(to: 3) == true, "\(String(describing: counter))")
    }

    @Test func aRejectedBatchBetweenAcceptedOnesGetsItsOwnAnswerAndTheNeighboursCommit() async throws {
        let server = try rulesServer()
        let ann = try await server.connect(uid: "ann", claims: [:])
        let start = try await server.tenantStore("acme").state().lastVersion
        let answers = try await writeBatches(server, ann, [
            // A project with its log entry (allowed together: existsAfter / getAfter).
            (1, [T.set("projects/p1", ["name": "Roof"]), T.set("projectLogs/p1", ["by": "ann"])]),
            // A badge needs a project that exists before the batch: batch 1's, in the same group.
            (2, [T.set("badges/p1", ["level": 1])]),
            // No project p9: denied by the rules.
            (3, [T.set("badges/p9", ["level": 1])]),
            (4, [T.set("notes/n1", ["owner": "ann", "text": "hi"])]),
            // A precondition failure.
            (5, [Mutation.update(T.key("public/missing"), fields: [T.field("n"): 1])]),
            (6, [T.increment("public/counter"), T.increment("public/counter")]),
        ])
        #expect(answers.count == 6)
        #expect(Self.error(answers[2])?.code == .permissionDenied)
        #expect(Self.error(answers[2])?.location == "write 0: badges/p9")
        #expect(Self.error(answers[4])?.code == .notFound)
        let versions = [0, 1, 3, 5].compactMap { Self.version(answers[$0]) }
        #expect(versions.count == 4, "\(answers)")
        #expect(versions == versions.sorted() && Set(versions).count == 4, "each committed batch has its own, increasing version")
        if case .committed(_, _, let results) = answers[5] {
            #expect(results.map(\.transformResults) == [[.integer(1)], [.integer(2)]])
        }

        for path in ["projects/p1", "projectLogs/p1", "badges/p1", "notes/n1"] {
            #expect(try await server.stored(path) != nil, "\(path) committed")
        }
        #expect(try await server.stored("badges/p9") == nil)
        #expect(try await server.stored("public/missing") == nil)
        #expect(try await server.stored("public/counter")?.data[T.field("n")] == .integer(2))

        // One change log entry per document a committed batch wrote, at that batch's version.
        let entries = try await changeLog(server, after: start)
        #expect(entries.map(\.key.description) == ["projectLogs/p1", "projects/p1", "badges/p1", "notes/n1", "public/counter"]
            || entries.map(\.key.description) == ["projects/p1", "projectLogs/p1", "badges/p1", "notes/n1", "public/counter"])
        #expect(entries.map(\.version) == [versions[0], versions[0], versions[1], versions[2], versions[3]])
        #expect(try await server.tenantStore("acme").state().lastVersion == versions[3])

        // The rejections are remembered like commits: a single `write` of batch 3 gets it again.
        let again = await server.write(ann, batch: 3, [T.set("badges/p9", ["level": 1])])
        #expect(again.writeError?.error.code == .permissionDenied)
    }

    @Test func aReSentGroupIsAnsweredFromItsStoredOutcomesAndNotAppliedTwice() async throws {
        let server = TestServer()
        let c = try await server.connect()
        await server.write(c, batch: 1, [T.set("items/existing", ["n": 0])])
        let start = try await server.tenantStore("acme").state().lastVersion
        let group: [(Int, [Mutation])] = [
            (2, [T.increment("counters/c")]),
            (3, [.create(T.key("items/existing"), T.data(["n": 1]))]),   // alreadyExists
            (4, [T.increment("counters/c"), T.set("items/new", ["n": 4])]),
        ]
        let first = try await writeBatches(server, c, group)
        #expect(Self.error(first[1])?.code == .alreadyExists)
        #expect(Self.version(first[0]) != nil && Self.version(first[2]) != nil)
        let log = try await changeLog(server, after: start)
        #expect(log.count == 3)

        // The connection drops before the answer arrives; the client sends the group again.
        server.clock.advance(by: 1_000)
        let second = try await writeBatches(server, c, group)
        #expect(second == first, "the same answers: stored outcomes, same versions and results")
        #expect(try await changeLog(server, after: start).count == 3, "nothing applied twice")
        #expect(try await server.stored("counters/c")?.data[T.field("n")] == .integer(2))

        // A group mixing decided batches and a new one: only the new one is applied.
        let third = try await writeBatches(server, c, [(3, group[1].1), (4, group[2].1), (5, [T.increment("counters/c")])])
        #expect(Array(third.prefix(2)) == Array(first.suffix(2)))
        #expect(Self.version(third[2]).map { $0 > Self.version(first[2])! } == true)
        #expect(try await server.stored("counters/c")?.data[T.field("n")] == .integer(3))
        #expect(try await changeLog(server, after: start).count == 4)

        // Single `write` frames and groups share the outcomes.
        #expect(await server.write(c, batch: 2, group[0].1).writeResult?.commitVersion == Self.version(first[0]))
        // A batch id re-sent with other mutations is refused, in a group as alone, and the
        // batches after it in the frame are not attempted (the client sends them again under a
        // new client id).
        let reused = try await writeBatches(server, c, [(4, [T.set("items/other", [:])]), (5, [T.set("items/next", [:])])])
        #expect(Self.error(reused[0])?.isBatchIDCollision == true)
        #expect(Self.error(reused[1])?.code == .unavailable)
        #expect(try await server.stored("items/other") == nil)
        #expect(try await server.stored("items/next") == nil)
    }

    /// A batch that fails (not a rejection: it is sent again) stops its frame: the batches after
    /// it are answered `unavailable` and not applied, so none of them commits before it.
    @Test func aBatchThatFailsStopsTheBatchesAfterItInTheFrame() async throws {
        let server = TestServer()
        let owner = try await server.connect(uid: "u1", client: "shared")
        await server.write(owner, batch: 1, [T.set("items/a", ["n": 1])])
        // Another user on the same client id: re-sending batch 1 fails (it is u1's).
        let other = try await server.connect(uid: "u2", client: "shared")
        let answers = try await writeBatches(server, other, [
            (1, [T.set("items/a", ["n": 1])]),
            (2, [T.set("items/b", ["n": 2])]),
            (3, [T.set("items/c", ["n": 3])]),
        ])
        #expect(Self.error(answers[0])?.code == .permissionDenied)
        #expect(Self.error(answers[1])?.code == .unavailable)
        #expect(Self.error(answers[2])?.code == .unavailable)
        #expect(try await server.stored("items/b") == nil)
        #expect(try await server.stored("items/c") == nil)
    }

    @Test func anotherClientIDIsRefusedForEveryBatchAndNothingChanges() async throws {
        let server = TestServer()
        let c = try await server.connect()
        let start = try await server.tenantStore("acme").state()
        let frame = ClientMessage.WriteBatches(clientID: "someone-else", batches: [
            .init(batchID: 1, mutations: [T.set("items/a", [:])]), .init(batchID: 2, mutations: [T.set("items/b", [:])]),
        ])
        guard case .writeResults(let results) = await server.core.write(frame, on: c) else {
            Issue.record("no writeResults")
            return
        }
        #expect(results.answers.map(\.batchID) == [1, 2])
        #expect(results.answers.allSatisfy { Self.error($0)?.code == .invalidArgument })
        #expect(try await server.tenantStore("acme").state() == start)
        #expect(try await server.tenantStore("acme").outcome(of: BatchKey(clientID: "someone-else", batchID: 1)) == nil)
    }

    @Test func badFramesAreRefusedWithInvalidArgumentAndChangeNothing() async throws {
        let server = TestServer()
        let c = try await server.connect()
        let start = try await server.tenantStore("acme").state()
        let good = #"{"batchId":1,"mutations":[{"path":"items/a","kind":"set","data":{"n":1}}]}"#
        // Batch 2 is invalid (a reserved field name): the whole frame is refused, batch 1 too,
        // and the answer names batch 2.
        let bad = #"{"batchId":2,"mutations":[{"path":"items/b","kind":"set","data":{"__n__":1}}]}"#
        await server.core.receive(text: #"{"type":"writeBatches","clientId":"client-1","batches":["# + good + "," + bad + "]}",
                                  on: c)
        let refusal = c.outbound.drain()
        #expect(refusal.count == 1)
        #expect(refusal.first?.writeError?.batchID == 2)
        #expect(refusal.first?.writeError?.error.code == .invalidArgument)
        // Not remembered: batch 2 may be sent again (valid) and commits.
        // A frame whose batches cannot be told apart: an `error` frame.
        for frame in [
            #"{"type":"writeBatches","clientId":"client-1","batches":[]}"#,
            #"{"type":"writeBatches","clientId":"client-1","batches":["# + good + "," + good + "]}",
            #"{"type":"writeBatches","clientId":"client-1","batches":["# + good + #"],"extra":true}"#,
            #"{"type":"writeBatches","batches":["# + good + "]}",
        ] {
            await server.core.receive(text: frame, on: c)
            let answer = c.outbound.drain()
            guard case .error(let error)? = answer.first, answer.count == 1 else {
                Issue.record("\(frame): \(answer)")
                continue
            }
            #expect(error.error.code == .invalidArgument && !error.fatal)
        }
        let store = try server.tenantStore("acme")
        #expect(try await store.state() == start, "nothing committed")
        #expect(try await store.outcome(of: BatchKey(clientID: "client-1", batchID: 1)) == nil, "no outcome stored")
        #expect(try await store.outcome(of: BatchKey(clientID: "client-1", batchID: 2)) == nil)
        #expect(try await server.stored("items/a") == nil)

        // The same batches, valid, commit.
        let answers = try await writeBatches(server, c, [(1, [T.set("items/a", ["n": 1])]), (2, [T.set("items/b", ["n": 2])])])
        #expect(answers.allSatisfy { Self.version($0) != nil })
    }

    @Test func theStoreCommitsAGroupAllOrNothing() async throws {
        let server = TestServer()
        let store = try server.tenantStore("acme")
        let processor = { (view: GroupCommitView) in
            CommitProcessor(store: view, clock: server.clock.serverClock, logger: .discarding)
        }
        // Two batches staged on a view: the second overwrites the first one's document.
        let view = GroupCommitView(base: store)
        _ = try await processor(view).process(batch: BatchKey(clientID: "c", batchID: 1),
                                             mutations: [T.set("items/a", ["color": "red"])], uid: "u")
        server.clock.advance(by: 1)
        _ = try await processor(view).process(batch: BatchKey(clientID: "c", batchID: 2),
                                             mutations: [T.set("items/a", ["color": "blue"])], uid: "u")
        #expect(view.requests.count == 2)
        #expect(try await store.outcome(of: BatchKey(clientID: "c", batchID: 1)) == nil, "a view only stages")
        let before = try await store.state().lastVersion
        #expect(try await store.commitGroup(view.requests) == before)
        #expect(try await store.state().lastVersion == view.requests[1].outcome.commitVersion)
        // The index rows of the first write were replaced by the second's.
        let red = try await store.query(T.target(try DocModel.Query(collection: "items").filter("color", .equal, "red")), limit: nil)
        let blue = try await store.query(T.target(try DocModel.Query(collection: "items").filter("color", .equal, "blue")), limit: nil)
        #expect(red.documents.isEmpty)
        #expect(blue.documents.map(\.key) == [T.key("items/a")])

        // A group holding a batch that already has an outcome is refused as a whole.
        server.clock.advance(by: 1)
        let next = GroupCommitView(base: store)
        _ = try await processor(next).process(batch: BatchKey(clientID: "c", batchID: 3),
                                             mutations: [T.set("items/b", ["color": "red"])], uid: "u")
        let state = try await store.state()
        await #expect(throws: DocError.self) { try await store.commitGroup(next.requests + [view.requests[0]]) }
        #expect(try await store.state() == state)
        #expect(try await store.outcome(of: BatchKey(clientID: "c", batchID: 3)) == nil, "nothing of the group was stored")
        #expect(try await server.stored("items/b") == nil)
    }
}

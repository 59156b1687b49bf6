import DocModel
import DocProtocol
import Testing
@testable import DocServer

@Suite struct WatchTests {
    func listen(_ server: TestServer, _ connection: ServerConnection, _ id: Int32, _ target: Target,
                token: [UInt8]? = nil, expectedCount: Int? = nil) async -> [ServerMessage] {
        let delivered = await server.core.watch(.init(targetID: id, target: target, resumeToken: token, expectedCount: expectedCount), on: connection)
        #expect(connection.outbound.drain() == delivered)
        return delivered
    }

    /// Writes `paths` through a client of its own (`seeder`, as the user of `c`), so that the
    /// test's own batches on `c` may be numbered from 1.
    func seed(_ server: TestServer, _ c: ServerConnection, _ paths: [String: Int64]) async throws {
        let seeder = try await server.connect(uid: c.uid, client: "seeder")
        for (b, (path, rank)) in paths.sorted(by: { $0.key < $1.key }).enumerated() {
            await server.write(seeder, batch: b + 1, [T.set(path, ["rank": .integer(rank)])])
        }
    }

    @Test func initialResultsThenCurrentThenAGlobalSnapshot() async throws {
        let server = TestServer()
        let writer = try await server.connect(client: "writer")
        try await seed(server, writer, ["rooms/a": 1, "rooms/b": 2, "rooms/c/sub/x": 3, "other/z": 4])
        let c = try await server.connect()
        let messages = await listen(server, c, 2, T.collection("rooms", limit: 10))
        let state = try await server.tenantStore("acme").state()
        #expect(messages.count == 5)
        #expect(messages[0].targetChange == .init(state: .added, targetIDs: [2]))
        #expect(messages[1].documentChange?.document.key.description == "rooms/a")
        #expect(messages[2].documentChange?.document.key.description == "rooms/b")
        #expect(messages[1].documentChange?.targetIDs == [2])
        let current = try #require(messages[3].targetChange)
        #expect(current.state == .current && current.targetIDs == [2])
        let token = try #require(current.resumeToken.flatMap(WatchToken.init(bytes:)))
        #expect(token.version == state.lastVersion && token.incarnation == state.incarnation)
        let global = try #require(messages[4].targetChange)
        #expect(global.isGlobalSnapshot && global.snapshotVersion == state.lastVersion && global.resumeToken == current.resumeToken)
    }

    @Test func documentTargetsAndEmptyDatabases() async throws {
        let server = TestServer()
        let c = try await server.connect()
        // A fresh tenant still has a version (its creation time): the client raises a snapshot.
        let empty = await listen(server, c, 1, T.target(DocModel.Query(document: T.key("users/alice"))))
        #expect(empty.count == 3)
        #expect(empty.last?.targetChange?.snapshotVersion.map { $0 > .none } == true)
        let writer = try await server.connect(client: "w")
        await server.write(writer, batch: 1, [T.set("users/alice", ["name": "Alice"])])
        let changes = c.outbound.drain()
        #expect(changes.count == 2)
        #expect(changes[0].documentChange?.targetIDs == [1])
        #expect(changes[1].targetChange?.isGlobalSnapshot == true)
    }

    @Test func unboundedQueryTargetsAreRefused() async throws {
        let server = TestServer(configuration: ServerConfiguration(maxListenLimit: 50))
        let c = try await server.connect()
        let noLimit = await listen(server, c, 2, T.collection("rooms", limit: nil))
        #expect(noLimit.count == 1)
        let refusal = try #require(noLimit[0].targetChange)
        #expect(refusal.state == .removed && refusal.targetIDs == [2])
        #expect(refusal.cause?.code == .invalidArgument)
        #expect(refusal.cause?.message.contains("must have a limit") == true)
        let tooBig = await listen(server, c, 4, T.collection("rooms", limit: 51))
        #expect(tooBig.first?.targetChange?.cause?.message.contains("at most 50") == true)
        let groupNoLimit = await listen(server, c, 6, T.target(try DocModel.Query(collectionGroup: "rooms")))
        #expect(groupNoLimit.first?.targetChange?.cause?.code == .invalidArgument)
        // Bounded ones and document targets are fine.
        #expect(await listen(server, c, 8, T.collection("rooms", limit: 50)).first?.targetChange?.state == .added)
        #expect(await listen(server, c, 1, T.target(DocModel.Query(document: T.key("rooms/a")))).first?.targetChange?.state == .added)
        // The refused targets are not listened to: commits reach only the accepted ones.
        let writer = try await server.connect(client: "w")
        await server.write(writer, batch: 1, [T.set("rooms/a", [:])])
        #expect(c.outbound.drain().first?.documentChange?.targetIDs.sorted() == [1, 8])
        await #expect(throws: DocError.self) { try await server.core.query(T.collection("rooms", limit: nil), on: c) }
    }

    @Test func aConnectionHoldsAtMostTheCappedNumberOfTargets() async throws {
        var configuration = ServerConfiguration()
        configuration.maxTargetsPerConnection = 3
        let server = TestServer(configuration: configuration)
        let c = try await server.connect()
        for id: Int32 in [2, 4, 6] {
            #expect(await listen(server, c, id, T.collection("rooms\(id)", limit: 5)).first?.targetChange?.state == .added)
        }
        let fourth = try #require(await listen(server, c, 8, T.collection("rooms8", limit: 5)).first?.targetChange)
        #expect(fourth.state == .removed && fourth.targetIDs == [8] && fourth.cause?.code == .resourceExhausted)
        // Replacing a target it holds is fine; after removing one, another may come.
        #expect(await listen(server, c, 2, T.collection("rooms", limit: 5)).first?.targetChange?.state == .added)
        _ = await server.core.unwatch(.init(targetID: 4), on: c)
        _ = c.outbound.drain()
        #expect(await listen(server, c, 8, T.collection("rooms8", limit: 5)).first?.targetChange?.state == .added)
    }

    @Test func fanOutToTwoConnectionsThenAGlobalSnapshot() async throws {
        let server = TestServer()
        let a = try await server.connect(client: "a")
        let b = try await server.connect(client: "b")
        _ = await listen(server, a, 2, T.collection("rooms", limit: 10))
        _ = await listen(server, b, 2, T.collection("rooms", limit: 10))
        _ = await listen(server, b, 4, T.collection("rooms", limit: 10, orderBy: "rank", descending: true))
        let unrelated = try await server.connect(client: "c")
        _ = await listen(server, unrelated, 2, T.collection("elsewhere", limit: 10))
        let w = try await server.connect(client: "w")
        let result = try #require(await server.write(w, batch: 1, [T.set("rooms/r1", ["rank": 1])]).writeResult)
        let toA = a.outbound.drain()
        let toB = b.outbound.drain()
        #expect(toA.count == 2 && toB.count == 2)
        #expect(toA[0].documentChange?.targetIDs == [2])
        #expect(toB[0].documentChange?.targetIDs == [2, 4])   // one message names every target
        #expect(toB[0].documentChange?.document.version == result.commitVersion)
        #expect(toA[1].targetChange?.snapshotVersion == result.commitVersion)
        #expect(toB[1].targetChange?.isGlobalSnapshot == true)
        #expect(unrelated.outbound.drain().isEmpty)
        // The periodic tick brings the idle listener to the latest version, once.
        #expect(await server.core.tick() == 1)
        #expect(unrelated.outbound.drain().first?.targetChange?.snapshotVersion == result.commitVersion)
        #expect(await server.core.tick() == 0)
    }

    @Test func limitWindowsFollowCommits() async throws {
        let server = TestServer()
        let w = try await server.connect(client: "w")
        try await seed(server, w, ["s/a": 10, "s/b": 20, "s/c": 30, "s/d": 40])
        let c = try await server.connect()
        var mirror = ClientMirror()
        mirror.apply(await listen(server, c, 2, T.collection("s", limit: 2, orderBy: "rank")))
        #expect(mirror.keys(2) == ["s/a", "s/b"])

        // A new first document pushes "s/b" out: a remove without content.
        await server.write(w, batch: 1, [T.set("s/0", ["rank": 5])])
        var messages = c.outbound.drain()
        mirror.apply(messages)
        #expect(mirror.keys(2) == ["s/0", "s/a"])
        #expect(messages.contains { if case .documentRemove(let r) = $0 { r.key.description == "s/b" && r.removedTargetIDs == [2] } else { false } })

        // Deleting from the full window refills it from the store.
        await server.write(w, batch: 2, [.delete(T.key("s/0"))])
        messages = c.outbound.drain()
        mirror.apply(messages)
        #expect(mirror.keys(2) == ["s/a", "s/b"])
        #expect(messages.contains { if case .documentDelete(let d) = $0 { d.key.description == "s/0" } else { false } })

        // A document moving past the end of the window leaves it, and the next one enters.
        await server.write(w, batch: 3, [.setMerge(T.key("s/a"), T.data(["rank": 35]))])
        mirror.apply(c.outbound.drain())
        #expect(mirror.keys(2) == ["s/b", "s/c"])

        // Changes beyond the window send nothing.
        await server.write(w, batch: 4, [.setMerge(T.key("s/d"), T.data(["rank": 41]))])
        #expect(c.outbound.drain().isEmpty)
        // Changes inside the window are sent as changes.
        await server.write(w, batch: 5, [.setMerge(T.key("s/c"), T.data(["note": "hi"]))])
        messages = c.outbound.drain()
        #expect(messages.first?.documentChange?.document.data["note"] == "hi")
        mirror.apply(messages)
        #expect(mirror.keys(2) == ["s/b", "s/c"])
    }

    @Test func tombstonesLeaveListenersThatHideThem() async throws {
        let server = TestServer()
        let w = try await server.connect(client: "w")
        try await seed(server, w, ["n/a": 1, "n/b": 2])
        let c = try await server.connect()
        var mirror = ClientMirror()
        mirror.apply(await listen(server, c, 2, T.collection("n", limit: 10)))
        mirror.apply(await listen(server, c, 4, T.collection("n", limit: 10, includeDeleted: true)))
        await server.write(w, batch: 1, [.tombstone(T.key("n/a"))])
        let messages = c.outbound.drain()
        let change = try #require(messages.first?.documentChange)
        #expect(change.document.isTombstone)
        #expect(change.targetIDs == [4] && change.removedTargetIDs == [2])
        mirror.apply(messages)
        #expect(mirror.keys(2) == ["n/b"])
        #expect(mirror.keys(4) == ["n/a", "n/b"])
        // A new listener does not get tombstones unless it asks for them.
        let late = try await server.connect(client: "late")
        var lateMirror = ClientMirror()
        lateMirror.apply(await listen(server, late, 2, T.collection("n", limit: 10)))
        #expect(lateMirror.keys(2) == ["n/b"])
    }

    @Test func resumeSendsOnlyWhatChanged() async throws {
        let server = TestServer()
        let w = try await server.connect(client: "w")
        var seedDocs: [String: Int64] = [:]
        for i in 0..<20 { seedDocs["items/i\(i < 10 ? "0" : "")\(i)"] = Int64(i) }
        try await seed(server, w, seedDocs)
        let c = try await server.connect()
        var mirror = ClientMirror()
        let target = T.collection("items", limit: 100)
        mirror.apply(await listen(server, c, 2, target))
        #expect(mirror.documentsReceived == 20)
        let token = try #require(mirror.tokens[2] ?? nil)
        await server.core.close(c)

        // While the client is away: one change, one delete, one new document, and noise elsewhere.
        await server.write(w, batch: 1, [.setMerge(T.key("items/i03"), T.data(["edited": true]))])
        await server.write(w, batch: 2, [.delete(T.key("items/i07"))])
        await server.write(w, batch: 3, [T.set("items/new", ["rank": 99])])
        await server.write(w, batch: 4, [T.set("elsewhere/x", [:])])

        let again = try await server.connect()
        mirror.documentsReceived = 0
        let messages = await listen(server, again, 2, target, token: token, expectedCount: 20)
        mirror.apply(messages)
        #expect(!messages.contains { $0.targetChange?.state == .reset })
        #expect(mirror.documentsReceived == 2)   // i03 and new; i07 is a delete
        #expect(mirror.keys(2).count == 20)
        #expect(mirror.targets[2]?[T.key("items/i03")]?.data["edited"] == true)
        #expect(mirror.targets[2]?[T.key("items/i07")] == nil)
        #expect(messages.contains { if case .existenceFilter(let f) = $0 { f.count == 20 && f.targetID == 2 } else { false } })
        #expect(messages.last?.targetChange?.snapshotVersion == (try await server.tenantStore("acme").state().lastVersion))
    }

    @Test func resumeOfALimitedTargetEndsWithTheNewWindow() async throws {
        let server = TestServer()
        let w = try await server.connect(client: "w")
        try await seed(server, w, ["q/a": 1, "q/b": 2, "q/c": 3, "q/d": 4, "q/e": 5, "q/f": 6])
        let c = try await server.connect()
        let target = T.collection("q", limit: 3, orderBy: "rank")
        var mirror = ClientMirror()
        mirror.apply(await listen(server, c, 2, target))
        #expect(mirror.keys(2) == ["q/a", "q/b", "q/c"])
        let token = try #require(mirror.tokens[2] ?? nil)
        // "q/a" leaves (the window moves up to "q/d"), "q/0" enters at the front.
        await server.write(w, batch: 1, [.delete(T.key("q/a"))])
        await server.write(w, batch: 2, [T.set("q/0", ["rank": 0])])
        await server.write(w, batch: 3, [.setMerge(T.key("q/b"), T.data(["rank": 10]))])   // b moves out
        let again = try await server.connect(client: "again")
        mirror.apply(await listen(server, again, 2, target, token: token))
        #expect(mirror.keys(2) == ["q/0", "q/c", "q/d"])
    }

    @Test func resetWhenTheTokenIsTooOldOrForeign() async throws {
        let server = TestServer(configuration: ServerConfiguration(changeLogRetentionMicros: 1_000_000))
        let w = try await server.connect(client: "w")
        try await seed(server, w, ["r/a": 1, "r/b": 2])
        let c = try await server.connect()
        var mirror = ClientMirror()
        mirror.apply(await listen(server, c, 2, T.collection("r", limit: 10)))
        let token = try #require(mirror.tokens[2] ?? nil)
        server.clock.advance(by: 10_000_000)
        await server.write(w, batch: 1, [.delete(T.key("r/a"))])
        let report = await server.core.runMaintenance()
        #expect(report.changesPruned == 2)   // the seed; the delete is recent

        let again = try await server.connect(client: "again")
        let messages = await listen(server, again, 2, T.collection("r", limit: 10), token: token)
        #expect(messages.map { $0.targetChange?.state } == [.added, .reset, nil, .current, .noChange])
        mirror.apply(messages)
        #expect(mirror.keys(2) == ["r/b"])

        // A token of another tenant's database (another incarnation) is never resumed.
        let stranger = try await server.connect(tenant: "other", client: "s")
        let foreign = await listen(server, stranger, 2, T.collection("r", limit: 10), token: token)
        #expect(foreign.map { $0.targetChange?.state } == [.added, .reset, .current, .noChange])
        // Garbage tokens reset too.
        let garbage = await listen(server, stranger, 4, T.collection("r", limit: 10), token: [1, 2, 3])
        #expect(garbage[1].targetChange?.state == .reset)
    }

    @Test func removeTargetStopsChanges() async throws {
        let server = TestServer()
        let c = try await server.connect()
        _ = await listen(server, c, 2, T.collection("a", limit: 10))
        let removed = await server.core.unwatch(.init(targetID: 2), on: c)
        #expect(removed == [.targetChange(.init(state: .removed, targetIDs: [2]))])
        #expect(c.outbound.drain() == removed)
        let w = try await server.connect(client: "w")
        await server.write(w, batch: 1, [T.set("a/1", [:])])
        #expect(c.outbound.drain().isEmpty)
        // Removing an unknown target is acknowledged as well.
        #expect(await server.core.unwatch(.init(targetID: 99), on: c).first?.targetChange?.state == .removed)
    }

    @Test func tenantsNeverSeeEachOther() async throws {
        let server = TestServer()
        let a = try await server.connect(tenant: "tenant-a", client: "a")
        let b = try await server.connect(tenant: "tenant-b", client: "b")
        _ = await listen(server, a, 2, T.collection("shared", limit: 10))
        _ = await listen(server, b, 2, T.collection("shared", limit: 10))
        let bWriter = try await server.connect(tenant: "tenant-b", client: "bw")
        await server.write(bWriter, batch: 1, [T.set("shared/doc", ["owner": "b"])])
        #expect(a.outbound.drain().isEmpty)
        #expect(b.outbound.drain().first?.documentChange?.document.data["owner"] == "b")
        // Reads and new listens from A only ever see A's database.
        #expect(try await server.core.documents([T.key("shared/doc")], on: a).isEmpty)
        let aMessages = await listen(server, a, 4, T.collection("shared", limit: 10))
        #expect(!aMessages.contains { $0.documentChange != nil })
        // A's writes to the same path land in A; B's document is untouched.
        await server.write(a, batch: 1, [T.set("shared/doc", ["owner": "a"])])
        #expect(try await server.core.documents([T.key("shared/doc")], on: b).first?.data["owner"] == "b")
        #expect(try await server.core.documents([T.key("shared/doc")], on: a).first?.data["owner"] == "a")
        #expect(b.outbound.drain().isEmpty)
    }

    /// Random commits against several limited targets: after every commit, every client
    /// mirror equals the server's results; a client resuming from an old token catches up.
    @Test func randomCommitsKeepMirrorsExact() async throws {
        let server = TestServer()
        let w = try await server.connect(client: "w")
        let c = try await server.connect()
        let targets: [Int32: Target] = [
            2: T.collection("r", limit: 3, orderBy: "rank"),
            4: T.collection("r", limit: 5, orderBy: "rank", descending: true),
            6: T.target(try DocModel.Query(collection: "r").filter("rank", .greaterThanOrEqual, 5).limit(to: 4)),
            8: T.collection("r", limit: 50, includeDeleted: true),
        ]
        var mirror = ClientMirror()
        for (id, target) in targets.sorted(by: { $0.key < $1.key }) { mirror.apply(await listen(server, c, id, target)) }
        var saved: [(Int, ClientMirror)] = []
        var rng = SystemRandomNumberGenerator()
        for batch in 1...120 {
            let key = "r/d\(Int.random(in: 0..<15, using: &rng))"
            let mutation: Mutation
            switch Int.random(in: 0..<6, using: &rng) {
            case 0: mutation = .delete(T.key(key))
            case 1: mutation = .tombstone(T.key(key))
            default: mutation = T.set(key, ["rank": .integer(Int64.random(in: 0..<10, using: &rng))])
            }
            server.clock.advance(by: 1)
            await server.write(w, batch: batch, [mutation])
            mirror.apply(c.outbound.drain())
            for (id, target) in targets {
                let expected = try await server.tenantStore("acme").query(target, limit: target.limit).documents.map(\.key.description).sorted()
                #expect(mirror.keys(id) == expected, "target \(id) after batch \(batch)")
            }
            if batch % 4 == 0 { saved.append((batch, mirror)) }
        }
        var resets = 0
        var resumes = 0
        // A client that went away at each saved point resumes every target from its token and
        // ends with exactly the current results, and its count matches the existence filter.
        for (batch, old) in saved {
            let again = try await server.connect(client: "again-\(batch)")
            for (id, target) in targets.sorted(by: { $0.key < $1.key }) {
                var resumed = old
                let token = try #require(old.tokens[id] ?? nil)
                let messages = await listen(server, again, id, target, token: token, expectedCount: old.keys(id).count)
                // More changes than the limit: a reset (the window is sent again), or, for a
                // window that was not full, a resume from the documents whose removals the
                // existence filter's bloom filter tells.
                let reset = messages.contains { $0.targetChange?.state == .reset }
                if reset { resets += 1 } else { resumes += 1 }
                resumed.apply(messages)
                if resumed.needsRequery.contains(id) {
                    // A false positive of the bloom filter: the client listens again from scratch.
                    resumed.targets[id] = [:]
                    resumed.apply(await listen(server, again, id, target))
                }
                let expected = try await server.tenantStore("acme").query(target, limit: target.limit).documents.map(\.key.description).sorted()
                #expect(resumed.keys(id) == expected, "target \(id) from batch \(batch)")
                let filter = messages.compactMap { if case .existenceFilter(let f) = $0 { f.count } else { nil } }
                #expect(filter == (reset ? [] : [expected.count]))
            }
        }
        #expect(resumes > 0)
    }
}

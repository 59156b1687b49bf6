import DocModel
import DocRules
import DocTestSupport
import Testing
@testable import DocServer

/// Two commit processors on one tenant, as two server instances on one database are: the
/// store refuses a commit whose batch read a document that another commit changed since, and
/// the batch is processed again on the new state. Documents read as absent count too.
@Suite struct CommitRaceTests {
    /// A tenant store that holds a commit until released: the moment between a batch's reads
    /// and its store commit, made long.
    final class HeldCommitStore: ForwardingTenantStore {
        let base: any TenantStore
        let hold = CallHold<CommitRequest>()

        init(base: any TenantStore) { self.base = base }

        func commit(_ request: CommitRequest) async throws(DocError) -> CommitResult {
            await hold.pass(request)
            return try await base.commit(request)
        }
    }

    /// Runs `mutations` as batch 1 of client A, held before its store commit while client B
    /// commits `meanwhile`; returns A's outcome. A's clock is a millisecond ahead of B's (two
    /// machines' clocks differ), so B's commit version is below A's and only the documents'
    /// versions tell that B came between A's reads and its commit.
    static func race(_ mutations: [Mutation], access: AccessContext? = nil, meanwhile: [Mutation], on server: TestServer)
        async throws -> BatchOutcome {
        let base = try server.tenantStore("acme")
        let held = HeldCommitStore(base: base)
        let clock = server.clock
        let ahead = ServerClock { clock.micros + 1_000 }
        let a = CommitProcessor(store: held, clock: ahead, logger: .discarding)
        let b = CommitProcessor(store: base, clock: clock.serverClock, logger: .discarding)
        let (reached, release) = held.hold.holdNext()
        let first = Task { try await a.process(batch: BatchKey(clientID: "A", batchID: 1), mutations: mutations, uid: "u",
                                                  access: access) }
        for await _ in reached { break }
        clock.advance(by: 10)
        let meanwhile = try await b.process(batch: BatchKey(clientID: "B", batchID: 1), mutations: meanwhile, uid: "u")
        #expect(meanwhile.applied)
        #expect(meanwhile.outcome.commitVersion.map { $0.microseconds < clock.micros + 1_000 } == true)
        release.yield()
        return try await first.value.outcome
    }

    /// Rules that let a post be written while `settings/board` is open, as user `u`.
    static func boardAccess() throws -> AccessContext {
        let rules = try RuleSet.parse(source: """
            rules_version = '2';
            service cloud.firestore {
              match /databases/{database}/documents {
                match /posts/{id} {
                  allow write: if get(/databases/$(database)/documents/settings/board).data.open == true;
                }
              }
            }
            """, file: "race.rules")
        return AccessContext(rules: rules, auth: RulesAuth(uid: "u"), explainDenials: false, logger: .discarding)
    }

    static let board = T.key("settings/board")

    /// Opens or closes the board (as an admin, without rules), then moves the clock on.
    static func setBoard(open: Bool, on server: TestServer) async throws {
        let seed = CommitProcessor(store: try server.tenantStore("acme"), clock: server.clock.serverClock, logger: .discarding)
        let set = try await seed.process(batch: BatchKey(clientID: "S", batchID: 1),
                                         mutations: [.set(board, ObjectValue(["open": .boolean(open)]))], uid: "admin")
        #expect(set.applied)
        server.clock.advance(by: 10)
    }

    @Test func aCreateRacingAnotherCreateIsRefused() async throws {
        let server = TestServer()
        let key = T.key("accounts/new")
        let outcome = try await Self.race([.set(key, ObjectValue(["owner": "a"]), precondition: .exists(false))],
                                          meanwhile: [.set(key, ObjectValue(["owner": "b"]), precondition: .exists(false))], on: server)
        // A read the document as absent; B created it meanwhile: A is processed again and its
        // precondition fails, instead of overwriting B's document.
        guard case .rejected(let error) = outcome.result else {
            Issue.record("the second create was committed over the first: \(outcome.result)")
            return
        }
        #expect(error.code == .alreadyExists)
        let stored = try await server.tenantStore("acme").documents([key]).documents[key]
        #expect(stored?.data["owner"] == "b")
    }

    @Test func incrementsOfAMissingCounterBothCount() async throws {
        let server = TestServer()
        let key = T.key("counters/c")
        let increment = Mutation.setMerge(key, ObjectValue(), transforms: [.increment(T.field("n"), by: 1)])
        let outcome = try await Self.race([increment], meanwhile: [increment], on: server)
        guard case .committed = outcome.result else {
            Issue.record("the increment was not committed: \(outcome.result)")
            return
        }
        // Both increments count: A was processed again on B's document.
        let stored = try await server.tenantStore("acme").documents([key]).documents[key]
        #expect(stored?.data["n"] == .integer(2))
    }

    @Test func aRulesDecisionOnADocumentChangedMeanwhileIsMadeAgain() async throws {
        let server = TestServer()
        let access = try Self.boardAccess()
        try await Self.setBoard(open: true, on: server)
        let post = T.key("posts/p1")
        // A's rules read the board as open; B closes it before A's commit. A's decision rested
        // on a document that changed: A is decided again, on the closed board, and refused.
        let outcome = try await Self.race([.set(post, ObjectValue(["title": "late"]))], access: access,
                                          meanwhile: [.set(Self.board, ObjectValue(["open": false]))], on: server)
        guard case .rejected(let error) = outcome.result else {
            Issue.record("the write was committed on the rules' stale read of the board: \(outcome.result)")
            return
        }
        #expect(error.code == .permissionDenied)
        #expect(try await server.tenantStore("acme").documents([post]).documents[post] == nil)
    }

    @Test func aDenialOnADocumentChangedMeanwhileIsMadeAgain() async throws {
        let server = TestServer()
        let access = try Self.boardAccess()
        try await Self.setBoard(open: false, on: server)
        let post = T.key("posts/p1")
        // A's rules read the board as closed; B opens it before A's denial is remembered. The
        // denial rested on a document that changed: A is decided again, on the open board.
        let outcome = try await Self.race([.set(post, ObjectValue(["title": "early"]))], access: access,
                                          meanwhile: [.set(Self.board, ObjectValue(["open": true]))], on: server)
        guard case .committed = outcome.result else {
            Issue.record("the write was refused on the rules' stale read of the board: \(outcome.result)")
            return
        }
        #expect(try await server.tenantStore("acme").documents([post]).documents[post]?.data["title"] == "early")
    }

    @Test func aFailedPreconditionOnADocumentCreatedMeanwhileIsMadeAgain() async throws {
        let server = TestServer()
        let key = T.key("accounts/a1")
        // A's update reads the account as absent (`notFound`); B creates it before A's
        // rejection is remembered: A is applied again, on the account B created.
        let outcome = try await Self.race(
            [.update(key, fields: [T.field("limit"): 5])],
            meanwhile: [.set(key, ObjectValue(["owner": "b"]))], on: server)
        guard case .committed = outcome.result else {
            Issue.record("the update was refused on a stale read of its document: \(outcome.result)")
            return
        }
        let stored = try await server.tenantStore("acme").documents([key]).documents[key]
        #expect(stored?.data["owner"] == "b")
        #expect(stored?.data["limit"] == 5)
    }
}

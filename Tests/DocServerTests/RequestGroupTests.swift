import DocModel
import DocTestSupport
import Foundation
import Synchronization
import Testing
@testable import DocServer

/// Requests processed as a group: the requests of a tenant that wait for the same turn are
/// decided in arrival order, each seeing the writes of those before it, and committed in one
/// store commit; a group whose commit fails is processed request by request, exactly once.
///
/// The requests of a test are written by one client batch: its request keys are processed by
/// one call, so they form one group (ids sort in submission order, so a start-up sweep that
/// finds them first queues them in the same order).
@Suite("Request groups")
struct RequestGroupTests {
    // MARK: Helpers

    func server() -> TestServer { RequestTests.server() }

    func document(_ server: TestServer, _ path: String) async throws -> Document? { try await RequestTests.document(server, path) }

    func settled(_ server: TestServer, _ id: String) async throws -> Document { try await RequestTests.settled(server, id) }

    /// All the requests, settled, by id.
    func settled(_ server: TestServer, _ ids: [String]) async throws -> [String: Document] {
        var settled: [String: Document] = [:]
        for id in ids { settled[id] = try await self.settled(server, id) }
        return settled
    }

    func balance(_ server: TestServer, _ id: String) async throws -> Int64? { try await RequestTests.balance(server, id) }

    /// How many different commits finalized these requests (their `processedAt` is the commit
    /// time, which differs between commits).
    func commits(_ requests: some Collection<Document>) -> Int {
        Set(requests.compactMap { $0.data["processedAt"] }).count
    }

    func errorCode(_ request: Document?) -> Value? {
        guard case .map(let error)? = request?.data["error"] else { return nil }
        return error["code"]
    }

    func errorMessage(_ request: Document?) -> String {
        guard case .map(let error)? = request?.data["error"], case .string(let message)? = error["message"] else { return "" }
        return message
    }

    func transfer(_ id: String, _ from: String, _ to: String, _ amount: Int64, base: [String: Int64] = [:]) -> Mutation {
        RequestTests.request(id, type: "transfer", params: RequestTests.transfer(from, to, amount), base: base)
    }

    // MARK: Tests

    @Test func manyTransfersSubmittedAtOnceApplyInFewerCommitsThanRequests() async throws {
        let server = server()
        let c = try await server.connect()
        let accounts = ["a", "b", "c", "d", "e"]
        await server.write(c, batch: 1, accounts.map { RequestTests.account($0, 1_000) })
        var expected = Dictionary(uniqueKeysWithValues: accounts.map { ($0, Int64(1_000)) })
        var transfers: [Mutation] = []
        var ids: [String] = []
        for i in 0..<20 {
            let (from, to, amount) = (accounts[i % 5], accounts[(i + 2) % 5], Int64(10 + i))
            ids.append(String(format: "t%02d", i))
            transfers.append(transfer(ids[i], from, to, amount))
            expected[from]! -= amount
            expected[to]! += amount
        }
        await server.write(c, batch: 2, transfers)
        let requests = try await settled(server, ids)
        for id in ids {
            #expect(requests[id]?.data["status"] == "applied", "\(id): \(errorMessage(requests[id]))")
            let ledger = try await document(server, "ledger/\(id)")
            #expect(ledger?.data["requestId"] == .string(id))
        }
        for account in accounts { #expect(try await balance(server, account) == expected[account], "accounts/\(account)") }
        #expect(commits(requests.values) < ids.count, "one commit per request: the requests were not grouped")
    }

    @Test func transfersFromSeveralClientsAtOnceAllApplyOnce() async throws {
        let server = server()
        let admin = try await server.connect(client: "admin")
        await server.write(admin, batch: 1, [RequestTests.account("a", 1_000), RequestTests.account("b", 1_000)])
        let clients = 4, perClient = 5
        await withThrowingTaskGroup(of: Void.self) { group in
            for client in 0..<clients {
                group.addTask {
                    let connection = try await server.connect(client: "client-\(client)")
                    for k in 0..<perClient {
                        let (from, to) = k.isMultiple(of: 2) ? ("a", "b") : ("b", "a")
                        await server.write(connection, batch: k + 1, [transfer("c\(client)-\(k)", from, to, Int64(1 + k))])
                    }
                }
            }
        }
        let ids = (0..<clients).flatMap { client in (0..<perClient).map { "c\(client)-\($0)" } }
        let requests = try await settled(server, ids)
        for id in ids {
            #expect(requests[id]?.data["status"] == "applied", "\(id): \(errorMessage(requests[id]))")
            #expect(try await document(server, "ledger/\(id)") != nil, "no ledger entry for \(id)")
        }
        // Per client: a→b 1, b→a 2, a→b 3, b→a 4, a→b 5 — a net 3 from a to b.
        #expect(try await balance(server, "a") == 1_000 - 3 * Int64(clients))
        #expect(try await balance(server, "b") == 1_000 + 3 * Int64(clients))
    }

    @Test func aRequestSeesTheWritesOfTheRequestsBeforeItInItsGroup() async throws {
        let server = server()
        let c = try await server.connect()
        await server.write(c, batch: 1, [RequestTests.account("a", 100), RequestTests.account("b", 0), RequestTests.account("c", 0)])
        await server.write(c, batch: 2, [transfer("g1", "a", "b", 50), transfer("g2", "b", "c", 30)])
        let requests = try await settled(server, ["g1", "g2"])
        #expect(requests["g1"]?.data["status"] == "applied")
        #expect(requests["g2"]?.data["status"] == "applied", "\(errorMessage(requests["g2"]))")
        #expect(requests["g2"]?.data["result"] == .map(["from": 20, "to": 30]))
        #expect(try await balance(server, "a") == 50)
        #expect(try await balance(server, "b") == 20)
        #expect(try await balance(server, "c") == 30)
        #expect(commits(requests.values) == 1, "the two requests were not committed together")
    }

    @Test func insufficientFundsBecauseOfAnEarlierRequestRejectsOnlyThatRequest() async throws {
        let server = server()
        let c = try await server.connect()
        await server.write(c, batch: 1, [RequestTests.account("a", 100), RequestTests.account("b", 0), RequestTests.account("c", 0)])
        await server.write(c, batch: 2, [transfer("g1", "a", "b", 80), transfer("g2", "a", "c", 50), transfer("g3", "b", "c", 10)])
        let requests = try await settled(server, ["g1", "g2", "g3"])
        #expect(requests["g1"]?.data["status"] == "applied")
        #expect(requests["g2"]?.data["status"] == "rejected")
        #expect(errorCode(requests["g2"]) == "failedPrecondition")
        #expect(errorMessage(requests["g2"]).contains("insufficient funds: accounts/a has 20"), "\(errorMessage(requests["g2"]))")
        #expect(requests["g3"]?.data["status"] == "applied")
        #expect(try await balance(server, "a") == 20)
        #expect(try await balance(server, "b") == 70)
        #expect(try await balance(server, "c") == 10)
        #expect(try await document(server, "ledger/g2") == nil)
        #expect(commits(requests.values) == 1, "the requests were not committed together")
    }

    @Test func aStaleBaseRejectsOnlyThatRequest() async throws {
        let server = server()
        server.core.requests.register("openAccount", scope: ["accounts"]) { context throws(DocError) in
            guard case .string(let path)? = context.request.params["account"] else {
                throw DocError(.invalidArgument, "params.account must name an account")
            }
            return .apply([.set(path, ["balance": 0])], result: .null)
        }
        let c = try await server.connect()
        guard case .writeResult(let seeded) = await server.write(c, batch: 1, [
            RequestTests.account("a", 1_000), RequestTests.account("b", 0), RequestTests.account("c", 500), RequestTests.account("d", 0),
        ]) else {
            Issue.record("seed failed"); return
        }
        let seen = seeded.commitVersion.microseconds
        await server.write(c, batch: 2, [
            transfer("g1", "a", "b", 100, base: ["accounts/a": seen]),
            // Saw the version g1 changes, in the same group: stale.
            transfer("g2", "a", "b", 100, base: ["accounts/a": seen]),
            // Saw an older version than the stored one: stale.
            transfer("g3", "c", "d", 10, base: ["accounts/c": seen - 1]),
            transfer("g4", "c", "d", 20, base: ["accounts/c": seen]),
            // Saw accounts/z absent (version 0), which g5 creates in the same group: stale.
            RequestTests.request("g5", type: "openAccount", params: ["account": "accounts/z"]),
            transfer("g6", "a", "z", 5, base: ["accounts/z": 0]),
        ])
        let requests = try await settled(server, ["g1", "g2", "g3", "g4", "g5", "g6"])
        #expect(requests["g1"]?.data["status"] == "applied")
        #expect(requests["g4"]?.data["status"] == "applied")
        #expect(requests["g5"]?.data["status"] == "applied")
        for (id, path) in [("g2", "accounts/a"), ("g3", "accounts/c"), ("g6", "accounts/z")] {
            #expect(requests[id]?.data["status"] == "rejected", "\(id)")
            #expect(errorCode(requests[id]) == "failedPrecondition", "\(id)")
            #expect(errorMessage(requests[id]).hasPrefix("stale: \(path)"), "\(id): \(errorMessage(requests[id]))")
        }
        #expect(try await balance(server, "a") == 900)
        #expect(try await balance(server, "b") == 100)
        #expect(try await balance(server, "c") == 480)
        #expect(try await balance(server, "d") == 20)
        #expect(try await balance(server, "z") == 0)
        #expect(commits(requests.values) == 1, "the requests were not committed together")
    }

    @Test func aDocumentDeletedEarlierInTheGroupIsGoneForTheRequestsAfterIt() async throws {
        let server = server()
        server.core.requests.register("closeAccount", scope: ["accounts"]) { context throws(DocError) in
            guard case .string(let path)? = context.request.params["account"] else {
                throw DocError(.invalidArgument, "params.account must name an account")
            }
            return .apply([.delete(path)], result: .null)
        }
        let c = try await server.connect()
        await server.write(c, batch: 1, [RequestTests.account("a", 100), RequestTests.account("b", 0)])
        await server.write(c, batch: 2, [
            RequestTests.request("g1", type: "closeAccount", params: ["account": "accounts/b"]),
            transfer("g2", "a", "b", 10),
        ])
        let requests = try await settled(server, ["g1", "g2"])
        #expect(requests["g1"]?.data["status"] == "applied")
        #expect(requests["g2"]?.data["status"] == "rejected")
        #expect(errorCode(requests["g2"]) == "notFound", "\(errorMessage(requests["g2"]))")
        #expect(try await balance(server, "a") == 100)
        #expect(try await document(server, "accounts/b")?.isTombstone == true)
        #expect(commits(requests.values) == 1, "the requests were not committed together")
    }

    @Test func aGroupWhoseCommitFailsIsProcessedRequestByRequestExactlyOnce() async throws {
        let server = server()
        // `meddle`, the first time it runs, has another writer cancel a request of its group
        // (after the group read it): the group's commit then fails its precondition.
        let runs = Mutex(0)
        let core = server.core
        server.core.requests.register("meddle", scope: ["notes"]) { context throws(DocError) in
            guard case .string(let path)? = context.request.params["cancel"] else {
                throw DocError(.invalidArgument, "params.cancel must name a request")
            }
            if runs.withLock({ $0 += 1; return $0 }) == 1 {
                let answer = await core.commit(tenant: context.tenant, uid: "admin", clientID: "other-writer", batchID: 1, mutations: [
                    .update(T.key(path), fields: [T.field("status"): "rejected", T.field("error"): .map(["code": "cancelled", "message": "by admin"])]),
                ])
                guard case .writeResult = answer else { throw DocError(.internal, "the cancel was not committed: \(answer)") }
            }
            return .apply([.set("notes/\(context.request.id)", ["by": "meddle"])], result: .null)
        }
        let c = try await server.connect()
        await server.write(c, batch: 1, [RequestTests.account("a", 1_000), RequestTests.account("b", 0), RequestTests.account("c", 0)])
        await server.write(c, batch: 2, [
            RequestTests.request("g1", type: "meddle", params: ["cancel": "requests/g3"]),
            transfer("g2", "a", "b", 10),
            transfer("g3", "a", "b", 20),
            transfer("g4", "b", "c", 5),
        ])
        let requests = try await settled(server, ["g1", "g2", "g3", "g4"])
        for id in ["g1", "g2", "g4"] {
            #expect(requests[id]?.data["status"] == "applied", "\(id): \(errorMessage(requests[id]))")
        }
        // Cancelled by the other writer, never processed.
        #expect(requests["g3"]?.data["status"] == "rejected")
        #expect(errorCode(requests["g3"]) == "cancelled")
        #expect(requests["g3"]?.data["processedAt"] == nil)
        #expect(try await document(server, "ledger/g3") == nil)
        #expect(try await document(server, "ledger/g2")?.data["amount"] == 10)
        #expect(try await document(server, "ledger/g4")?.data["amount"] == 5)
        #expect(try await document(server, "notes/g1") != nil)
        #expect(try await balance(server, "a") == 990)
        #expect(try await balance(server, "b") == 5)
        #expect(try await balance(server, "c") == 5)
        // Decided in the group, then again on its own after the group's commit failed.
        #expect(runs.withLock { $0 } == 2)
        #expect(commits([requests["g1"]!, requests["g2"]!, requests["g4"]!]) == 3, "not committed one by one after the group failed")
    }

    @Test func aRejectionThatDoesNotRestOnItsReadsDoesNotVerifyThemInTheGroup() async throws {
        let server = server()
        // `stray` reads account a, has another writer change it, then writes outside its scope:
        // rejected for the write, not for what it read, so the group does not verify account a
        // and its commit does not fail because of the other writer.
        let runs = Mutex(0)
        let core = server.core
        server.core.requests.register("stray", scope: ["notes"]) { context throws(DocError) in
            _ = try await context.document("accounts/a")
            runs.withLock { $0 += 1 }
            let answer = await core.commit(tenant: context.tenant, uid: "admin", clientID: "other-writer", batchID: 1, mutations: [
                .update(T.key("accounts/a"), fields: [T.field("note"): "changed meanwhile"]),
            ])
            guard case .writeResult = answer else { throw DocError(.internal, "the other write was not committed: \(answer)") }
            return .apply([.set("ledger/stray", ["by": "stray"])], result: .null)
        }
        let c = try await server.connect()
        await server.write(c, batch: 1, [RequestTests.account("a", 100), RequestTests.account("b", 10), RequestTests.account("c", 0)])
        await server.write(c, batch: 2, [
            RequestTests.request("s1", type: "stray", params: [:]),
            transfer("s2", "b", "c", 5),
        ])
        let requests = try await settled(server, ["s1", "s2"])
        #expect(requests["s1"]?.data["status"] == "rejected")
        #expect(errorCode(requests["s1"]) == "permissionDenied", "\(errorMessage(requests["s1"]))")
        #expect(requests["s2"]?.data["status"] == "applied", "\(errorMessage(requests["s2"]))")
        #expect(runs.withLock { $0 } == 1, "decided once, in the group: its commit did not fail")
        #expect(commits(requests.values) == 1, "the requests were committed together")
        #expect(try await document(server, "ledger/stray") == nil)
        #expect(try await balance(server, "c") == 5)
    }

    @Test func aGroupStaysWithinTheWriteLimitOfOneCommit() async throws {
        let server = server()
        // 100 writes and a status patch each: four fit in one commit (404 mutations), five do not.
        server.core.requests.register("bulk", scope: ["notes"]) { context in
            .apply((0..<100).map { .set("notes/\(context.request.id)-\($0)", ["n": .integer(Int64($0))]) }, result: .null)
        }
        let c = try await server.connect()
        let ids = (0..<6).map { "b\($0)" }
        await server.write(c, batch: 1, ids.map { RequestTests.request($0, type: "bulk", params: [:]) })
        let requests = try await settled(server, ids)
        for id in ids { #expect(requests[id]?.data["status"] == "applied", "\(id): \(errorMessage(requests[id]))") }
        #expect(try await document(server, "notes/b5-99")?.data["n"] == 99)
        #expect(commits(requests.values) == 2)
        #expect(commits(ids.prefix(4).map { requests[$0]! }) == 1)
    }

    @Test func pendingRequestsFoundAtStartAreProcessedAsAGroupAndCounted() async throws {
        let server = TestServer()   // no handlers: nothing processes the requests before the restart
        let tenant = try server.tenantStore("acme")
        let processor = CommitProcessor(store: tenant, clock: server.clock.serverClock, logger: .discarding)
        _ = try await processor.process(batch: BatchKey(clientID: "c", batchID: 1),
                                        mutations: [RequestTests.account("a", 500), RequestTests.account("b", 0)], uid: "u1")
        let ids = (0..<5).map { "p\($0)" }
        _ = try await processor.process(batch: BatchKey(clientID: "c", batchID: 2),
                                        mutations: ids.map { transfer($0, "a", "b", 100) }, uid: "u1")
        let restarted = DocServerCore(store: server.store, logger: .discarding)
        restarted.requests.registerExamples()
        #expect(await restarted.recoverPendingRequests() == 5)
        #expect(await restarted.recoverPendingRequests() == 0)
        let connection = try await restarted.handshake(tenant: "acme", uid: "u1", clientID: "check")
        let documents = try await restarted.documents([T.key("accounts/a"), T.key("accounts/b")] + ids.map { T.key("requests/\($0)") },
                                                      on: connection)
        #expect(documents[0].data["balance"] == 0)
        #expect(documents[1].data["balance"] == 500)
        for request in documents.dropFirst(2) { #expect(request.data["status"] == "applied", "\(request.key)") }
        #expect(commits(documents.dropFirst(2)) == 1, "the pending requests were not committed together")
    }
}

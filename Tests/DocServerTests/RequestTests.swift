import DocModel
import DocTestSupport
import DocProtocol
import Foundation
import Testing
@testable import DocServer

/// Request documents in the server core: base checks, handlers, all-or-nothing commits,
/// exactly-once processing (also across a restart).
@Suite("Request documents")
struct RequestTests {
    static func account(_ id: String, _ balance: Int64) -> Mutation { T.set("accounts/\(id)", ["balance": .integer(balance)]) }

    static func request(_ id: String, type: String, params: [String: Value], base: [String: Int64] = [:]) -> Mutation {
        T.set("requests/\(id)", [
            "type": .string(type), "params": .map(params), "status": "pending", "createdBy": "u1",
            "base": .map(base.mapValues { .integer($0) }),
        ])
    }

    static func transfer(_ from: String, _ to: String, _ amount: Int64) -> [String: Value] {
        ["from": .string("accounts/\(from)"), "to": .string("accounts/\(to)"), "amount": .integer(amount)]
    }

    static func server() -> TestServer {
        let server = TestServer()
        server.core.requests.registerExamples()
        return server
    }

    static func document(_ server: TestServer, _ path: String) async throws -> Document? {
        let connection = try await server.connect(client: "reader-\(UUID().uuidString)")
        defer { Task { await server.core.close(connection) } }
        return try await server.core.documents([T.key(path)], on: connection).first
    }

    static func status(_ server: TestServer, _ id: String) async throws -> String? {
        guard case .string(let status)? = try await Self.document(server, "requests/\(id)")?.data["status"] else { return nil }
        return status
    }

    /// The request once it is no longer pending (records an issue if it stays pending).
    static func settled(_ server: TestServer, _ id: String) async throws -> Document {
        let done = await eventually { (try? await Self.status(server, id)).map { $0 != "pending" } ?? false }
        #expect(done, "request \(id) was never processed")
        return try await Self.document(server, "requests/\(id)")!
    }

    static func balance(_ server: TestServer, _ id: String) async throws -> Int64? {
        guard case .integer(let balance)? = try await Self.document(server, "accounts/\(id)")?.data["balance"] else { return nil }
        return balance
    }

    @Test func aTransferMovesMoneyAndWritesALedgerEntry() async throws {
        let server = Self.server()
        let c = try await server.connect()
        await server.write(c, batch: 1, [Self.account("a", 1_000), Self.account("b", 50)])
        await server.write(c, batch: 2, [Self.request("r1", type: "transfer", params: Self.transfer("a", "b", 300))])
        let request = try await Self.settled(server, "r1")
        #expect(request.data["status"] == "applied")
        #expect(request.data["result"] == .map(["from": 700, "to": 350]))
        guard case .timestamp? = request.data["processedAt"] else { Issue.record("no processedAt"); return }
        #expect(try await Self.balance(server, "a") == 700)
        #expect(try await Self.balance(server, "b") == 350)
        let ledger = try await Self.document(server, "ledger/r1")
        #expect(ledger?.data["amount"] == 300)
        #expect(ledger?.data["requestId"] == "r1")
    }

    @Test func rejectionsChangeNothingButTheRequest() async throws {
        let server = Self.server()
        let c = try await server.connect()
        await server.write(c, batch: 1, [Self.account("a", 100), Self.account("b", 0)])
        let cases: [(String, Mutation, DocError.Code, String)] = [
            ("poor", Self.request("poor", type: "transfer", params: Self.transfer("a", "b", 500)), .failedPrecondition, "insufficient"),
            ("same", Self.request("same", type: "transfer", params: Self.transfer("a", "a", 5)), .invalidArgument, "two different"),
            ("neg", Self.request("neg", type: "transfer", params: Self.transfer("a", "b", -5)), .invalidArgument, "positive"),
            ("ghost", Self.request("ghost", type: "transfer", params: Self.transfer("a", "zz", 5)), .notFound, "accounts/zz"),
            ("bad", Self.request("bad", type: "transfer", params: ["from": 3]), .invalidArgument, "params.from"),
            ("what", Self.request("what", type: "teleport", params: [:]), .invalidArgument, "unknown request type"),
        ]
        for (i, (id, mutation, code, fragment)) in cases.enumerated() {
            await server.write(c, batch: 10 + i, [mutation])
            let request = try await Self.settled(server, id)
            #expect(request.data["status"] == "rejected", "\(id)")
            guard case .map(let error)? = request.data["error"], case .string(let message)? = error["message"] else {
                Issue.record("\(id): no error recorded"); continue
            }
            #expect(error["code"] == .string(code.name), "\(id): \(message)")
            #expect(message.contains(fragment), "\(id): \(message)")
        }
        #expect(try await Self.balance(server, "a") == 100)
        #expect(try await Self.balance(server, "b") == 0)
        #expect(try await Self.document(server, "ledger/poor") == nil)
    }

    @Test func aStaleBaseIsRejectedAndRacingRequestsApplyOnce() async throws {
        let server = Self.server()
        let c = try await server.connect()
        guard case .writeResult(let seeded) = await server.write(c, batch: 1, [Self.account("a", 1_000), Self.account("b", 0)]) else {
            Issue.record("seed failed"); return
        }
        let seen = seeded.commitVersion.microseconds
        // Two clients saw the same version of `a` and both ask to move 600.
        await server.write(c, batch: 2, [
            Self.request("first", type: "transfer", params: Self.transfer("a", "b", 600), base: ["accounts/a": seen]),
            Self.request("second", type: "transfer", params: Self.transfer("a", "b", 600), base: ["accounts/a": seen]),
        ])
        let first = try await Self.settled(server, "first")
        let second = try await Self.settled(server, "second")
        let statuses = [first.data["status"], second.data["status"]].compactMap { $0 }
        #expect(statuses.filter { $0 == "applied" }.count == 1)
        #expect(statuses.filter { $0 == "rejected" }.count == 1)
        let rejected = first.data["status"] == "rejected" ? first : second
        guard case .map(let error)? = rejected.data["error"], case .string(let message)? = error["message"] else {
            Issue.record("no error"); return
        }
        #expect(error["code"] == "failedPrecondition")
        #expect(message.contains("stale"))
        #expect(message.contains("accounts/a"))
        #expect(try await Self.balance(server, "a") == 400)
        #expect(try await Self.balance(server, "b") == 600)
    }

    @Test func setTaxRateRecomputesTheInvoice() async throws {
        let server = Self.server()
        let c = try await server.connect()
        let lines: Value = .array([.map(["net": 1_000]), .map(["net": 2_345])])
        await server.write(c, batch: 1, [T.set("invoices/i1", ["lines": lines, "taxRateBasisPoints": 0, "tax": 0, "total": 3_345])])
        await server.write(c, batch: 2, [Self.request("tax1", type: "setTaxRate",
                                                        params: ["invoice": "invoices/i1", "taxRateBasisPoints": 1_900])])
        let request = try await Self.settled(server, "tax1")
        #expect(request.data["status"] == "applied")
        let invoice = try await Self.document(server, "invoices/i1")
        // 1000 × 19 % = 190; 2345 × 19 % = 445.55 → 446.
        #expect(invoice?.data["tax"] == 636)
        #expect(invoice?.data["total"] == 3_981)
        #expect(invoice?.data["taxRateBasisPoints"] == 1_900)
        guard case .array(let newLines)? = invoice?.data["lines"], case .map(let second) = newLines[1] else {
            Issue.record("no lines"); return
        }
        #expect(second["tax"] == 446)
        #expect(second["total"] == 2_791)
        #expect(SetTaxRateHandler.roundedTax(net: -2_345, basisPoints: 1_900) == -446)
    }

    @Test(arguments: [
        ([Int64.max / 1_000], 100_000),               // net × rate overflows
        ([Int64.max - 10], 1_000),                    // a line's total overflows
        ([Int64.max / 2, Int64.max / 2, 10_000], 0),  // the net sum overflows
        ([Int64.min / 2, Int64.min / 2, -10], 0),     // so does a negative one
        ([Int64.max / 2, Int64.max / 2], 1),          // the invoice's total overflows
    ] as [([Int64], Int64)])
    func setTaxRateRejectsAnInvoiceWhoseFiguresOverflow(nets: [Int64], rate: Int64) async throws {
        let server = Self.server()
        let c = try await server.connect()
        let lines: Value = .array(nets.map { .map(["net": .integer($0)]) })
        await server.write(c, batch: 1, [T.set("invoices/i1", ["lines": lines, "taxRateBasisPoints": 0, "tax": 0, "total": 0])])
        await server.write(c, batch: 2, [Self.request("tax1", type: "setTaxRate",
                                                        params: ["invoice": "invoices/i1", "taxRateBasisPoints": .integer(rate)])])
        let request = try await Self.settled(server, "tax1")
        #expect(request.data["status"] == "rejected")
        guard case .map(let error)? = request.data["error"] else { Issue.record("no error"); return }
        #expect(error["code"] == "outOfRange")
        let invoice = try await Self.document(server, "invoices/i1")
        #expect(invoice?.data["taxRateBasisPoints"] == 0, "nothing of the request was applied")
        #expect(invoice?.data["lines"] == lines)
        #expect(SetTaxRateHandler.roundedTax(net: Int64.max, basisPoints: 2) == nil)
    }

    /// A request naming more base documents than its commit could verify is rejected as
    /// malformed (it stayed pending for good, read again at every sweep).
    @Test func aRequestWithTooLargeABaseIsRejected() async throws {
        let server = Self.server()
        let c = try await server.connect()
        await server.write(c, batch: 1, [Self.account("a", 1_000), Self.account("b", 0)])
        var base: [String: Int64] = [:]
        for i in 0...DocumentLimits.maxRequestBaseEntries { base["accounts/x\(i)"] = 1 }
        await server.write(c, batch: 2, [Self.request("big", type: "transfer", params: Self.transfer("a", "b", 1), base: base)])
        let request = try await Self.settled(server, "big")
        #expect(request.data["status"] == "rejected")
        guard case .map(let error)? = request.data["error"], case .string(let message)? = error["message"] else {
            Issue.record("no error"); return
        }
        #expect(error["code"] == "invalidArgument" && message.contains("at most 400"), "\(message)")
        #expect(try await Self.balance(server, "a") == 1_000)
    }

    /// A handler's reads are verified at commit, those of missing documents too (a document
    /// created meanwhile must make the decision stale).
    @Test func readsOfMissingDocumentsAreRecorded() async throws {
        let present = Document(key: T.key("accounts/a"), data: T.data(["balance": 1]), version: SnapshotVersion(microseconds: 7),
                               createTime: SnapshotVersion(microseconds: 7))
        let reader = RequestReader { key throws(DocError) in key.description == "accounts/a" ? present : nil }
        _ = try await reader.read(T.key("accounts/a"))
        _ = try await reader.read(T.key("accounts/missing"))
        let recorded = reader.recorded
        #expect(recorded.count == 2)
        #expect(recorded[T.key("accounts/a")] == .some(SnapshotVersion(microseconds: 7)))
        #expect(recorded[T.key("accounts/missing")] == .some(nil), "a missing document's read is kept, as missing")
    }

    @Test func aHandlerCannotWriteOutsideItsScope() async throws {
        let server = Self.server()
        server.core.requests.register("sneaky", scope: ["notes"]) { _ in
            .apply([.set("accounts/a", ["balance": 1_000_000])], result: .null)
        }
        let c = try await server.connect()
        await server.write(c, batch: 1, [Self.account("a", 1)])
        await server.write(c, batch: 2, [Self.request("s1", type: "sneaky", params: [:])])
        let request = try await Self.settled(server, "s1")
        #expect(request.data["status"] == "rejected")
        guard case .map(let error)? = request.data["error"] else { Issue.record("no error"); return }
        #expect(error["code"] == "permissionDenied")
        #expect(try await Self.balance(server, "a") == 1)
    }

    /// Accounts `a` (500) and `b` (0) and a pending transfer request `id` of 200 from `a` to
    /// `b`, committed straight to `server`'s store, as by an instance that died before
    /// processing it; returns the processor that wrote them.
    @discardableResult
    static func leavePendingTransfer(_ server: TestServer, id: String) async throws -> CommitProcessor {
        let processor = CommitProcessor(store: try server.tenantStore("acme"), clock: server.clock.serverClock, logger: .discarding)
        _ = try await processor.process(batch: BatchKey(clientID: "c", batchID: 1),
                                        mutations: [Self.account("a", 500), Self.account("b", 0)], uid: "u1")
        _ = try await processor.process(batch: BatchKey(clientID: "c", batchID: 2),
                                        mutations: [Self.request(id, type: "transfer", params: Self.transfer("a", "b", 200))], uid: "u1")
        return processor
    }

    @Test func pendingRequestsLeftByACrashAreProcessedOnceAtStart() async throws {
        let server = TestServer()   // no handlers registered and no hook: a request stays pending
        try await Self.leavePendingTransfer(server, id: "crash1")
        // A new server process on the same store: its start-up recovery finds the request.
        let restarted = DocServerCore(store: server.store, logger: .discarding)
        restarted.requests.registerExamples()
        #expect(await restarted.recoverPendingRequests() == 1)
        #expect(await restarted.recoverPendingRequests() == 0)   // nothing twice
        let c = try await restarted.handshake(tenant: "acme", uid: "u1", clientID: "check")
        let docs = try await restarted.documents([T.key("accounts/a"), T.key("accounts/b"), T.key("requests/crash1")], on: c)
        #expect(docs[0].data["balance"] == 300)
        #expect(docs[1].data["balance"] == 200)
        #expect(docs[2].data["status"] == "applied")
    }

    /// Two processors (two instances) that decide a request alike commit the same batch; the
    /// second is answered from the first's stored outcome. Only the first counts the request
    /// as processed (its sweep's count, `doccache_requests_total`).
    @Test func aRequestFinalizedByAnotherProcessorIsNotCountedAgain() async throws {
        let server = TestServer()   // no handlers yet: the requests stay pending
        let processor = try await Self.leavePendingTransfer(server, id: "twice")
        server.core.requests.registerExamples()
        let real = server.core.requestAccess(try await server.core.hub(for: TenantID("acme"), sweepingIfNew: false))
        // The other processor's commit of the same decision lands first.
        let raced = RequestStoreAccess(read: real.read, commit: { batch, mutations, requestID in
            _ = await real.commit(batch, mutations, requestID)
            return await real.commit(batch, mutations, requestID)
        }, pending: real.pending)
        #expect(await server.core.requestProcessor.processOne(T.key("requests/twice"), tenant: "acme", access: raced, origin: nil) == false)
        #expect(try await Self.status(server, "twice") == "applied")
        #expect(try await Self.balance(server, "a") == 300)
        let applied = await server.core.metricsText().split(separator: "\n").filter {
            $0.hasPrefix("doccache_requests_total{") && $0.contains("outcome=\"applied\"")
        }
        #expect(applied.isEmpty, "\(applied)")
        // Processed without the race, a request is counted.
        _ = try await processor.process(batch: BatchKey(clientID: "c", batchID: 3),
                                        mutations: [Self.request("once", type: "transfer", params: Self.transfer("a", "b", 100))], uid: "u1")
        #expect(await server.core.requestProcessor.processOne(T.key("requests/once"), tenant: "acme", access: real, origin: nil))
        #expect(await server.core.metricsText().split(separator: "\n").contains {
            $0.hasPrefix("doccache_requests_total{") && $0.contains("outcome=\"applied\"") && $0.hasSuffix(" 1")
        })
    }

    @Test func requestDocumentsAreReadStrictly() throws {
        let good = Document(key: T.key("requests/x"), data: ObjectValue([
            "type": "transfer", "params": .map(["a": 1]), "base": .map(["accounts/a": 5]), "status": "pending", "createdBy": "u",
        ]), version: SnapshotVersion(microseconds: 9))
        let parsed = try RequestDocument(good)
        #expect(parsed.id == "x")
        #expect(parsed.base == [T.key("accounts/a"): SnapshotVersion(microseconds: 5)])
        for (field, value) in [("type", Value.integer(1)), ("params", "nope"), ("base", .map(["odd": 1])), ("base", .map(["a/b": "v"]))] {
            var bad = good
            bad.data.fields[field] = value
            #expect(throws: DocError.self) { try RequestDocument(bad) }
        }
        #expect(RequestDocument.isRequest(T.key("requests/x")))
        #expect(!RequestDocument.isRequest(T.key("users/u/requests/x")))
    }
}

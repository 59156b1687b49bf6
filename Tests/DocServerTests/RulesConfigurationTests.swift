import DocModel
import DocProtocol
import DocRules
import DocTestSupport
import Foundation
import Testing
@testable import DocServer

/// The server's rule set: the default rules against the core, handshakes carrying claims,
/// reloading.
@Suite struct RulesConfigurationTests {
    static func defaultRules() throws -> RuleSet {
        try RuleSet.load(path: packageRoot + "/Rules/firestore.rules")
    }

    static func request(_ status: String, by uid: String) -> [String: Value] {
        ["type": "transfer", "status": .string(status), "createdBy": .string(uid), "params": ["amount": 5],
         "base": [:]]
    }

    @Test func theDefaultRulesGuardMoneyAndRequests() async throws {
        let server = TestServer(configuration: ServerConfiguration(rules: try Self.defaultRules()))
        let admin = try await server.connect(uid: "root", claims: ["admin": true])
        let member = try await server.connect(uid: "ann", claims: ["role": "sales"])
        // Money documents: written directly only with the admin claim; readable by members.
        #expect(await server.write(admin, batch: 1, [T.set("accounts/a1", ["balance": 100])]).writeResult != nil)
        let denied = try #require(await server.write(member, batch: 1, [.update(T.key("accounts/a1"), fields: [T.field("balance"): 1_000])]).rejection)
        #expect(denied.code == .permissionDenied && denied.location == "write 0: accounts/a1")
        // A production server tells the client what Firestore does, not its rules.
        #expect(denied.message == "Missing or insufficient permissions. (update on accounts/a1)")
        #expect(await server.write(member, batch: 2, [T.set("ledger/l1", ["amount": 5])]).rejection?.code == .permissionDenied)
        #expect(try await server.core.documents([T.key("accounts/a1")], on: member).first?.data[T.field("balance")] == 100)
        // Request documents: created pending by their author …
        #expect(await server.write(member, batch: 3, [T.set("requests/q1", Self.request("pending", by: "ann"))]).writeResult != nil)
        // … never with a status the server sets, nor for someone else, nor changed afterwards.
        #expect(await server.write(member, batch: 4, [T.set("requests/q2", Self.request("applied", by: "ann"))]).rejection?.code == .permissionDenied)
        #expect(await server.write(member, batch: 5, [T.set("requests/q3", Self.request("pending", by: "bob"))]).rejection?.code == .permissionDenied)
        let apply = Mutation.update(T.key("requests/q1"), fields: [T.field("status"): "applied"])
        #expect(await server.write(member, batch: 6, [apply]).rejection?.code == .permissionDenied)
        #expect(await server.write(member, batch: 7, [.tombstone(T.key("requests/q1"))]).rejection?.code == .permissionDenied)
        // Neither change reached it (the server's own processing may have answered it meanwhile:
        // this server has no handler for "transfer", so it may be "rejected" by now).
        let q1 = try #require(try await server.stored("requests/q1"))
        #expect(q1.data[T.field("status")] != "applied" && !q1.isTombstone, "\(q1)")
        // Ordinary documents: members write them; listen targets are fine.
        #expect(await server.write(member, batch: 8, [T.set("visits/v1", ["customer": "c1"])]).writeResult != nil)
        let added = await server.core.watch(.init(targetID: 2, target: T.collection("visits", limit: 10)), on: member)
        #expect(added.first?.targetChange?.state == .added)
    }

    /// With `explainDenials` (development: `docctl serve --explain-denials`, `make serve`) the
    /// client gets the rules' detail, the message docs/rules.md shows.
    @Test func explainDenialsTellsTheClientWhichRulesFailed() async throws {
        var configuration = ServerConfiguration(rules: try Self.defaultRules())
        configuration.explainDenials = true
        let server = TestServer(configuration: configuration)
        let admin = try await server.connect(uid: "root", claims: ["admin": true])
        let member = try await server.connect(uid: "ann", claims: ["role": "sales"])
        #expect(await server.write(admin, batch: 1, [T.set("accounts/a1", ["balance": 100])]).writeResult != nil)
        let denied = try #require(await server.write(member, batch: 1, [.update(T.key("accounts/a1"), fields: [T.field("balance"): 1_000])]).rejection)
        #expect(denied.code == .permissionDenied && denied.location == "write 0: accounts/a1")
        #expect(denied.message == "permission denied: update on /databases/(default)/documents/accounts/a1: "
            + "allow write at line 38 (match /databases/{database}/documents/{collection}/{rest=**}): false; "
            + "allow write at line 51 (match /databases/{database}/documents/accounts/{rest=**}): false")
    }

    @Test func handshakesCarryTheTokenClaims() async throws {
        let server = TestServer(configuration: ServerConfiguration(rules: try Self.defaultRules()))
        let claims = try AuthClaims(tenant: "acme", uid: "root", expiresAt: Date(timeIntervalSinceNow: 3_600),
                                    custom: ["admin": true])
        let viaClaims = try await server.core.handshake(.init(token: "verified", clientID: "c-claims"), claims: claims)
        #expect(viaClaims.uid == "root" && viaClaims.tenant.rawValue == "acme")
        #expect(viaClaims.authToken["admin"] == true && viaClaims.authToken["sub"] == "root")
        _ = viaClaims.outbound.drain()
        #expect(await server.write(viaClaims, batch: 1, [T.set("invoices/i1", ["total": 10])]).writeResult != nil)
        // The old handshake has no custom claims: not an admin.
        let plain = try await server.core.handshake(tenant: "acme", uid: "root", clientID: "c-plain")
        #expect(plain.authToken == ["tenant": "acme", "uid": "root", "sub": "root"])
        _ = plain.outbound.drain()
        #expect(await server.write(plain, batch: 1, [T.set("invoices/i2", ["total": 10])]).rejection?.code == .permissionDenied)
        // Request/response commits take the verified context too.
        let auth = AuthContext(tenant: "acme", uid: "root", claims: ["admin": true], expiresAt: try Timestamp(seconds: 4_000_000_000))
        #expect(await server.core.commit(auth: auth, clientID: "tool", batchID: 1, mutations: [T.set("ledger/l1", [:])]).writeResult != nil)
        #expect(await server.core.commit(tenant: "acme", uid: "root", clientID: "tool", batchID: 2,
                                         mutations: [T.set("ledger/l2", [:])]).rejection?.code == .permissionDenied)
    }

    @Test func reloadKeepsTheLastGoodRules() async throws {
        let directory = TempDirectory()
        defer { directory.remove() }
        let file = directory.path + "/firestore.rules"
        let openRules = """
            rules_version = '2';
            service cloud.firestore {
              match /databases/{database}/documents {
                match /{doc=**} { allow read, write: if request.auth != null; }
              }
            }
            """
        try openRules.write(toFile: file, atomically: true, encoding: .utf8)
        let server = TestServer()
        let loaded = try await server.core.reloadRules(from: file)
        #expect(loaded.version == .v2 && server.core.rules?.file == file)
        let ann = try await server.connect(uid: "ann", claims: [:])
        #expect(await server.write(ann, batch: 1, [T.set("accounts/a1", ["balance": 1])]).writeResult != nil)

        // A file that does not parse: the error says where and what was expected; the rules
        // in force stay.
        try openRules.replacingOccurrences(of: "allow read, write:", with: "allow read, write").write(toFile: file, atomically: true, encoding: .utf8)
        let error = await #expect(throws: RulesError.self) { try await server.core.reloadRules(from: file) }
        #expect(error?.file == file && error?.line == 4 && error?.code == .syntax)
        #expect(error?.message.contains("expected") == true && error?.expected.isEmpty == false)
        #expect(server.core.rules?.file == file)
        #expect(await server.write(ann, batch: 2, [T.set("accounts/a2", ["balance": 1])]).writeResult != nil)
        // A missing file: an io error; the rules stay.
        let missing = await #expect(throws: RulesError.self) { try await server.core.reloadRules(from: directory.path + "/none.rules") }
        #expect(missing?.code == .io)
        #expect(await server.write(ann, batch: 3, [T.set("accounts/a3", ["balance": 1])]).writeResult != nil)

        // Good rules take over, also for the targets already listening.
        let watcher = try await server.connect(uid: "ann", claims: [:], client: "watcher")
        _ = await server.core.watch(.init(targetID: 2, target: T.collection("accounts", limit: 10)), on: watcher)
        _ = await server.core.watch(.init(targetID: 4, target: T.collection("visits", limit: 10)), on: watcher)
        _ = watcher.outbound.drain()
        try String(contentsOfFile: packageRoot + "/Rules/firestore.rules", encoding: .utf8).write(toFile: file, atomically: true, encoding: .utf8)
        try await server.core.reloadRules(from: file)
        #expect(await server.write(ann, batch: 4, [T.set("accounts/a4", ["balance": 1])]).rejection?.code == .permissionDenied)
        #expect(watcher.outbound.drain().isEmpty, "reads of accounts and visits stay allowed")
        // Rules without reads remove every target, with the reason.
        #expect(await server.core.replaceRules(with: try RuleSet.parse(source: "service cloud.firestore { match /databases/{d}/documents { } }")) == 2)
        let removed = watcher.outbound.drain().compactMap(\.targetChange)
        #expect(removed.map(\.targetIDs) == [[2], [4]])
        #expect(removed.allSatisfy { $0.state == .removed && $0.cause?.code == .permissionDenied })
        // No rules: tenant isolation only.
        await server.core.replaceRules(with: nil)
        #expect(server.core.rules == nil)
        #expect(await server.write(ann, batch: 5, [T.set("accounts/a5", ["balance": 1])]).writeResult != nil)
    }
}

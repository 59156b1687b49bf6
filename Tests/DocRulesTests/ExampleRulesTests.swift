import DocModel
import DocTestSupport
import DocTestTraits
import Testing
@testable import DocRules

/// The worked examples in `Rules/examples/` load and say what their comments promise.
@Suite("Example rules (Rules/examples)", .cpuBound)
struct ExampleRulesTests {
    static let now = try! Timestamp(seconds: 1_700_000_000)

    static func load(_ name: String) throws -> RuleSet {
        let rules = try RuleSet.load(path: packageRoot + "/Rules/examples/" + name)
        #expect(rules.warnings.isEmpty, "\(rules.warnings)")
        return rules
    }

    static func doc(_ path: String, _ fields: [String: Value]) -> Document {
        Document(key: try! DocumentKey(path), data: ObjectValue(fields), version: SnapshotVersion(microseconds: 5))
    }

    /// A small world of stored documents for the lookups.
    struct World {
        var documents: [String: [String: Value]]
        var lookup: InMemoryDocumentLookup {
            var docs: [DocumentKey: Document] = [:]
            for (path, fields) in documents { docs[try! DocumentKey(path)] = ExampleRulesTests.doc(path, fields) }
            return InMemoryDocumentLookup(documents: docs)
        }

        func allowed(_ rules: RuleSet, _ method: RulesMethod, _ path: String, _ auth: RulesAuth?,
                     after: [String: Value]? = nil) -> Bool {
            let stored = documents[path].map { ExampleRulesTests.doc(path, $0) }
            var merged = documents[path] ?? [:]
            if let after { for (k, v) in after { merged[k] = v } }
            let request = RulesRequest(method: method, path: try! ResourcePath(path), auth: auth, resource: stored,
                                       requestResource: after == nil ? nil : ExampleRulesTests.doc(path, merged), time: now)
            return rules.evaluate(request, lookup: lookup).isAllowed
        }

        func listAllowed(_ rules: RuleSet, _ collection: String, _ auth: RulesAuth?, _ filters: [Filter], limit: Int64? = 50) -> Bool {
            let request = RulesRequest(method: .list, path: try! ResourcePath(collection), auth: auth, time: now,
                                       query: RulesQuery(limit: limit, filters: filters))
            return rules.evaluate(request, lookup: lookup).isAllowed
        }
    }

    static func equal(_ field: String, _ value: Value) -> Filter { .where(try! FieldPath(field), .equal, value) }

    // MARK: Field sales

    static let sales = World(documents: [
        "users/ann": ["name": "Ann", "role": "rep", "team": "north"],
        "users/bob": ["name": "Bob", "role": "rep", "team": "north"],
        "users/mia": ["name": "Mia", "role": "manager", "team": "north"],
        "users/sam": ["name": "Sam", "role": "manager", "team": "south"],
        "customers/c1": ["name": "Acme", "owner": "ann", "team": "north"],
        "customers/c2": ["name": "Globex", "owner": "bob", "team": "north"],
        "visits/v1": ["rep": "ann", "team": "north", "customer": "c1", "at": .timestamp(now), "notes": "ok"],
    ])

    @Test func repsSeeAndEditTheirOwnVisitsAndCustomers() throws {
        let rules = try Self.load("field-sales.rules")
        let w = Self.sales
        let ann = RulesAuth(uid: "ann"), bob = RulesAuth(uid: "bob")
        #expect(w.allowed(rules, .get, "visits/v1", ann))
        #expect(!w.allowed(rules, .get, "visits/v1", bob))
        #expect(w.allowed(rules, .update, "visits/v1", ann, after: ["notes": "follow up"]))
        #expect(!w.allowed(rules, .update, "visits/v1", ann, after: ["rep": "bob"]))
        #expect(!w.allowed(rules, .update, "visits/v1", bob, after: ["notes": "mine"]))
        #expect(w.allowed(rules, .delete, "visits/v1", ann))
        #expect(w.listAllowed(rules, "visits", ann, [Self.equal("rep", "ann")]))
        #expect(!w.listAllowed(rules, "visits", ann, []))
        #expect(!w.listAllowed(rules, "visits", ann, [Self.equal("rep", "ann")], limit: nil))
        #expect(w.allowed(rules, .get, "customers/c1", ann) && !w.allowed(rules, .get, "customers/c2", ann))
        #expect(!w.allowed(rules, .delete, "customers/c1", ann))
    }

    @Test func repsRecordVisitsOnlyForTheirOwnCustomers() throws {
        let rules = try Self.load("field-sales.rules")
        let w = Self.sales
        let ann = RulesAuth(uid: "ann")
        let visit: [String: Value] = ["rep": "ann", "team": "north", "customer": "c1", "at": .timestamp(Self.now)]
        #expect(w.allowed(rules, .create, "visits/v2", ann, after: visit))
        var foreign = visit; foreign["customer"] = "c2"
        #expect(!w.allowed(rules, .create, "visits/v2", ann, after: foreign))
        var otherTeam = visit; otherTeam["team"] = "south"
        #expect(!w.allowed(rules, .create, "visits/v2", ann, after: otherTeam))
        var forBob = visit; forBob["rep"] = "bob"
        #expect(!w.allowed(rules, .create, "visits/v2", ann, after: forBob))
        #expect(w.allowed(rules, .create, "customers/c9", ann, after: ["name": "Initech", "owner": "ann", "team": "north"]))
    }

    @Test func managersSeeTheirTeamOnly() throws {
        let rules = try Self.load("field-sales.rules")
        let w = Self.sales
        let mia = RulesAuth(uid: "mia"), sam = RulesAuth(uid: "sam")
        #expect(w.allowed(rules, .get, "visits/v1", mia))
        #expect(!w.allowed(rules, .get, "visits/v1", sam))
        #expect(!w.allowed(rules, .update, "visits/v1", mia, after: ["notes": "edited by the manager"]))
        #expect(w.listAllowed(rules, "visits", mia, [Self.equal("team", "north")]))
        #expect(!w.listAllowed(rules, "visits", sam, [Self.equal("team", "north")]))
        #expect(w.listAllowed(rules, "users", mia, [Self.equal("team", "north")]))
        #expect(w.allowed(rules, .get, "users/ann", mia) && !w.allowed(rules, .get, "users/ann", sam))
        #expect(!w.allowed(rules, .update, "users/ann", mia, after: ["role": "manager"]))
    }

    // MARK: Finance

    static let finance = World(documents: [
        "accounts/a1": ["name": "Ann's", "balance": 100, "owner": "ann"],
        "accounts/a2": ["name": "Bob's", "balance": 50, "owner": "bob"],
        "invoices/i1": ["total": 119, "taxRate": 0.19],
        "requests/r1": ["type": "transfer", "status": "pending", "createdBy": "ann"],
    ])

    static func transfer(from: String = "a1", to: String = "a2", amount: Value = 10, by uid: String = "ann") -> [String: Value] {
        ["type": "transfer", "params": ["from": .string(from), "to": .string(to), "amount": amount],
         "base": ["accounts/a1": 5], "status": "pending", "createdBy": .string(uid), "createdAt": .timestamp(now)]
    }

    @Test func moneyDocumentsChangeOnlyThroughRequests() throws {
        let rules = try Self.load("finance.rules")
        let w = Self.finance
        let ann = RulesAuth(uid: "ann"), fin = RulesAuth(uid: "fay", token: ["role": "finance"])
        #expect(w.allowed(rules, .get, "accounts/a1", ann) && !w.allowed(rules, .get, "accounts/a2", ann))
        #expect(!w.allowed(rules, .update, "accounts/a1", ann, after: ["balance": 1_000]))
        #expect(!w.allowed(rules, .update, "accounts/a1", fin, after: ["balance": 1_000]))
        #expect(w.allowed(rules, .get, "invoices/i1", fin) && !w.allowed(rules, .get, "invoices/i1", ann))
        #expect(w.listAllowed(rules, "accounts", ann, [Self.equal("owner", "ann")]))
        #expect(!w.listAllowed(rules, "accounts", ann, []))
        #expect(w.listAllowed(rules, "ledger", fin, []))
    }

    @Test func requestsAreValidatedByType() throws {
        let rules = try Self.load("finance.rules")
        let w = Self.finance
        let ann = RulesAuth(uid: "ann"), fin = RulesAuth(uid: "fay", token: ["role": "finance"])
        #expect(w.allowed(rules, .create, "requests/r2", ann, after: Self.transfer()))
        #expect(!w.allowed(rules, .create, "requests/r2", ann, after: Self.transfer(amount: -5)))
        #expect(!w.allowed(rules, .create, "requests/r2", ann, after: Self.transfer(from: "a2", to: "a1")))
        #expect(!w.allowed(rules, .create, "requests/r2", ann, after: Self.transfer(to: "a9")))
        #expect(!w.allowed(rules, .create, "requests/r2", ann, after: Self.transfer(by: "bob")))
        var applied = Self.transfer(); applied["status"] = "applied"
        #expect(!w.allowed(rules, .create, "requests/r2", ann, after: applied))
        var withResult = Self.transfer(); withResult["result"] = ["ok": true]
        #expect(!w.allowed(rules, .create, "requests/r2", ann, after: withResult))
        let rate: [String: Value] = ["type": "taxRateChange", "params": ["invoice": "i1", "rate": 0.07], "base": [:],
                                     "status": "pending", "createdBy": "fay", "createdAt": .timestamp(Self.now)]
        #expect(w.allowed(rules, .create, "requests/r3", fin, after: rate))
        var annRate = rate; annRate["createdBy"] = "ann"
        #expect(!w.allowed(rules, .create, "requests/r3", ann, after: annRate))
        #expect(!w.allowed(rules, .update, "requests/r1", ann, after: ["status": "applied"]))
        #expect(!w.allowed(rules, .delete, "requests/r1", ann))
        #expect(w.allowed(rules, .get, "requests/r1", ann) && !w.allowed(rules, .get, "requests/r1", RulesAuth(uid: "bob")))
        #expect(w.listAllowed(rules, "requests", ann, [Self.equal("createdBy", "ann")]))
        #expect(!w.listAllowed(rules, "requests", ann, [Self.equal("createdBy", "bob")]))
    }
}

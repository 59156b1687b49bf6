import DocModel
import Foundation
import Testing
@testable import DocRules
import DocTestTraits

/// `Rules/firestore.rules`, the backend's default rule set, says what the product promises.
@Suite("Default rules (Rules/firestore.rules)", .cpuBound)
struct DefaultRulesTests {
    /// The parsed file, or why it could not be loaded (reported by every test).
    static let ruleSet: Result<RuleSet, any Error> = Result {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let path = root.appendingPathComponent("Rules/firestore.rules").path
        let source = try String(contentsOfFile: path, encoding: .utf8)
        return try RuleSet.parse(source: source, file: "Rules/firestore.rules")
    }

    static let now = try! Timestamp(seconds: 1_700_000_000)
    static let member = RulesAuth(uid: "ann")
    static let admin = RulesAuth(uid: "root", token: ["admin": true])

    static func doc(_ path: String, _ fields: [String: Value]) -> Document {
        Document(key: try! DocumentKey(path), data: ObjectValue(fields), version: SnapshotVersion(microseconds: 5))
    }

    static func allowed(
        _ method: RulesMethod, _ path: String, _ auth: RulesAuth?, existing: [String: Value]? = nil,
        after: [String: Value]? = nil
    ) -> Bool {
        let request = RulesRequest(
            method: method, path: try! ResourcePath(path), auth: auth,
            resource: existing.map { doc(path, $0) }, requestResource: after.map { doc(path, $0) }, time: now)
        switch ruleSet {
        case .success(let rules):
            return rules.evaluate(request).isAllowed
        case .failure(let error):
            Issue.record("Rules/firestore.rules did not load: \(error)")
            return false
        }
    }

    @Test func membersReadAndWriteOrdinaryDocumentsStrangersNothing() {
        #expect(Self.allowed(.get, "rooms/r1", Self.member, existing: ["n": 1]))
        #expect(Self.allowed(.create, "rooms/r1", Self.member, after: ["n": 1]))
        #expect(Self.allowed(.update, "rooms/r1/messages/m1", Self.member, existing: ["t": "a"], after: ["t": "b"]))
        #expect(Self.allowed(.delete, "rooms/r1", Self.member, existing: ["n": 1]))
        #expect(!Self.allowed(.get, "rooms/r1", nil, existing: ["n": 1]))
        #expect(!Self.allowed(.create, "rooms/r1", nil, after: ["n": 1]))
    }

    /// Members read everything: collection-group queries too (decided by the recursive match
    /// at the root, as Firestore decides them).
    @Test func membersQueryCollectionGroupsStrangersDoNot() {
        func listGroup(_ auth: RulesAuth?) -> Bool {
            let request = RulesRequest(
                method: .list, path: try! ResourcePath("comments"), auth: auth, resource: nil, requestResource: nil,
                time: Self.now, query: RulesQuery(collectionGroup: true))
            switch Self.ruleSet {
            case .success(let rules): return rules.evaluate(request).isAllowed
            case .failure(let error): Issue.record("Rules/firestore.rules did not load: \(error)"); return false
            }
        }
        #expect(listGroup(Self.member))
        #expect(!listGroup(nil))
        #expect(Self.allowed(.get, "accounts/a1", Self.member, existing: ["balance": 5]))
        #expect(!Self.allowed(.update, "accounts/a1", Self.member, existing: ["balance": 5], after: ["balance": 9]))
    }

    @Test func requestsAreCreatedPendingByTheirAuthorAndNeverChangedByClients() {
        let good: [String: Value] = ["type": "transfer", "status": "pending", "createdBy": "ann", "params": ["amount": 5]]
        #expect(Self.allowed(.create, "requests/q1", Self.member, after: good))
        var applied = good; applied["status"] = "applied"
        #expect(!Self.allowed(.create, "requests/q1", Self.member, after: applied))
        var someoneElse = good; someoneElse["createdBy"] = "bob"
        #expect(!Self.allowed(.create, "requests/q1", Self.member, after: someoneElse))
        var withResult = good; withResult["result"] = ["ok": true]
        #expect(!Self.allowed(.create, "requests/q1", Self.member, after: withResult))
        var noType = good; noType["type"] = nil
        #expect(!Self.allowed(.create, "requests/q1", Self.member, after: noType))
        #expect(!Self.allowed(.update, "requests/q1", Self.member, existing: good, after: applied))
        #expect(!Self.allowed(.delete, "requests/q1", Self.member, existing: good))
        #expect(Self.allowed(.get, "requests/q1", Self.member, existing: good))
    }

    @Test(arguments: ["accounts/a1", "invoices/i1", "ledger/l1", "accounts/a1/history/h1"])
    func moneyDocumentsAreReadableButWritableOnlyByAdmins(_ path: String) {
        #expect(Self.allowed(.get, path, Self.member, existing: ["balance": 10]))
        #expect(!Self.allowed(.update, path, Self.member, existing: ["balance": 10], after: ["balance": 1_000]))
        #expect(!Self.allowed(.create, path, Self.member, after: ["balance": 1_000]))
        #expect(Self.allowed(.update, path, Self.admin, existing: ["balance": 10], after: ["balance": 11]))
        #expect(!Self.allowed(.get, path, nil, existing: ["balance": 10]))
    }

    static func storageAllowed(
        _ method: RulesMethod, _ auth: RulesAuth?, size: Int64? = nil, stored: Bool = false,
        path: String = "attachments/" + String(repeating: "0f", count: 32)
    ) -> Bool {
        let object = { (size: Int64) in
            StorageObject(name: path, size: size, contentType: "image/jpeg", sha256: String(repeating: "0f", count: 32),
                          timeCreated: now)
        }
        let request = StorageRulesRequest(method: method, path: path, auth: auth, resource: stored ? object(10) : nil,
                                          requestResource: size.map(object), time: now)
        switch ruleSet {
        case .success(let rules):
            return rules.evaluate(storage: request).isAllowed
        case .failure(let error):
            Issue.record("Rules/firestore.rules did not load: \(error)")
            return false
        }
    }

    @Test func membersReadAttachmentsAndUploadUpTo100MiB() {
        #expect(Self.storageAllowed(.get, Self.member, stored: true))
        #expect(Self.storageAllowed(.get, Self.member))   // a missing attachment: the server answers notFound
        #expect(Self.storageAllowed(.list, Self.member))
        #expect(!Self.storageAllowed(.get, nil, stored: true))
        #expect(Self.storageAllowed(.create, Self.member, size: 1))
        #expect(Self.storageAllowed(.create, Self.member, size: 104_857_600))
        #expect(!Self.storageAllowed(.create, Self.member, size: 104_857_601))
        #expect(!Self.storageAllowed(.create, nil, size: 1))
        #expect(!Self.storageAllowed(.create, Self.member))   // no incoming object: denied
    }

    @Test func attachmentsAreNeverUpdatedOrDeletedThroughTheRules() {
        for auth in [Self.member, Self.admin] {
            #expect(!Self.storageAllowed(.update, auth, size: 5, stored: true))
            #expect(!Self.storageAllowed(.delete, auth, stored: true))
        }
        // Only `attachments/…` objects exist for the rules.
        #expect(!Self.storageAllowed(.get, Self.member, stored: true, path: "other/x"))
        #expect(!Self.storageAllowed(.create, Self.member, size: 1, path: "attachments/a/b"))
    }
}

import DocModel
import DocProtocol
import DocRules
import Testing
@testable import DocServer

/// Rules enforcement on writes (``CommitProcessor`` with an ``AccessContext``).
@Suite struct RulesWriteTests {
    static let ann: [String: Value] = ["owner": "ann", "text": "hi"]

    @Test func createIsDecidedOnTheNewDocument() async throws {
        let server = try rulesServer()
        let ann = try await server.connect(uid: "ann", claims: [:])
        #expect(await server.write(ann, batch: 1, [T.set("notes/n1", Self.ann)]).writeResult != nil)
        let denied = try #require(await server.write(ann, batch: 2, [T.set("notes/n2", ["owner": "bob"])]).rejection)
        #expect(denied.code == .permissionDenied)
        #expect(denied.location == "write 0: notes/n2")
        // The message names the operation, the document and the rule tried, with its match path.
        #expect(denied.message.contains("create on /databases/(default)/documents/notes/n2"))
        #expect(denied.message.contains("allow create at line"))
        #expect(denied.message.contains("match /databases/{database}/documents/notes/{id}"))
        #expect(try await server.stored("notes/n2") == nil)
    }

    @Test func updateSeesTheStoredAndTheMergedDocument() async throws {
        let server = try rulesServer()
        try await server.seed(["notes/ann": Self.ann, "notes/bob": ["owner": "bob", "text": "yo"]])
        let ann = try await server.connect(uid: "ann", claims: [:])
        // A patch: request.resource.data is the merged document (owner kept).
        let patch = Mutation.update(T.key("notes/ann"), fields: [T.field("text"): "edited"])
        #expect(await server.write(ann, batch: 1, [patch]).writeResult != nil)
        #expect(try await server.stored("notes/ann")?.data[T.field("text")] == "edited")
        // Someone else's note: update denied (resource.data.owner is bob).
        let other = Mutation.update(T.key("notes/bob"), fields: [T.field("text"): "mine now"])
        let denied = try #require(await server.write(ann, batch: 2, [other]).rejection)
        #expect(denied.code == .permissionDenied && denied.message.contains("update on /databases/(default)/documents/notes/bob"))
        // Giving one's own note away: the merged document changes the owner, denied.
        let giveAway = Mutation.update(T.key("notes/ann"), fields: [T.field("owner"): "bob"])
        #expect(await server.write(ann, batch: 3, [giveAway]).rejection?.code == .permissionDenied)
        // A server timestamp in request.resource is the commit time (request.time).
        let stamped = Mutation.update(T.key("notes/ann"), fields: [:], transforms: [.serverTimestamp(T.field("at"))])
        #expect(await server.write(ann, batch: 4, [stamped]).writeResult != nil)
    }

    @Test func hardDeleteIsADelete() async throws {
        let server = try rulesServer()
        try await server.seed(["notes/ann": Self.ann, "notes/bob": ["owner": "bob"]])
        let ann = try await server.connect(uid: "ann", claims: [:])
        let denied = try #require(await server.write(ann, batch: 1, [.delete(T.key("notes/bob"))]).rejection)
        #expect(denied.code == .permissionDenied && denied.message.contains("delete on /databases/(default)/documents/notes/bob"))
        #expect(try await server.stored("notes/bob") != nil)
        #expect(await server.write(ann, batch: 2, [.delete(T.key("notes/ann"))]).writeResult != nil)
        #expect(try await server.stored("notes/ann") == nil)
    }

    @Test func tombstoneDeleteIsADelete() async throws {
        let server = try rulesServer()
        try await server.seed(["logs/l1": ["n": 1], "drafts/d1": ["n": 1]])
        let ann = try await server.connect(uid: "ann", claims: [:])
        // Logs allow delete but never update: the soft delete goes through, as a `delete`.
        #expect(await server.write(ann, batch: 1, [.tombstone(T.key("logs/l1"))]).writeResult != nil)
        #expect(try await server.stored("logs/l1")?.isTombstone == true)
        // Drafts allow update but never delete: the soft delete is refused.
        let denied = try #require(await server.write(ann, batch: 2, [.tombstone(T.key("drafts/d1"))]).rejection)
        #expect(denied.code == .permissionDenied && denied.message.contains("delete on /databases/(default)/documents/drafts/d1"))
        #expect(try await server.stored("drafts/d1")?.isTombstone == false)
        // An update of a draft is fine.
        #expect(await server.write(ann, batch: 3, [.update(T.key("drafts/d1"), fields: [T.field("n"): 2])]).writeResult != nil)
    }

    @Test func aTombstoneIsAnExistingDocument() async throws {
        let server = try rulesServer()
        try await server.seed(["notes/bob": ["owner": "bob", "deletedAt": .timestamp(Timestamp(microseconds: 5))]])
        let ann = try await server.connect(uid: "ann", claims: [:])
        // Writing over bob's soft-deleted note is an update of bob's note, not a create.
        let takeover = try #require(await server.write(ann, batch: 1, [T.set("notes/bob", Self.ann)]).rejection)
        #expect(takeover.code == .permissionDenied && takeover.message.contains("update on"))
        let bob = try await server.connect(uid: "bob", claims: [:])
        // Its owner may restore it (an update clearing deletedAt).
        let restore = Mutation.update(T.key("notes/bob"), fields: [T.field("deletedAt"): .null])
        #expect(await server.write(bob, batch: 1, [restore]).writeResult != nil)
    }

    @Test func aDeniedWriteRejectsTheWholeBatchAndTheAnswerIsRemembered() async throws {
        let server = try rulesServer()
        try await server.seed(["notes/bob": ["owner": "bob"]])
        let ann = try await server.connect(uid: "ann", claims: [:])
        let batch = [T.set("public/p1", ["x": 1]), T.set("notes/mine", Self.ann), .delete(T.key("notes/bob"))]
        let first = try #require(await server.write(ann, batch: 7, batch).rejection)
        #expect(first.code == .permissionDenied && first.location == "write 2: notes/bob")
        #expect(try await server.stored("public/p1") == nil)
        #expect(try await server.stored("notes/mine") == nil)
        // Rules that would allow it now do not change the remembered answer.
        await server.core.replaceRules(with: try RuleSet.parse(source: """
            service cloud.firestore { match /databases/{db}/documents { match /{doc=**} { allow read, write; } } }
            """))
        #expect(await server.write(ann, batch: 7, batch).rejection == first)
        #expect(try await server.stored("public/p1") == nil)
        #expect(await server.write(ann, batch: 8, batch).writeResult != nil)
    }

    @Test func preconditionsDoNotTellWhatTheRulesHide() async throws {
        let server = try rulesServer()
        try await server.seed(["notes/bob": ["owner": "bob"]])
        let ann = try await server.connect(uid: "ann", claims: [:])
        // A create of bob's existing note: permissionDenied, not alreadyExists.
        let create = try #require(await server.write(ann, batch: 1, [.create(T.key("notes/bob"), T.data(Self.ann))]).rejection)
        #expect(create.code == .permissionDenied)
        // Where the rules allow the write, the precondition speaks.
        let exists = try #require(await server.write(ann, batch: 2, [.create(T.key("public/p"), T.data([:])), .create(T.key("public/p"), T.data([:]))]).rejection)
        #expect(exists.code == .alreadyExists && exists.location == "write 1: public/p")
        let missing = try #require(await server.write(ann, batch: 3, [.update(T.key("notes/none"), fields: [T.field("owner"): "ann"])]).rejection)
        #expect(missing.code == .notFound)
        // A transaction's verify is a read: it needs `get`.
        let verify = try #require(await server.write(ann, batch: 4, [.verify(T.key("notes/bob"), .exists(true)), T.set("public/q", [:])]).rejection)
        #expect(verify.code == .permissionDenied && verify.message.contains("get on /databases/(default)/documents/notes/bob"))
    }

    @Test func getAfterSeesTheBatchAndGetTheStateBeforeIt() async throws {
        let server = try rulesServer()
        let ann = try await server.connect(uid: "ann", claims: [:])
        // A project alone: its log does not exist after the batch.
        let alone = try #require(await server.write(ann, batch: 1, [T.set("projects/p1", ["name": "P"])]).rejection)
        #expect(alone.code == .permissionDenied && alone.message.contains("projects/p1"))
        // Project and log together: each sees the other in the batch's result.
        let together = [T.set("projects/p1", ["name": "P"]), T.set("projectLogs/p1", ["entry": "created"])]
        #expect(await server.write(ann, batch: 2, together).writeResult != nil)
        // A log whose project (after the batch) has no string name is refused.
        let bad = [T.set("projects/p2", ["name": 7]), T.set("projectLogs/p2", ["entry": "created"])]
        #expect(await server.write(ann, batch: 3, bad).rejection?.location == "write 1: projectLogs/p2")
        // get()/exists() see the stored state: a badge for a project created in the same batch
        // is refused, one for a stored project allowed.
        let sameBatch = [T.set("projects/p3", ["name": "Q"]), T.set("projectLogs/p3", [:]), T.set("badges/p3", [:])]
        #expect(await server.write(ann, batch: 4, sameBatch).rejection?.location == "write 2: badges/p3")
        #expect(await server.write(ann, batch: 5, [T.set("badges/p1", [:])]).writeResult != nil)
    }

    @Test func lookupsAreLimitedPerWriteAndPerBatch() async throws {
        let server = try rulesServer()
        var items: [String: [String: Value]] = [:]
        for i in 0..<30 { items["items/i\(i)"] = ["n": .integer(Int64(i))] }
        try await server.seed(items)
        let ann = try await server.connect(uid: "ann", claims: [:])
        func refs(_ range: Range<Int>) -> [String: Value] { ["refs": .array(range.map { .string("i\($0)") })] }
        // 10 lookups in one write: allowed. A missing item: denied.
        #expect(await server.write(ann, batch: 1, [T.set("limited/a", refs(0..<10))]).writeResult != nil)
        #expect(await server.write(ann, batch: 2, [T.set("limited/b", ["refs": ["i1", "nope"]])]).rejection?.code == .permissionDenied)
        // 11 lookups in one write: over the limit of one request.
        let eleven = try #require(await server.write(ann, batch: 3, [T.set("limited/c", refs(0..<11))]).rejection)
        #expect(eleven.code == .permissionDenied && eleven.message.contains("more than 10 document lookups"))
        // 20 distinct lookups in one batch: allowed; 22: over the batch's limit.
        let twenty = [T.set("limited/d", refs(0..<10)), T.set("limited/e", refs(10..<20))]
        #expect(await server.write(ann, batch: 4, twenty).writeResult != nil)
        let over = [T.set("limited/f", refs(0..<10)), T.set("limited/g", refs(10..<20)), T.set("limited/h", refs(20..<22))]
        let batchLimit = try #require(await server.write(ann, batch: 5, over).rejection)
        #expect(batchLimit.location == "write 2: limited/h" && batchLimit.message.contains("in one batch"), "\(batchLimit)")
        // Lookups shared by the writes of a batch count once.
        let shared = [T.set("limited/i", refs(0..<10)), T.set("limited/j", refs(0..<10)), T.set("limited/k", refs(5..<15))]
        #expect(await server.write(ann, batch: 6, shared).writeResult != nil)
    }

    @Test func withoutRulesOnlyTenancyApplies() async throws {
        let server = TestServer()
        let ann = try await server.connect(tenant: "acme", uid: "ann")
        #expect(server.core.rules == nil)
        #expect(await server.write(ann, batch: 1, [T.set("notes/n", ["owner": "bob"]), T.set("accounts/a", [:])]).writeResult != nil)
    }
}

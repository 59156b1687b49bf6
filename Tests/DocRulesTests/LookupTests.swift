import DocModel
@testable import DocRules
import Testing
import DocTestTraits

/// A lookup that counts calls and can fail.
final class CountingLookup: DocumentLookup {
    var documents: [DocumentKey: Document]
    var calls = 0
    var failing = false

    init(_ documents: [Document]) {
        self.documents = Dictionary(uniqueKeysWithValues: documents.map { ($0.key, $0) })
    }

    struct Failure: Error {}

    func document(at key: DocumentKey) throws -> Document? {
        calls += 1
        if failing { throw Failure() }
        return documents[key]
    }
}

@Suite(.cpuBound) struct LookupTests {
    let rules = try! RuleSet.parse(source: rulesSource("""
        match /rooms/{room} {
          allow get: if get(/databases/$(database)/documents/members/$(request.auth.uid)).data.rooms.hasAny([room]);
          allow create: if exists(/databases/$(database)/documents/members/$(request.auth.uid))
                        && getAfter(/databases/$(database)/documents/rooms/$(room)).data.owner == request.auth.uid
                        && !existsAfter(/databases/$(database)/documents/deleted/$(room));
          allow delete: if !existsAfter(/databases/$(database)/documents/rooms/$(room));
        }
        match /n/{count} {
          function read(i) { return exists(/databases/$(database)/documents/x/$(i)); }
          allow get: if int(count) == 0 || read(int(count) - 1) || !read(int(count) - 1)
                        && (int(count) == 1 || read(int(count) - 2) || !read(int(count) - 2));
          allow list: if get(/databases/$(database)/documents/x/a) == null
                        && get(/databases/$(database)/documents/x/a) == null;
        }
        match /bad/{b} {
          allow get: if get(/databases/other/documents/x/a) == null;
          allow update: if get(/a/b) == null;
          allow delete: if exists(/databases/$(database)/documents/x);
        }
    """))

    @Test func getAndExists() throws {
        let lookup = CountingLookup([doc("members/alice", ["rooms": ["r1"]])])
        #expect(rules.evaluate(getRequest("rooms/r1", auth: RulesAuth(uid: "alice")), lookup: lookup).isAllowed)
        #expect(!rules.evaluate(getRequest("rooms/r2", auth: RulesAuth(uid: "alice")), lookup: lookup).isAllowed)
        let missing = rules.evaluate(getRequest("rooms/r1", auth: RulesAuth(uid: "bob")), lookup: lookup)
        #expect(!missing.isAllowed)
        #expect(missing.firstError?.contains("cannot read field 'data' of null") == true)
    }

    @Test func getAfterSeesTheWrite() throws {
        let lookup = InMemoryDocumentLookup(documents: [key("members/alice"): doc("members/alice", [:])])
        func create(owner: String) -> RulesRequest {
            RulesRequest(method: .create, path: try! ResourcePath("rooms/r9"), auth: RulesAuth(uid: "alice"),
                         requestResource: doc("rooms/r9", ["owner": .string(owner)]), time: testTime)
        }
        #expect(rules.evaluate(create(owner: "alice"), lookup: lookup).isAllowed)
        #expect(!rules.evaluate(create(owner: "bob"), lookup: lookup).isAllowed)
        // Another document changed by the same batch, as the lookup reports it.
        var batch = lookup
        batch.after[key("deleted/r9")] = .some(doc("deleted/r9", [:]))
        #expect(!rules.evaluate(create(owner: "alice"), lookup: batch).isAllowed)
        // A delete: the document is gone afterwards.
        let delete = RulesRequest(method: .delete, path: try ResourcePath("rooms/r9"), auth: RulesAuth(uid: "alice"),
                                  resource: doc("rooms/r9", [:]), time: testTime)
        #expect(rules.evaluate(delete, lookup: lookup).isAllowed)
    }

    @Test func tenDistinctLookupsPerRequest() throws {
        let lookup = CountingLookup([])
        // /n/{count}: the rule reads x/(count-1) and x/(count-2) through nested calls; each
        // request reads at most 2 distinct documents, repeated reads are cached.
        #expect(rules.evaluate(getRequest("n/5"), lookup: lookup).isAllowed)
        #expect(lookup.calls == 2)
        let ev = { (source: String) throws -> RulesValue in
            try evaluate(source, lookup: InMemoryDocumentLookup())
        }
        let ten = (0..<10).map { "exists(/databases/(default)/documents/x/d\($0))" }.joined(separator: " || ")
        #expect(try ev(ten) == .bool(false))
        let tenTwice = ten + " || " + ten
        #expect(try ev(tenTwice) == .bool(false))
        let eleven = (0..<11).map { "exists(/databases/(default)/documents/x/d\($0))" }.joined(separator: " || ")
        #expect(throws: (any Error).self) { try ev(eleven) }
        // get and getAfter of one document count separately.
        let mixed = (0..<6).map { "exists(/databases/(default)/documents/x/d\($0)) || existsAfter(/databases/(default)/documents/x/d\($0))" }.joined(separator: " || ")
        #expect(throws: (any Error).self) { try ev(mixed) }
    }

    @Test func batchesShareTwentyLookups() throws {
        let rules = try RuleSet.parse(source: rulesSource("""
            match /w/{i} {
              allow create: if \((0..<8).map { "!exists(/databases/$(database)/documents/x/$(i)-\($0))" }.joined(separator: " && "));
            }
        """))
        func write(_ i: Int) -> RulesRequest {
            RulesRequest(method: .create, path: try! ResourcePath("w/\(i)"), auth: nil, requestResource: doc("w/\(i)", [:]), time: testTime)
        }
        let lookup = InMemoryDocumentLookup()
        #expect(rules.evaluate(batch: [write(1), write(2)], lookup: lookup).allSatisfy { $0.isAllowed })
        let three = rules.evaluate(batch: [write(1), write(2), write(3)], lookup: lookup)
        #expect(three.map(\.isAllowed) == [true, true, false])
        #expect(three[2].firstError?.contains("more than 20 document lookups (get/exists/getAfter/existsAfter) in one batch") == true)
        // The same documents again do not count twice.
        #expect(rules.evaluate(batch: [write(1), write(1), write(1), write(2)], lookup: lookup).allSatisfy { $0.isAllowed })
    }

    @Test func lookupErrorsAndBadPathsDeny() throws {
        let failing = CountingLookup([])
        failing.failing = true
        let d = rules.evaluate(getRequest("rooms/r1", auth: RulesAuth(uid: "alice")), lookup: failing)
        #expect(!d.isAllowed && d.firstError?.contains("lookup of members/alice failed") == true)
        let other = rules.evaluate(getRequest("bad/1"), lookup: InMemoryDocumentLookup())
        #expect(other.firstError?.contains("names database 'other'") == true)
        let update = RulesRequest(method: .update, path: try ResourcePath("bad/1"), auth: nil, resource: doc("bad/1", [:]),
                                  requestResource: doc("bad/1", [:]), time: testTime)
        #expect(rules.evaluate(update).firstError?.contains("is not a document path") == true)
        let delete = RulesRequest(method: .delete, path: try ResourcePath("bad/1"), auth: nil, time: testTime)
        #expect(rules.evaluate(delete).firstError?.contains("is not a document path") == true)
    }
}

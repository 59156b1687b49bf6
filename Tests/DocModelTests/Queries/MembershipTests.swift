import Testing
@testable import DocModel
import DocTestTraits

private typealias F = QueryFixtures

@Suite("Query membership and tombstones", .cpuBound)
struct MembershipTests {
    @Test(arguments: [
        ("rooms/a", true), ("rooms/b", true), ("rooms/a/messages/m1", false), ("other/a", false),
        ("roomsx/a", false), ("x/y/rooms/a", false),
    ])
    func collectionQueryMatchesOnlyDirectChildren(_ path: String, _ expected: Bool) {
        #expect(F.coll("rooms").matches(F.doc(path)) == expected)
    }

    @Test(arguments: [
        ("rooms/a/messages/m1", true), ("rooms/a/messages/m2", true), ("rooms/b/messages/m1", false),
        ("rooms/a", false), ("rooms/a/messages/m1/messages/x", false),
    ])
    func subcollectionQuery(_ path: String, _ expected: Bool) {
        #expect(F.coll("rooms/a/messages").matches(F.doc(path)) == expected)
    }

    @Test(arguments: [
        ("rooms/a/messages/m1", true), ("rooms/b/messages/m2", true), ("messages/m3", true),
        ("rooms/a/messages/m1/messages/x", true), ("rooms/a", false), ("messagesx/a", false),
        ("rooms/messages", false), ("messages/m/threads/t", false),
    ])
    func collectionGroupMatchesAcrossParents(_ path: String, _ expected: Bool) throws {
        let q = try Query(collectionGroup: "messages")
        #expect(q.isCollectionGroupQuery)
        #expect(q.matches(F.doc(path)) == expected)
    }

    @Test(arguments: [
        ("rooms/a/messages/m1", true), ("rooms/a/x/y/messages/z", true), ("rooms/b/messages/m1", false),
        ("messages/m1", false),
    ])
    func collectionGroupUnderAParent(_ path: String, _ expected: Bool) throws {
        let q = try Query(collectionGroup: "messages", parent: ResourcePath("rooms/a"))
        #expect(q.matches(F.doc(path)) == expected)
    }

    @Test func documentQuery() {
        let q = Query(document: F.key("rooms/a"))
        #expect(q.isDocumentQuery && !q.isCollectionGroupQuery)
        #expect(q.matches(F.doc("rooms/a", ["x": 1])))
        #expect(!q.matches(F.doc("rooms/b")))
        #expect(!q.matches(F.doc("rooms/a/messages/m")))
    }

    @Test func asCollectionQueryKeepsTheRest() throws {
        let group = try Query(collectionGroup: "messages").filter("n", .greaterThan, 1).order(by: "n", descending: true).limit(to: 3)
        let q = group.asCollectionQuery(at: try ResourcePath("rooms/a/messages"))
        #expect(!q.isCollectionGroupQuery)
        #expect(q.filters == group.filters && q.normalizedOrderBys == group.normalizedOrderBys && q.limit == 3)
        #expect(q.matches(F.doc("rooms/a/messages/m", ["n": 2])))
        #expect(!q.matches(F.doc("rooms/b/messages/m", ["n": 2])))
        #expect(!q.matches(F.doc("rooms/a/messages/m", ["n": 1])))
    }

    @Test func tombstonesAreHiddenUnlessIncluded() throws {
        let live = F.doc("c/live", ["a": 1])
        let dead = F.tombstone("c/dead", ["a": 1])
        let nullDeletedAt = F.doc("c/null", ["a": 1, "deletedAt": .null])
        #expect(dead.isTombstone && !nullDeletedAt.isTombstone)
        let q = try F.coll("c").filter("a", .equal, 1)
        #expect(!q.includeDeleted)
        #expect(q.matches(live) && q.matches(nullDeletedAt))
        #expect(!q.matches(dead))
        let all = q.includingDeleted()
        #expect(all.includeDeleted)
        #expect(all.matches(dead) && all.matches(live))
        #expect(!all.includingDeleted(false).matches(dead))
        #expect(F.keys(all.results(from: [live, dead, nullDeletedAt])) == ["c/dead", "c/live", "c/null"])
        #expect(F.keys(q.results(from: [live, dead, nullDeletedAt])) == ["c/live", "c/null"])
        // Filters still apply to tombstones that are included.
        #expect(!all.matches(F.tombstone("c/other", ["a": 2])))
        // Document queries and targets hide tombstones too.
        #expect(!Query(document: F.key("c/dead")).matches(dead))
        #expect(Query(document: F.key("c/dead")).includingDeleted().matches(dead))
        #expect(!(try q.toTarget().matches(dead)))
        #expect(try all.toTarget().matches(dead))
    }

    @Test func matchesAllDocuments() throws {
        let c = F.coll("c")
        #expect(c.matchesAllDocuments)
        #expect(try c.order(by: FieldPath.documentID, descending: true).matchesAllDocuments)
        #expect(c.includingDeleted().matchesAllDocuments)
        #expect(!(try c.order(by: "a").matchesAllDocuments))
        #expect(!(try c.filter("a", .equal, 1).matchesAllDocuments))
        #expect(!(try c.limit(to: 1).matchesAllDocuments))
        #expect(!(try c.order(by: FieldPath.documentID).start(at: ["x"]).matchesAllDocuments))
        // The implicit tombstone filter still applies.
        #expect(!c.matches(F.tombstone("c/t")))
    }
}

import Testing
@testable import DocModel
import DocTestTraits

private typealias F = QueryFixtures

@Suite("Query canonical ids", .cpuBound)
struct CanonicalIDTests {
    static let a = F.field("a"), b = F.field("b")

    static func expectSame(_ x: Query, _ y: Query, _ comment: Comment? = nil) {
        #expect(x.canonicalID == y.canonicalID, comment)
        #expect(x == y, comment)
        #expect(x.hashValue == y.hashValue, comment)
    }

    @Test func format() throws {
        let q = try F.coll("rooms").filter("a", .equal, 1).limit(to: 3)
        #expect(q.canonicalID == "rooms|f:a == 1|ob:__name__ asc|l:3|lt:f")
        let g = try Query(collectionGroup: "m").filter("b", .in, ["y", "x"]).order(by: "a", descending: true)
            .start(after: [2.5]).includingDeleted()
        #expect(g.canonicalID == #"|cg:m|f:b in ["x","y"]|ob:a desc,__name__ desc|lb:[2.5] excl|deleted"#)
        #expect(try g.toTarget().canonicalID == g.canonicalID, "no limit, no limit type")
    }

    @Test func semanticallyEqualQueriesShareAnID() throws {
        let c = F.coll("c")
        Self.expectSame(try c.filter(Self.a, .equal, 1).filter(Self.b, .greaterThan, 2),
                        try c.filter(Self.b, .greaterThan, 2).filter(Self.a, .equal, 1), "filter order")
        Self.expectSame(try c.filter(.and([.where(Self.a, .equal, 1), .where(Self.b, .equal, 2)])),
                        try c.filter(Self.a, .equal, 1).filter(Self.b, .equal, 2), "and vs separate filters")
        Self.expectSame(try c.filter(Self.a, .equal, 1).filter(Self.a, .equal, 1),
                        try c.filter(Self.a, .equal, 1), "repeated filter")
        Self.expectSame(try c.filter(Self.a, .greaterThan, 1),
                        try c.filter(Self.a, .greaterThan, 1).order(by: Self.a), "implied order by")
        Self.expectSame(try c.order(by: Self.a, descending: true),
                        try c.order(by: Self.a, descending: true).order(by: FieldPath.documentID, descending: true), "implied key order")
        Self.expectSame(try c.filter(Self.a, .in, [1, 2, 2]), try c.filter(Self.a, .in, [2, 1]), "in list as a set")
        Self.expectSame(try c.filter(.or([.where(Self.a, .equal, 1), .or([.where(Self.b, .equal, 2), .where(Self.a, .equal, 3)])])),
                        try c.filter(.or([.where(Self.a, .equal, 3), .where(Self.b, .equal, 2), .where(Self.a, .equal, 1)])), "or flattening")
        Self.expectSame(try c.filter(FieldPath.documentID, .equal, "x"),
                        try c.filter(FieldPath.documentID, .equal, F.ref("c/x")), "document id vs reference")
        Self.expectSame(try c.limit(toLast: 1).limit(to: 4), try c.limit(to: 4), "replaced limit")
        Self.expectSame(try c.order(by: Self.a).start(at: [1]).start(at: [2]), try c.order(by: Self.a).start(at: [2]), "replaced cursor")
        Self.expectSame(c.includingDeleted().includingDeleted(false), c)
    }

    @Test func everyPartChangesTheID() throws {
        let c = F.coll("c")
        let base = try c.filter(Self.a, .greaterThan, 1).order(by: Self.a).limit(to: 5).start(at: [2]).end(at: [9])
        let variants: [(String, Query)] = [
            ("path", try F.coll("d").filter(Self.a, .greaterThan, 1).order(by: Self.a).limit(to: 5).start(at: [2]).end(at: [9])),
            ("group", try Query(collectionGroup: "c").filter(Self.a, .greaterThan, 1).order(by: Self.a).limit(to: 5).start(at: [2]).end(at: [9])),
            ("op", try c.filter(Self.a, .greaterThanOrEqual, 1).order(by: Self.a).limit(to: 5).start(at: [2]).end(at: [9])),
            ("value", try c.filter(Self.a, .greaterThan, 2).order(by: Self.a).limit(to: 5).start(at: [2]).end(at: [9])),
            ("value type", try c.filter(Self.a, .greaterThan, 1.0).order(by: Self.a).limit(to: 5).start(at: [2]).end(at: [9])),
            ("extra filter", try base.filter(Self.b, .equal, 1)),
            ("direction", try c.filter(Self.a, .greaterThan, 1).order(by: Self.a, descending: true).limit(to: 5).start(at: [2]).end(at: [9])),
            ("extra order", try c.filter(Self.a, .greaterThan, 1).order(by: Self.a).order(by: Self.b).limit(to: 5).start(at: [2]).end(at: [9])),
            ("limit", try base.limit(to: 6)),
            ("limit type", try base.limit(toLast: 5)),
            ("start inclusive", try base.start(after: [2])),
            ("start value", try base.start(at: [3])),
            ("end inclusive", try base.end(before: [9])),
            ("end value", try base.end(at: [8])),
            ("deleted", base.includingDeleted()),
        ]
        var ids: Set<String> = [base.canonicalID]
        for (name, q) in variants {
            #expect(q.canonicalID != base.canonicalID, "\(name)")
            #expect(q != base, "\(name)")
            ids.insert(q.canonicalID)
        }
        #expect(ids.count == variants.count + 1, "all variants differ from each other too")
        // Start and end with the same position differ.
        let o = try c.order(by: Self.a)
        #expect(try o.start(at: [1]).canonicalID != o.end(at: [1]).canonicalID)
        // `or` and `and` of the same members differ.
        let members: [Filter] = [.where(Self.a, .equal, 1), .where(Self.b, .equal, 1)]
        #expect(try c.filter(.or(members)).canonicalID != c.filter(.and(members)).canonicalID)
        // A collection path and a group of the same id differ.
        #expect(try F.coll("c").canonicalID != Query(collectionGroup: "c").canonicalID)
        #expect(try Query(collectionGroup: "m").canonicalID != Query(collectionGroup: "m", parent: ResourcePath("r/x")).canonicalID)
    }

    @Test func limitTypeIsPartOfTheQueryIDButNotTheTarget() throws {
        // limitToLast(ascending, cursors) and limitToFirst(descending, swapped cursors) run as
        // the same target but are different queries.
        let last = try F.coll("c").order(by: Self.a).limit(toLast: 2).start(at: [1]).end(before: [5])
        let first = try F.coll("c").order(by: Self.a, descending: true).limit(to: 2).start(after: [5]).end(at: [1])
        #expect(try last.toTarget() == first.toTarget())
        #expect(try last.toTarget().canonicalID == first.toTarget().canonicalID)
        #expect(last.canonicalID != first.canonicalID)
        #expect(last.canonicalID.hasSuffix("|lt:l") && first.canonicalID.hasSuffix("|lt:f"))
        #expect(last != first)
    }

    @Test func filterIDs() {
        #expect(FieldFilter(F.field("a.b"), .arrayContains, "x").canonicalID == #"a.b array-contains "x""#)
        #expect(FieldFilter(F.field("a"), .notIn, [3, 1.0, 1]).canonicalID == "a not-in [1,1.0,3]")
        #expect(FieldFilter(F.field("a"), .equal, [3, 1]).canonicalID == "a == [3,1]", "an == array is ordered")
        #expect(Filter.and([.where(F.field("b"), .equal, 1), .where(F.field("a"), .equal, 1)]).canonicalID == "and(a == 1,b == 1)")
        #expect(Filter.or([.where(F.field("a"), .equal, 1)]).canonicalID == "a == 1")
        #expect(Filter.where(F.field("a"), .equal, 1) == .and([.where(F.field("a"), .equal, 1)]))
        #expect(FieldFilter(F.field("a"), .equal, 1) != FieldFilter(F.field("a"), .equal, 1.0))
        #expect(OrderBy(F.field("x"), .descending).canonicalID == "x desc")
        #expect(Bound(position: ["k", 1], inclusive: false).canonicalID == #"["k",1] excl"#)
    }
}

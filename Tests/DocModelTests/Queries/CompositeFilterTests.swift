import Testing
@testable import DocModel
import DocTestTraits

private typealias F = QueryFixtures

@Suite("Composite filters", .cpuBound)
struct CompositeFilterTests {
    static let a = F.field("a"), b = F.field("b"), c = F.field("c")

    /// `a == 1 || (b > 2 && c == "x")`
    static let nested: Filter = .or([
        .where(a, .equal, 1),
        .and([.where(b, .greaterThan, 2), .where(c, .equal, "x")]),
    ])

    @Test(arguments: [
        (["a": 1] as [String: Value], true),
        (["a": 1.0, "b": 0], true),
        (["a": 2, "b": 3, "c": "x"], true),
        (["b": 3, "c": "x"], true),
        (["b": 3, "c": "y"], false),
        (["b": 2, "c": "x"], false),
        (["a": 2], false),
        ([:], false),
    ])
    func nestedOrOfAnd(_ fields: [String: Value], _ expected: Bool) {
        #expect(Self.nested.matches(F.doc("c/d", fields)) == expected, "\(fields)")
    }

    @Test func andOfOrs() {
        // (a == 1 || a == 2) && (b == "x" || c == true)
        let filter: Filter = .and([
            .or([.where(Self.a, .equal, 1), .where(Self.a, .equal, 2)]),
            .or([.where(Self.b, .equal, "x"), .where(Self.c, .equal, true)]),
        ])
        #expect(filter.matches(F.doc("c/1", ["a": 1, "b": "x"])))
        #expect(filter.matches(F.doc("c/2", ["a": 2, "c": true])))
        #expect(!filter.matches(F.doc("c/3", ["a": 3, "b": "x"])))
        #expect(!filter.matches(F.doc("c/4", ["a": 1, "b": "y", "c": false])))
        #expect(filter.flattenedFilters.count == 4)
        #expect(filter.compositeFilter?.isFlat == false)
    }

    @Test func emptyComposites() {
        let document = F.doc("c/d", ["a": 1])
        #expect(Filter.and([]).matches(document))
        #expect(!Filter.or([]).matches(document))
    }

    @Test func queryDropsEmptyAndUnwrapsSingleComposites() throws {
        let base = F.coll("c")
        #expect(try base.filter(.and([])).filters.isEmpty)
        #expect(try base.filter(.or([.and([]), .or([])])).filters.isEmpty)
        let single = try base.filter(.or([.and([.where(Self.a, .equal, 1)])]))
        #expect(single.filters.count == 1)
        #expect(single.filters[0].fieldFilter == FieldFilter(Self.a, .equal, 1))
        let pruned = try base.filter(.or([.where(Self.a, .equal, 1), .and([]), .where(Self.b, .equal, 2)]))
        #expect(pruned.filters[0].compositeFilter?.filters.count == 2)
    }

    @Test func queryWithOrFilter() throws {
        let q = try F.coll("c").filter(Self.nested)
        let docs = [
            F.doc("c/1", ["a": 1, "b": 0]), F.doc("c/2", ["b": 3, "c": "x"]), F.doc("c/3", ["b": 1, "c": "x"]),
            F.doc("c/4", ["a": 5, "b": 9]), F.doc("other/5", ["a": 1, "b": 0]),
            // Satisfies `a == 1`, but `b > 2` orders the query by `b`, which it lacks.
            F.doc("c/6", ["a": 1]),
        ]
        #expect(q.normalizedOrderBys.map(\.field) == [Self.b, .documentID])
        #expect(F.keys(q.results(from: docs)) == ["c/1", "c/2"])
    }

    @Test func implicitOrderByAppliesToEveryDisjunct() throws {
        // `a > 1 || b == 1` is ordered by `a`, so a document without `a` is not a result even
        // though it satisfies the second disjunct (Firestore's rule).
        let q = try F.coll("c").filter(.or([.where(Self.a, .greaterThan, 1), .where(Self.b, .equal, 1)]))
        #expect(q.normalizedOrderBys == [OrderBy(Self.a), OrderBy(.documentID)])
        let onlyB = F.doc("c/1", ["b": 1])
        #expect(q.filters[0].matches(onlyB))
        #expect(!q.matches(onlyB))
        #expect(q.matches(F.doc("c/2", ["a": 0, "b": 1])))
        #expect(q.matches(F.doc("c/3", ["a": 2])))
    }
}

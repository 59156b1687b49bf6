import Testing
@testable import DocModel
import DocTestTraits

private typealias F = QueryFixtures

@Suite("Query order", .cpuBound)
struct OrderByTests {
    static let a = F.field("a"), b = F.field("b"), c = F.field("c")
    static let name = FieldPath.documentID

    @Test func implicitKeyOrder() throws {
        #expect(F.coll("c").normalizedOrderBys == [OrderBy(Self.name)])
        #expect(try F.coll("c").order(by: Self.a).normalizedOrderBys == [OrderBy(Self.a), OrderBy(Self.name)])
    }

    @Test func keyFollowsTheLastExplicitDirection() throws {
        let q = try F.coll("c").order(by: Self.a, descending: true)
        #expect(q.normalizedOrderBys == [OrderBy(Self.a, .descending), OrderBy(Self.name, .descending)])
        let q2 = try F.coll("c").order(by: Self.a, descending: true).order(by: Self.b)
        #expect(q2.normalizedOrderBys == [OrderBy(Self.a, .descending), OrderBy(Self.b), OrderBy(Self.name)])
        let q3 = try F.coll("c").order(by: Self.a).order(by: Self.b, descending: true)
        #expect(q3.normalizedOrderBys.last == OrderBy(Self.name, .descending))
    }

    @Test func explicitKeyOrderIsNotRepeated() throws {
        #expect(try F.coll("c").order(by: Self.name, descending: true).normalizedOrderBys == [OrderBy(Self.name, .descending)])
        #expect(try F.coll("c").order(by: Self.name).order(by: Self.a).normalizedOrderBys == [OrderBy(Self.name), OrderBy(Self.a)])
    }

    @Test func inequalityFieldsAreOrderedImplicitly() throws {
        let q = try F.coll("c").filter(Self.b, .greaterThan, 1)
        #expect(q.normalizedOrderBys == [OrderBy(Self.b), OrderBy(Self.name)])
        // Several inequality fields, in field-path order, whatever the filter order.
        let multi = try F.coll("c").filter(Self.c, .notEqual, 2).filter(Self.b, .greaterThan, 1).filter(Self.a, .lessThan, 5)
        #expect(multi.normalizedOrderBys == [OrderBy(Self.a), OrderBy(Self.b), OrderBy(Self.c), OrderBy(Self.name)])
        #expect(multi.inequalityFilterFields == [Self.a, Self.b, Self.c])
        // Nested paths sort by segment.
        let nested = try F.coll("c").filter("b.x", .lessThan, 1).filter("a.z", .greaterThan, 1).filter("a", .notIn, [1])
        #expect(nested.normalizedOrderBys.map(\.field.canonicalString) == ["a", "a.z", "b.x", "__name__"])
        // A field with two inequalities is ordered once; not-in counts as an inequality.
        let twice = try F.coll("c").filter(Self.a, .greaterThan, 1).filter(Self.a, .lessThan, 5)
        #expect(twice.normalizedOrderBys == [OrderBy(Self.a), OrderBy(Self.name)])
        #expect(try F.coll("c").filter(Self.a, .notIn, [1]).normalizedOrderBys.first == OrderBy(Self.a))
        // Equality and array filters add no order.
        let eq = try F.coll("c").filter(Self.a, .equal, 1).filter(Self.b, .arrayContains, 1).filter(Self.c, .in, [1])
        #expect(eq.normalizedOrderBys == [OrderBy(Self.name)])
        #expect(eq.inequalityFilterFields.isEmpty)
        #expect(eq.equalityFields == [Self.a, Self.c])
    }

    @Test func implicitInequalityOrderFollowsExplicitOrders() throws {
        let q = try F.coll("c").order(by: Self.c, descending: true).filter(Self.a, .greaterThan, 1).filter(Self.c, .lessThan, 5)
        #expect(q.normalizedOrderBys == [OrderBy(Self.c, .descending), OrderBy(Self.a, .descending), OrderBy(Self.name, .descending)])
    }

    @Test func keyInequalityAddsNoExtraOrder() throws {
        let q = try F.coll("c").filter(Self.name, .greaterThan, "k")
        #expect(q.normalizedOrderBys == [OrderBy(Self.name)])
        #expect(q.inequalityFilterFields == [Self.name])
    }

    static let mixed: [(String, Value)] = [
        ("null", .null), ("false", false), ("true", true), ("nan", .double(.nan)), ("neg", -1.5),
        ("one", 1), ("onef", 1.0), ("two", 2), ("time", F.ts(5)), ("str", "s"), ("bytes", .bytes([1])),
        ("ref", F.ref("x/y")), ("geo", .geoPoint(try! GeoPoint(latitude: 1, longitude: 2))), ("arr", [1]),
        ("map", ["x": 1]),
    ]

    @Test func sortsMixedTypesInFirestoreOrder() throws {
        let docs = Self.mixed.map { F.doc("c/\($0.0)", ["a": $0.1]) }
        let asc = try F.coll("c").order(by: Self.a)
        // `one` and `onef` are equal values, so the key decides ("one" < "onef").
        let expected = ["null", "false", "true", "nan", "neg", "one", "onef", "two", "time", "str", "bytes", "ref", "geo", "arr", "map"]
        #expect(F.keys(asc.results(from: docs.shuffled())) == expected.map { "c/\($0)" })
        let desc = try F.coll("c").order(by: Self.a, descending: true)
        #expect(F.keys(desc.results(from: docs.shuffled())) == expected.reversed().map { "c/\($0)" })
        #expect(asc.compare(docs[5], docs[6]) == -1)
        #expect(desc.compare(docs[5], docs[6]) == 1, "the key tie-break is descending too")
        #expect(asc.compare(docs[3], docs[3]) == 0)
    }

    @Test func secondaryOrder() throws {
        let docs = [
            F.doc("c/1", ["a": 1, "b": "y"]), F.doc("c/2", ["a": 1, "b": "x"]),
            F.doc("c/3", ["a": 0, "b": "z"]), F.doc("c/4", ["a": 1.0, "b": "x"]),
        ]
        let q = try F.coll("c").order(by: Self.a).order(by: Self.b, descending: true)
        #expect(F.keys(q.results(from: docs)) == ["c/3", "c/1", "c/4", "c/2"])
        let sorted = docs.sorted(by: q.comparator)
        #expect(F.keys(sorted) == ["c/3", "c/1", "c/4", "c/2"])
    }

    @Test func missingOrderByFieldExcludesTheDocument() throws {
        let q = try F.coll("c").order(by: Self.a)
        #expect(!q.matches(F.doc("c/1", ["b": 1])))
        #expect(q.matches(F.doc("c/2", ["a": .null])), "null is a value")
        let filtered = try F.coll("c").filter(Self.b, .equal, 1).order(by: Self.a)
        #expect(F.keys(filtered.results(from: [F.doc("c/1", ["b": 1]), F.doc("c/2", ["a": 3, "b": 1])])) == ["c/2"])
        // Ordering by the key always matches.
        #expect(try F.coll("c").order(by: Self.name).matches(F.doc("c/3")))
    }

    @Test func orderByCompareTreatsMissingAsLowest() {
        let ob = OrderBy(Self.a)
        let with = F.doc("c/1", ["a": .null]), without = F.doc("c/2")
        #expect(ob.compare(without, with) == -1)
        #expect(ob.compare(with, without) == 1)
        #expect(ob.compare(without, without) == 0)
        #expect(ob.flipped.compare(without, with) == 1)
        #expect(OrderBy(Self.name).compare(with, without) == -1)
    }

    /// The sort that reads each document's order-by values once gives the comparator's order,
    /// for random values of every type, missing fields, several keys and both directions.
    @Test func sortingByReadValuesMatchesTheComparator() throws {
        let seed: UInt64 = 0x5EED_0F_0DE2
        let orders: [[(String, Bool)]] = [[("a", false)], [("a", true)], [("a", false), ("b", true)], [("b", true), ("a", false)]]
        for iteration in 0..<200 {
            var random = RandomValueGenerator(seed: seed, stream: iteration)
            var documents: [Document] = []
            for i in 0..<random.int(0..<40) {
                var fields: [String: Value] = [:]
                // Small pools, so equal values (and ties broken by the key) are common.
                if random.chance(0.9) { fields["a"] = random.chance(0.5) ? .integer(Int64(random.int(0..<4))) : random.value(maxDepth: 2) }
                if random.chance(0.9) { fields["b"] = .integer(Int64(random.int(0..<3))) }
                documents.append(F.doc("c/d\(random.int(0..<1000))-\(i)", fields))
            }
            for order in orders {
                var query = F.coll("c")
                for (field, descending) in order { query = try query.order(by: F.field(field), descending: descending) }
                let inOrder = documents.sorted(by: query.comparator)
                let expected = inOrder.map(\.key)
                // Random, already sorted (kept as it is) and reversed (turned around) input.
                for input in [documents, inOrder, inOrder.reversed()] {
                    let sorted = QueryEvaluation.sorted(input, orderBys: query.normalizedOrderBys).map(\.key)
                    #expect(sorted == expected, "seed \(seed), iteration \(iteration), order \(order)")
                }
            }
        }
    }
}

import Testing
@testable import DocModel
import DocTestTraits

private typealias F = QueryFixtures

/// One row of an operator table: a document whose field `a` holds `field` (or lacks `a` when
/// `nil`) tested against `a op value`.
struct FieldFilterCase: Sendable, CustomTestStringConvertible {
    let op: FieldFilter.Operator
    let value: Value
    let field: Value?
    let expected: Bool

    init(_ op: FieldFilter.Operator, _ value: Value, _ field: Value?, _ expected: Bool) {
        self.op = op
        self.value = value
        self.field = field
        self.expected = expected
    }

    var testDescription: String {
        "a:\(field.map(\.canonicalString) ?? "<missing>") \(op) \(value) → \(expected)"
    }
}

@Suite("Field filters", .cpuBound)
struct FieldFilterTests {
    static let nan = Value.double(.nan)

    static let comparisons: [FieldFilterCase] = [
        // <
        .init(.lessThan, 2, 1, true),
        .init(.lessThan, 2, 2, false),
        .init(.lessThan, 2, 2.0, false),
        .init(.lessThan, 2, 1.5, true),
        .init(.lessThan, 2, 3, false),
        .init(.lessThan, 2, "x", false),          // other type order: never
        .init(.lessThan, 2, false, false),        // booleans sort before numbers, but differ in type
        .init(.lessThan, 2, .null, false),
        .init(.lessThan, 2, nil, false),
        .init(.lessThan, 2, nan, true),           // NaN is the smallest number
        .init(.lessThan, "b", "abc", true),
        .init(.lessThan, "abc", "b", false),
        .init(.lessThan, F.ts(10), F.ts(5), true),
        .init(.lessThan, F.ts(10), 5, false),
        // <=
        .init(.lessThanOrEqual, 2, 2, true),
        .init(.lessThanOrEqual, 2, 2.0, true),
        .init(.lessThanOrEqual, 2.5, 2, true),
        .init(.lessThanOrEqual, 2, 2.5, false),
        .init(.lessThanOrEqual, 2, "2", false),
        .init(.lessThanOrEqual, 2, nil, false),
        // ==
        .init(.equal, 1, 1, true),
        .init(.equal, 1, 1.0, true),
        .init(.equal, 1.0, 1, true),
        .init(.equal, 1, 2, false),
        .init(.equal, 1, "1", false),
        .init(.equal, 1, true, false),
        .init(.equal, 1, nil, false),
        .init(.equal, nan, nan, true),
        .init(.equal, nan, 1, false),
        .init(.equal, .null, .null, true),
        .init(.equal, .null, nil, false),
        .init(.equal, .null, 0, false),
        .init(.equal, 0, -0.0, true),
        .init(.equal, [1, 2], [1.0, 2.0], true),
        .init(.equal, [1, 2], [2, 1], false),
        .init(.equal, ["x": 1], ["x": 1.0], true),
        .init(.equal, "é", "é", true),
        // !=
        .init(.notEqual, 1, 2, true),
        .init(.notEqual, 1, 1, false),
        .init(.notEqual, 1, 1.0, false),
        .init(.notEqual, 1, "x", true),           // types need not match
        .init(.notEqual, 1, [1], true),
        .init(.notEqual, 1, .null, false),        // null never matches !=
        .init(.notEqual, 1, nil, false),          // nor does a missing field
        .init(.notEqual, .null, 1, true),
        .init(.notEqual, .null, .null, false),
        .init(.notEqual, nan, nan, false),
        .init(.notEqual, nan, 1, true),
        .init(.notEqual, 1, nan, true),
        // >=
        .init(.greaterThanOrEqual, 2, 2, true),
        .init(.greaterThanOrEqual, 2, 2.0, true),
        .init(.greaterThanOrEqual, 2, 1.999, false),
        .init(.greaterThanOrEqual, 2, "z", false),
        .init(.greaterThanOrEqual, 2, nil, false),
        .init(.greaterThanOrEqual, "a", "a", true),
        // >
        .init(.greaterThan, 2, 3, true),
        .init(.greaterThan, 2, 2.0, false),
        .init(.greaterThan, 2, "x", false),       // strings sort after numbers but differ in type
        .init(.greaterThan, 2, [3], false),
        .init(.greaterThan, 2, .null, false),
        .init(.greaterThan, 2, nil, false),
        .init(.greaterThan, 2, nan, false),
        .init(.greaterThan, -1.5, .integer(-1), true),
        .init(.greaterThan, "a", "b", true),
        .init(.greaterThan, F.ref("c/a"), F.ref("c/b"), true),
        .init(.greaterThan, F.ref("c/a"), "c/b", false),
    ]

    static let arrayAndListOperators: [FieldFilterCase] = [
        // array-contains
        .init(.arrayContains, 1, [1, 2], true),
        .init(.arrayContains, 1.0, [1, 2], true),
        .init(.arrayContains, "x", [1, "x"], true),
        .init(.arrayContains, 3, [1, 2], false),
        .init(.arrayContains, 1, 1, false),       // not an array
        .init(.arrayContains, 1, [], false),
        .init(.arrayContains, 1, nil, false),
        .init(.arrayContains, nan, [nan], true),
        .init(.arrayContains, ["k": 1], [["k": 1.0]], true),
        .init(.arrayContains, [1], [1], false),   // no nested arrays: [1] is not an element of [1]
        // array-contains-any
        .init(.arrayContainsAny, [3, 2.0], [1, 2], true),
        .init(.arrayContainsAny, [3, 4], [1, 2], false),
        .init(.arrayContainsAny, ["x"], "x", false),
        .init(.arrayContainsAny, [1], [], false),
        .init(.arrayContainsAny, [1], nil, false),
        .init(.arrayContainsAny, [nan, "q"], [nan], true),
        // in
        .init(.in, [1.0, 2], 1, true),
        .init(.in, [1, 2], 2.0, true),
        .init(.in, [1, 2], 3, false),
        .init(.in, [1, 2], "1", false),
        .init(.in, [1, 2], nil, false),
        .init(.in, [.null], .null, true),
        .init(.in, [nan], nan, true),
        .init(.in, [[1, 2]], [1, 2], true),       // a list of arrays matches an equal array
        .init(.in, [[1, 2]], 1, false),
        // not-in
        .init(.notIn, [1, 2], 3, true),
        .init(.notIn, [1, 2], 1.0, false),
        .init(.notIn, [1, 2], "x", true),
        .init(.notIn, [1, 2], .null, false),      // null is excluded
        .init(.notIn, [1, 2], nil, false),        // and so is a missing field
        .init(.notIn, [.null, 1], 5, false),      // a list holding null matches nothing
        .init(.notIn, [nan], nan, false),
        .init(.notIn, [nan], 1, true),
        .init(.notIn, [[1]], [1], false),
        .init(.notIn, [[1]], [2], true),
    ]

    static func check(_ c: FieldFilterCase) {
        var fields: [String: Value] = ["other": 1]
        if let v = c.field { fields["a"] = v }
        let document = F.doc("c/d", fields)
        let filter = FieldFilter(F.field("a"), c.op, c.value)
        #expect(filter.matches(document) == c.expected, "\(c.testDescription)")
        #expect(Filter.field(filter).matches(document) == c.expected)
    }

    @Test(arguments: comparisons)
    func comparisonOperator(_ c: FieldFilterCase) { Self.check(c) }

    @Test(arguments: arrayAndListOperators)
    func arrayOrListOperator(_ c: FieldFilterCase) { Self.check(c) }

    @Test func nestedFieldPaths() {
        let document = F.doc("c/d", ["m": ["n": 5, "s": "x"], "flat": 1])
        #expect(FieldFilter(F.field("m.n"), .equal, 5).matches(document))
        #expect(FieldFilter(F.field("m.n"), .greaterThan, 4.5).matches(document))
        #expect(!FieldFilter(F.field("m.missing"), .notEqual, 5).matches(document))
        #expect(!FieldFilter(F.field("flat.x"), .equal, 1).matches(document), "a path crossing a non-map is missing")
        #expect(FieldFilter(F.field("m"), .equal, ["n": 5.0, "s": "x"]).matches(document))
    }

    @Test func keyFiltersCompareKeys() {
        let document = F.doc("c/d")
        let name = FieldPath.documentID
        #expect(FieldFilter(name, .equal, F.ref("c/d")).matches(document))
        #expect(!FieldFilter(name, .equal, F.ref("c/e")).matches(document))
        #expect(FieldFilter(name, .lessThan, F.ref("c/e")).matches(document))
        #expect(!FieldFilter(name, .greaterThan, F.ref("c/e")).matches(document))
        #expect(FieldFilter(name, .greaterThanOrEqual, F.ref("c/d")).matches(document))
        #expect(FieldFilter(name, .notEqual, F.ref("c/e")).matches(document))
        #expect(FieldFilter(name, .in, [F.ref("c/a"), F.ref("c/d")]).matches(document))
        #expect(!FieldFilter(name, .notIn, [F.ref("c/a"), F.ref("c/d")]).matches(document))
        #expect(FieldFilter(name, .notIn, [F.ref("c/a")]).matches(document))
        // A raw string is not a reference: different type order, no match. The query builder
        // turns document ids into references (see the validation tests).
        #expect(!FieldFilter(name, .equal, "d").matches(document))
    }

    @Test func pendingServerTimestampsAreNotTimestamps() throws {
        let pending = Value.pendingServerTimestamp(localWriteTime: try Timestamp(seconds: 50), previous: nil)
        let document = F.doc("c/d", ["t": pending])
        #expect(!FieldFilter(F.field("t"), .greaterThan, F.ts(0)).matches(document))
        #expect(!FieldFilter(F.field("t"), .lessThan, F.ts(100)).matches(document))
        #expect(FieldFilter(F.field("t"), .notEqual, F.ts(0)).matches(document))
    }

    @Test func operatorNamesAndKinds() {
        #expect(FieldFilter.Operator.allCases.map(\.name) == [
            "<", "<=", "==", "!=", ">=", ">", "array-contains", "array-contains-any", "in", "not-in",
        ])
        #expect(FieldFilter.Operator.allCases.filter(\.isInequality) == [
            .lessThan, .lessThanOrEqual, .notEqual, .greaterThanOrEqual, .greaterThan, .notIn,
        ])
        #expect(FieldFilter.Operator(rawValue: "array-contains-any") == .arrayContainsAny)
        #expect(FieldFilter.Operator.allCases.filter(\.takesValueList) == [.arrayContainsAny, .in, .notIn])
    }
}

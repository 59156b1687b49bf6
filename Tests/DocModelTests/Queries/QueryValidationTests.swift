import Testing
@testable import DocModel
import DocTestTraits

private typealias F = QueryFixtures

@Suite("Query validation", .cpuBound)
struct QueryValidationTests {
    static let a = F.field("a"), b = F.field("b"), name = FieldPath.documentID

    /// Expects `body` to throw `invalidArgument` with a message containing `fragment`.
    static func expectInvalid(
        _ fragment: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Query
    ) {
        guard let error = F.error(body) else {
            Issue.record("no error; expected \"\(fragment)\"", sourceLocation: sourceLocation)
            return
        }
        #expect(error.code == .invalidArgument, sourceLocation: sourceLocation)
        #expect(error.message.contains(fragment), "\(error)", sourceLocation: sourceLocation)
    }

    @Test func limits() {
        let c = F.coll("c")
        Self.expectInvalid("Query limit (0) is invalid. Limit must be positive.") { try c.limit(to: 0) }
        Self.expectInvalid("Query limit (-1) is invalid. Limit must be positive.") { try c.limit(toLast: -1) }
        Self.expectInvalid("Limit must be at most 2147483647") { try c.limit(to: Int(Int32.max) + 1) }
        #expect(F.error { try c.limit(to: 1) } == nil)
    }

    @Test func valueLists() {
        let c = F.coll("c")
        Self.expectInvalid("A non-empty array is required for 'in' filters.") { try c.filter(Self.a, .in, []) }
        Self.expectInvalid("A non-empty array is required for 'not-in' filters.") { try c.filter(Self.a, .notIn, []) }
        Self.expectInvalid("A non-empty array is required for 'array-contains-any' filters.") { try c.filter(Self.a, .arrayContainsAny, []) }
        Self.expectInvalid("A non-empty array is required for 'in' filters, but the value is a integer.") { try c.filter(Self.a, .in, 1) }
        let thirtyOne = Value.array((0..<31).map { .integer($0) })
        let thirty = Value.array((0..<30).map { .integer($0) })
        Self.expectInvalid("'in' filters support at most 30 values, but 31 were given.") { try c.filter(Self.a, .in, thirtyOne) }
        Self.expectInvalid("'array-contains-any' filters support at most 30 values") { try c.filter(Self.a, .arrayContainsAny, thirtyOne) }
        #expect(F.error { try c.filter(Self.a, .in, thirty) } == nil)
        #expect(F.error { try c.filter(Self.a, .notIn, thirty) } == nil)
    }

    @Test func disjunctiveNormalFormLimit() {
        let c = F.coll("c")
        let ten = Value.array((0..<10).map { .integer($0) })
        let three = Value.array([1, 2, 3])
        let four = Value.array([1, 2, 3, 4])
        #expect(F.error { try c.filter(Self.a, .in, ten).filter(Self.b, .in, three) } == nil, "30 disjunctions")
        Self.expectInvalid("The filters expand to 40 disjunctions in disjunctive normal form; the limit is 30.") {
            try c.filter(Self.a, .in, ten).filter(Self.b, .in, four)
        }
        Self.expectInvalid("expand to 31 disjunctions") {
            try c.filter(.or([.where(Self.a, .in, .array((0..<30).map { .integer($0) })), .where(Self.b, .equal, 1)]))
        }
        Self.expectInvalid("expand to 40 disjunctions") {
            try c.filter(Self.a, .in, ten).filter(.or([.where(Self.b, .in, three), .where(F.field("c"), .equal, 1)]))
        }
    }

    @Test func nullAndNaNOnlyWithEquality() {
        let c = F.coll("c")
        Self.expectInvalid("Null only supports '==' and '!=' comparisons, not '<'.") { try c.filter(Self.a, .lessThan, .null) }
        Self.expectInvalid("NaN only supports '==' and '!=' comparisons, not '>='.") { try c.filter(Self.a, .greaterThanOrEqual, .double(.nan)) }
        Self.expectInvalid("Null only supports '==' and '!=' comparisons, not 'array-contains'.") { try c.filter(Self.a, .arrayContains, .null) }
        #expect(F.error { try c.filter(Self.a, .equal, .null) } == nil)
        #expect(F.error { try c.filter(Self.a, .notEqual, .double(.nan)) } == nil)
        #expect(F.error { try c.filter(Self.a, .in, [.null, .double(.nan)]) } == nil)
    }

    @Test func operatorConflicts() {
        let c = F.coll("c")
        Self.expectInvalid("You cannot use more than one 'array-contains' filter.") {
            try c.filter(Self.a, .arrayContains, 1).filter(Self.b, .arrayContains, 2)
        }
        Self.expectInvalid("You cannot use more than one 'array-contains' filter.") {
            try c.filter(.or([.where(Self.a, .arrayContains, 1), .where(Self.b, .arrayContains, 2)]))
        }
        Self.expectInvalid("You cannot use 'array-contains-any' filters with 'array-contains' filters.") {
            try c.filter(Self.a, .arrayContains, 1).filter(Self.b, .arrayContainsAny, [2])
        }
        Self.expectInvalid("You cannot use more than one 'not-in' filter.") {
            try c.filter(Self.a, .notIn, [1]).filter(Self.b, .notIn, [2])
        }
        Self.expectInvalid("You cannot use 'not-in' filters with '!=' filters.") {
            try c.filter(Self.a, .notEqual, 1).filter(Self.b, .notIn, [2])
        }
        Self.expectInvalid("You cannot use '!=' filters with 'not-in' filters.") {
            try c.filter(Self.b, .notIn, [2]).filter(Self.a, .notEqual, 1)
        }
        Self.expectInvalid("You cannot use more than one '!=' filter.") {
            try c.filter(Self.a, .notEqual, 1).filter(Self.b, .notEqual, 2)
        }
        Self.expectInvalid("You cannot use 'in' filters with 'not-in' filters.") {
            try c.filter(Self.a, .notIn, [1]).filter(Self.b, .in, [2])
        }
        Self.expectInvalid("You cannot use 'not-in' filters with 'array-contains-any' filters.") {
            try c.filter(Self.a, .arrayContainsAny, [1]).filter(Self.b, .notIn, [2])
        }
        Self.expectInvalid("You cannot use 'not-in' filters with 'or' filters.") {
            try c.filter(.or([.where(Self.a, .equal, 1), .where(Self.b, .equal, 2)])).filter(F.field("c"), .notIn, [2])
        }
        Self.expectInvalid("You cannot use 'not-in' filters with 'or' filters.") {
            try c.filter(F.field("c"), .notIn, [2]).filter(.and([.where(Self.a, .equal, 1), .or([.where(Self.b, .equal, 2), .where(Self.a, .equal, 3)])]))
        }
        // Allowed combinations.
        #expect(F.error { try c.filter(Self.a, .arrayContains, 1).filter(Self.b, .in, [2]) } == nil)
        #expect(F.error { try c.filter(Self.a, .arrayContainsAny, [1]).filter(Self.b, .in, [2]) } == nil)
        #expect(F.error { try c.filter(Self.a, .notIn, [1]).filter(Self.b, .greaterThan, 2).filter(Self.a, .equal, 3) } == nil)
    }

    @Test func multipleInequalityFieldsAreAllowed() throws {
        let q = try F.coll("c").filter(Self.a, .greaterThan, 1).filter(Self.b, .lessThan, 5).filter(F.field("c"), .notEqual, 0)
        #expect(q.inequalityFilterFields.count == 3)
        // The old "first order by must be the inequality field" rule is not enforced.
        let ordered = try F.coll("c").order(by: F.field("z")).filter(Self.a, .greaterThan, 1)
        #expect(ordered.normalizedOrderBys.map(\.field.canonicalString) == ["z", "a", "__name__"])
    }

    @Test func keyFilters() throws {
        let c = F.coll("c")
        Self.expectInvalid("You can't perform 'array-contains' queries on document ID since document IDs are not arrays.") {
            try c.filter(Self.name, .arrayContains, "x")
        }
        Self.expectInvalid("You can't perform 'array-contains-any' queries on document ID") {
            try c.filter(Self.name, .arrayContainsAny, ["x"])
        }
        Self.expectInvalid("you must provide a valid string or reference, but it was of type: integer.") {
            try c.filter(Self.name, .equal, 1)
        }
        Self.expectInvalid("you must provide a valid document ID, but it was an empty string.") {
            try c.filter(Self.name, .equal, "")
        }
        Self.expectInvalid("you must provide a plain document ID, but 'x/y/z' contains a '/' character.") {
            try c.filter(Self.name, .equal, "x/y/z")
        }
        Self.expectInvalid("the document must be in the collection 'c', but 'd/x' is not.") {
            try c.filter(Self.name, .equal, F.ref("d/x"))
        }
        Self.expectInvalid("the document must be in the collection 'c', but 'c/x/s/y' is not.") {
            try c.filter(Self.name, .in, [F.ref("c/a"), F.ref("c/x/s/y")])
        }
        Self.expectInvalid("it was of type: boolean") { try c.filter(Self.name, .notIn, ["a", true]) }
        Self.expectInvalid("but 'x/y/z' is not because it has an odd number of segments.") {
            try Query(collectionGroup: "g").filter(Self.name, .greaterThan, "x/y/z")
        }
        // Strings become references; `in` lists are converted element by element.
        let q = try c.filter(Self.name, .in, ["a", F.ref("c/b")])
        #expect(q.filters[0].fieldFilter?.value == [F.ref("c/a"), F.ref("c/b")])
        #expect(q.matches(F.doc("c/a")) && q.matches(F.doc("c/b")) && !q.matches(F.doc("c/z")))
        let g = try Query(collectionGroup: "g").filter(Self.name, .equal, "x/y/g/z")
        #expect(g.filters[0].fieldFilter?.value == F.ref("x/y/g/z"))
        #expect(g.matches(F.doc("x/y/g/z")))
        let range = try c.filter(Self.name, .greaterThanOrEqual, "m")
        #expect(F.keys(range.results(from: [F.doc("c/a"), F.doc("c/m"), F.doc("c/z")])) == ["c/m", "c/z"])
    }

    @Test func documentQueriesCannotBeRefined() {
        let d = Query(document: F.key("c/d"))
        Self.expectInvalid("A document query cannot have filters") { try d.filter(Self.a, .equal, 1) }
        Self.expectInvalid("A document query cannot be ordered") { try d.order(by: Self.a) }
        Self.expectInvalid("A document query cannot have cursors") { try d.start(at: [1]) }
        #expect(F.error { try d.limit(to: 1) } == nil)
    }

    @Test func queryRoots() {
        #expect(F.error { try Query(collection: "c/d") }?.message.contains("odd number of segments") == true)
        #expect(F.error { try Query(collection: "") }?.message.contains("odd number of segments") == true)
        #expect(F.error { try Query(collectionGroup: "a/b") }?.message.contains("must not contain '/'") == true)
        #expect(F.error { try Query(collectionGroup: "") }?.message.contains("must be non-empty") == true)
        #expect(F.error { try Query(collectionGroup: "__x__") }?.message.contains("reserved") == true)
        #expect(F.error { try Query(collectionGroup: "g", parent: ResourcePath("c")) }?.message.contains("is a collection path") == true)
    }

    @Test func orderByRules() throws {
        let c = try F.coll("c").order(by: Self.a)
        Self.expectInvalid("You must not specify a starting point before specifying the order by.") {
            try c.start(at: [1]).order(by: Self.b)
        }
        Self.expectInvalid("You must not specify an ending point before specifying the order by.") {
            try c.end(at: [1]).order(by: Self.b)
        }
        Self.expectInvalid("The query is already ordered by 'a'") { try c.order(by: Self.a, descending: true) }
        Self.expectInvalid("'~' is not allowed in a field path") { try c.order(by: "a~b") }
    }

    @Test func valueCursors() throws {
        let c = try F.coll("c").order(by: Self.a)
        Self.expectInvalid("more values (2) than were specified in the order by (1) in start(at:)") { try c.start(at: [1, 2]) }
        Self.expectInvalid("more values (1) than were specified in the order by (0) in end(before:)") {
            try F.coll("c").filter(Self.a, .greaterThan, 1).end(before: [1])
        }
        Self.expectInvalid("start(after:) needs at least one value.") { try c.start(after: []) }
        let byKey = try F.coll("c").order(by: Self.name)
        Self.expectInvalid("it was of type: integer") { try byKey.start(at: [1]) }
        Self.expectInvalid("must provide a plain document ID, but 'a/b' contains a '/' character.") { try byKey.end(at: ["a/b"]) }
        #expect(try byKey.end(at: ["a"]).endAt?.position == [F.ref("c/a")])
    }

    @Test func documentCursors() throws {
        let c = try F.coll("c").order(by: Self.a)
        Self.expectInvalid("the field 'a' (used as the order by) does not exist.") { try c.start(atDocument: F.doc("c/x", ["b": 1])) }
        let pending = Value.pendingServerTimestamp(localWriteTime: try Timestamp(seconds: 1), previous: nil)
        Self.expectInvalid("the field 'a' is an uncommitted server timestamp.") { try c.end(beforeDocument: F.doc("c/x", ["a": pending])) }
        // A filter that adds an implicit order by would misalign a document cursor.
        let atDoc = try c.start(atDocument: F.doc("c/x", ["a": 1]))
        Self.expectInvalid("would misalign the cursor") { try atDoc.filter(Self.b, .greaterThan, 1) }
        #expect(F.error { try atDoc.filter(Self.b, .equal, 1) } == nil)
        #expect(F.error { try atDoc.filter(Self.a, .greaterThan, 0) } == nil, "a is already ordered")
        #expect(F.error { try c.start(at: [1]).filter(Self.b, .greaterThan, 1) } == nil, "value cursors only cover explicit orders")
    }

    @Test func errorsNameTheFilter() {
        let error = F.error { try F.coll("c").filter(Self.a, .in, []) }
        #expect(error?.location == "filter a in")
        #expect(error?.description.hasPrefix("invalidArgument: Invalid query.") == true)
    }
}

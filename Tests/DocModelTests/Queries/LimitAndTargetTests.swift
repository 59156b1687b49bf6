import Testing
@testable import DocModel
import DocTestTraits

private typealias F = QueryFixtures

@Suite("Limits and targets", .cpuBound)
struct LimitAndTargetTests {
    static let a = F.field("a")
    static let docs = (1...6).map { F.doc("c/\($0)", ["a": .integer(Int64($0))]) }

    @Test func limitToFirstAndLast() throws {
        let q = try F.coll("c").order(by: Self.a)
        #expect(F.keys(try q.limit(to: 2).results(from: Self.docs.shuffled())) == ["c/1", "c/2"])
        #expect(F.keys(try q.limit(toLast: 2).results(from: Self.docs.shuffled())) == ["c/5", "c/6"])
        #expect(F.keys(try q.limit(toLast: 10).results(from: Self.docs)).count == 6)
        #expect(try q.limit(to: 2).hasLimit)
        #expect(try !q.limit(to: 2).hasLimitToLast)
        #expect(try q.limit(toLast: 2).hasLimitToLast)
        #expect(try q.limit(toLast: 2).limit(to: 3).limitType == .first, "a later limit replaces the earlier")
        #expect(!q.hasLimit && q.limitType == .first)
    }

    @Test func targetOfALimitToFirstQueryKeepsOrderAndCursors() throws {
        let q = try F.coll("c").order(by: Self.a, descending: true).limit(to: 3).start(at: [5]).end(before: [1])
        let t = try q.toTarget()
        #expect(t.orderBys == q.normalizedOrderBys)
        #expect(t.startAt == q.startAt && t.endAt == q.endAt)
        #expect(t.limit == 3)
        #expect(t.path == q.path && t.collectionGroup == nil && t.filters == q.filters && !t.includeDeleted)
    }

    @Test func limitToLastTargetFlipsOrderAndSwapsCursors() throws {
        let q = try F.coll("c").filter(Self.a, .notEqual, 4).order(by: Self.a)
            .limit(toLast: 2).start(at: [2]).end(before: [6])
        let t = try q.toTarget()
        #expect(t.orderBys == [OrderBy(Self.a, .descending), OrderBy(.documentID, .descending)])
        #expect(t.startAt == Bound(position: [6], inclusive: false))
        #expect(t.endAt == Bound(position: [2], inclusive: true))
        #expect(t.limit == 2)
        #expect(t.filters == q.filters)
        // The query keeps the last two of 2, 3, 5 in ascending order; the target yields the
        // first two in its (descending) order.
        #expect(F.keys(q.results(from: Self.docs)) == ["c/3", "c/5"])
        let viaTarget = Self.docs.filter(t.matches).sorted { t.compare($0, $1) < 0 }.prefix(2)
        #expect(F.keys(viaTarget.reversed()) == ["c/3", "c/5"])
        for d in Self.docs { #expect(t.matches(d) == q.matches(d), "\(d.key)") }
    }

    @Test func limitToLastNeedsAnExplicitOrderBy() throws {
        let q = try F.coll("c").filter(Self.a, .greaterThan, 1).limit(toLast: 2)
        let error = F.error { try q.toTarget() }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("limit(toLast:) queries require specifying at least one order by") == true, "\(String(describing: error))")
        #expect(F.error { try q.validateForExecution() } != nil)
        // Adding the order by later is fine: the check runs on use.
        #expect(F.error { try q.order(by: Self.a).toTarget() } == nil)
        #expect(F.error { try F.coll("c").limit(to: 2).toTarget() } == nil)
    }

    @Test func documentQueryTarget() throws {
        let q = Query(document: F.key("c/1"))
        #expect(q.isDocumentQuery)
        let t = try q.toTarget()
        #expect(t.isDocumentQuery)
        #expect(t.matches(Self.docs[0]) && !t.matches(Self.docs[1]))
        #expect(!F.coll("c").isDocumentQuery)
        #expect(!(try q.toTarget().canonicalID.isEmpty))
    }
}

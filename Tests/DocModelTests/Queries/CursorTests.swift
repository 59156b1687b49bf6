import Testing
@testable import DocModel
import DocTestTraits

private typealias F = QueryFixtures

@Suite("Query cursors", .cpuBound)
struct CursorTests {
    static let a = F.field("a"), b = F.field("b")
    /// c/1…c/5 with a = 1…5.
    static let five = (1...5).map { F.doc("c/\($0)", ["a": .integer(Int64($0))]) }
    /// Two documents per value of `a`: c/x1, c/y1 (a = 1), c/x2, c/y2 (a = 2), c/x3, c/y3 (a = 3).
    static let pairs = (1...3).flatMap { i in ["x", "y"].map { F.doc("c/\($0)\(i)", ["a": .integer(Int64(i))]) } }

    static func run(_ q: Query, _ docs: [Document] = five) -> [String] { F.keys(q.results(from: docs.shuffled())) }

    @Test func ascendingValueCursors() throws {
        let q = try F.coll("c").order(by: Self.a)
        #expect(Self.run(try q.start(at: [2])) == ["c/2", "c/3", "c/4", "c/5"])
        #expect(Self.run(try q.start(after: [2])) == ["c/3", "c/4", "c/5"])
        #expect(Self.run(try q.end(at: [4])) == ["c/1", "c/2", "c/3", "c/4"])
        #expect(Self.run(try q.end(before: [4])) == ["c/1", "c/2", "c/3"])
        #expect(Self.run(try q.start(after: [1]).end(before: [5])) == ["c/2", "c/3", "c/4"])
        #expect(Self.run(try q.start(at: [2.5])) == ["c/3", "c/4", "c/5"])
        #expect(Self.run(try q.start(at: [2.0])) == ["c/2", "c/3", "c/4", "c/5"], "2.0 is at 2")
        #expect(Self.run(try q.start(at: [4]).end(at: [2])).isEmpty)
        // Values of a later type order sort after every number.
        #expect(Self.run(try q.start(at: ["x"])).isEmpty)
        #expect(Self.run(try q.end(before: ["x"])).count == 5)
    }

    @Test func descendingValueCursors() throws {
        let q = try F.coll("c").order(by: Self.a, descending: true)
        #expect(Self.run(q) == ["c/5", "c/4", "c/3", "c/2", "c/1"])
        #expect(Self.run(try q.start(at: [4])) == ["c/4", "c/3", "c/2", "c/1"])
        #expect(Self.run(try q.start(after: [4])) == ["c/3", "c/2", "c/1"])
        #expect(Self.run(try q.end(at: [2])) == ["c/5", "c/4", "c/3", "c/2"])
        #expect(Self.run(try q.start(at: [4]).end(before: [2])) == ["c/4", "c/3"])
    }

    @Test func cursorsWithFewerValuesThanOrderBys() throws {
        let q = try F.coll("c").order(by: Self.a).order(by: FieldPath.documentID)
        #expect(Self.run(try q.start(at: [2]), Self.pairs) == ["c/x2", "c/y2", "c/x3", "c/y3"])
        #expect(Self.run(try q.start(after: [2]), Self.pairs) == ["c/x3", "c/y3"])
    }

    @Test func keyCursorValues() throws {
        let q = try F.coll("c").order(by: Self.a).order(by: FieldPath.documentID)
        // A document id string is turned into a reference under the queried collection.
        let afterX2 = try q.start(after: [2, "x2"])
        #expect(afterX2.startAt?.position == [2, F.ref("c/x2")])
        #expect(Self.run(afterX2, Self.pairs) == ["c/y2", "c/x3", "c/y3"])
        #expect(Self.run(try q.start(at: [2, F.ref("c/y2")]), Self.pairs) == ["c/y2", "c/x3", "c/y3"])
        #expect(Self.run(try q.end(before: [3, "y3"]), Self.pairs) == ["c/x1", "c/y1", "c/x2", "c/y2", "c/x3"])
        #expect(Self.run(try q.end(at: [1, "x1"]), Self.pairs) == ["c/x1"])
        // Ordering by the key alone.
        let byKey = try F.coll("c").order(by: FieldPath.documentID, descending: true)
        // Keys order by segment: x1 < x2 < x3 < y1 < y2 < y3.
        #expect(Self.run(try byKey.start(after: ["y2"]), Self.pairs) == ["c/y1", "c/x3", "c/x2", "c/x1"])
    }

    @Test func documentCursorsUseTheImplicitKey() throws {
        let q = try F.coll("c").order(by: Self.a)
        let x2 = Self.pairs[2]
        #expect(x2.key.description == "c/x2")
        let after = try q.start(afterDocument: x2)
        #expect(after.startAt == Bound(position: [2, F.ref("c/x2")], inclusive: false))
        #expect(Self.run(after, Self.pairs) == ["c/y2", "c/x3", "c/y3"])
        #expect(Self.run(try q.start(atDocument: x2), Self.pairs) == ["c/x2", "c/y2", "c/x3", "c/y3"])
        #expect(Self.run(try q.end(beforeDocument: x2), Self.pairs) == ["c/x1", "c/y1"])
        #expect(Self.run(try q.end(atDocument: x2), Self.pairs) == ["c/x1", "c/y1", "c/x2"])
        // Descending: the implicit key is descending too.
        let desc = try F.coll("c").order(by: Self.a, descending: true)
        #expect(Self.run(try desc.start(afterDocument: Self.pairs[3]), Self.pairs) == ["c/x2", "c/y1", "c/x1"])
    }

    @Test func pagingWithDocumentCursorsVisitsEveryResultOnce() throws {
        let docs = (0..<23).map { F.doc("c/\($0)", ["a": .integer(Int64($0 % 4)), "b": .integer(Int64($0 % 3))]) }
        let base = try F.coll("c").order(by: Self.a, descending: true).order(by: Self.b)
        var seen: [String] = []
        var page = try base.limit(to: 5)
        while true {
            let results = page.results(from: docs)
            seen += F.keys(results)
            guard let last = results.last, results.count == 5 else { break }
            page = try base.limit(to: 5).start(afterDocument: last)
        }
        #expect(seen == F.keys(base.results(from: docs)))
        #expect(Set(seen).count == 23)
    }

    @Test func boundComparisons() {
        let order = [OrderBy(Self.a), OrderBy(.documentID)]
        let document = F.doc("c/m", ["a": 2])
        let at = Bound(position: [2], inclusive: true)
        let after = Bound(position: [2], inclusive: false)
        #expect(at.sortsBeforeDocument(document, orderBys: order))
        #expect(!after.sortsBeforeDocument(document, orderBys: order))
        #expect(at.sortsAfterDocument(document, orderBys: order))
        #expect(!after.sortsAfterDocument(document, orderBys: order))
        #expect(Bound(position: [2, F.ref("c/a")], inclusive: false).sortsBeforeDocument(document, orderBys: order))
        #expect(!Bound(position: [2, F.ref("c/z")], inclusive: true).sortsBeforeDocument(document, orderBys: order))
        #expect(Bound(position: [1], inclusive: true).compare(to: document, orderBys: order) == -1)
        #expect(Bound(position: [3], inclusive: true).compare(to: document, orderBys: [OrderBy(Self.a, .descending)]) == -1)
        #expect(at.compare(to: F.doc("c/n"), orderBys: order) == nil, "missing field")
        #expect(!at.sortsBeforeDocument(F.doc("c/n"), orderBys: order))
    }
}

import Testing
@testable import DocCache
import DocModel
import DocTestTraits

@Suite("DocumentViewChangeSet", .cpuBound)
struct DocumentViewChangeSetTests {
    typealias F = ViewFixtures
    typealias Kind = DocumentViewChange.Kind

    struct Row: CustomTestStringConvertible, Sendable {
        let first: Kind
        let then: Kind
        /// The merged kind, or `nil` for "no change".
        let result: Kind?
        /// Whether the merged change carries the first document (else the second).
        let keepsFirstDocument: Bool

        var testDescription: String { "\(first) then \(then)" }
    }

    static let table: [Row] = [
        Row(first: .added, then: .modified, result: .added, keepsFirstDocument: false),
        Row(first: .added, then: .metadata, result: .added, keepsFirstDocument: false),
        Row(first: .added, then: .removed, result: nil, keepsFirstDocument: false),
        Row(first: .modified, then: .modified, result: .modified, keepsFirstDocument: false),
        Row(first: .modified, then: .metadata, result: .modified, keepsFirstDocument: false),
        Row(first: .modified, then: .removed, result: .removed, keepsFirstDocument: true),
        Row(first: .metadata, then: .modified, result: .modified, keepsFirstDocument: false),
        Row(first: .metadata, then: .metadata, result: .metadata, keepsFirstDocument: false),
        Row(first: .metadata, then: .removed, result: .removed, keepsFirstDocument: false),
        Row(first: .removed, then: .added, result: .modified, keepsFirstDocument: false),
    ]

    @Test(arguments: table)
    func coalesces(_ row: Row) {
        let v1 = F.doc("rooms/a", 1, ["n": 1])
        let v2 = F.doc("rooms/a", 2, ["n": 2])
        var set = DocumentViewChangeSet()
        set.add(DocumentViewChange(row.first, v1))
        set.add(DocumentViewChange(row.then, v2))
        if let kind = row.result {
            #expect(set.changes == [DocumentViewChange(kind, row.keepsFirstDocument ? v1 : v2)])
        } else {
            #expect(set.isEmpty)
            #expect(set.changes.isEmpty)
        }
    }

    @Test func keepsOneChangePerDocumentInKeyOrder() {
        var set = DocumentViewChangeSet()
        set.add(DocumentViewChange(.added, F.doc("rooms/c", 1)))
        set.add(DocumentViewChange(.removed, F.doc("rooms/a", 1)))
        set.add(DocumentViewChange(.modified, F.doc("rooms/b", 1)))
        set.add(DocumentViewChange(.modified, F.doc("rooms/c", 2)))
        #expect(set.count == 3)
        #expect(F.describe(set.changes) == ["removed:rooms/a", "modified:rooms/b", "added:rooms/c"])
        #expect(set.change(for: F.key("rooms/c")) == DocumentViewChange(.added, F.doc("rooms/c", 2)))
    }

    @Test func sortsForASnapshotByKindThenQueryOrder() throws {
        let query = try Query(collection: "rooms").order(by: "n", descending: true)
        var set = DocumentViewChangeSet()
        set.add(DocumentViewChange(.metadata, F.doc("rooms/m1", 1, ["n": 5])))
        set.add(DocumentViewChange(.added, F.doc("rooms/a1", 1, ["n": 1])))
        set.add(DocumentViewChange(.modified, F.doc("rooms/x1", 1, ["n": 9])))
        set.add(DocumentViewChange(.removed, F.doc("rooms/r1", 1, ["n": 0])))
        set.add(DocumentViewChange(.added, F.doc("rooms/a2", 1, ["n": 7])))
        set.add(DocumentViewChange(.removed, F.doc("rooms/r2", 1, ["n": 3])))
        let sorted = set.changes(sortedBy: DocumentSet(query: query))
        // Removed, added, then modified and metadata together, each by `n` descending.
        #expect(F.describe(sorted) == [
            "removed:rooms/r2", "removed:rooms/r1", "added:rooms/a2", "added:rooms/a1",
            "modified:rooms/x1", "metadata:rooms/m1",
        ])
    }
}

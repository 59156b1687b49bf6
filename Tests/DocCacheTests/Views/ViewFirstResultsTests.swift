import Testing
@testable import DocCache
import DocModel
import DocTestTraits

/// An empty view computes its first results in bulk (sorted once, cut to the limit, all
/// added). Starting from an explicit empty outcome (`previousChanges`) takes the general,
/// one-document-at-a-time computation instead, so the two can be compared.
@Suite("View first results", .cpuBound)
struct ViewFirstResultsTests {
    typealias F = ViewFixtures

    static func empty(_ query: Query) -> ViewDocumentChanges {
        ViewDocumentChanges(documentSet: DocumentSet(query: query), changeSet: DocumentViewChangeSet(), mutatedKeys: [], needsRefill: false)
    }

    static func queries() throws -> [Query] {
        let messages = F.query("rooms/eros/messages")
        return [
            messages,
            try messages.order(by: "n"),
            try messages.order(by: "n", descending: true).limit(to: 3),
            try messages.order(by: "n").limit(toLast: 4),
            try messages.filter("tag", .equal, .string("x")).order(by: "n", descending: true).limit(to: 5),
        ]
    }

    @Test func bulkFirstResultsEqualTheGeneralComputation() throws {
        let seed: UInt64 = 0xF125_7E5
        for iteration in 0..<300 {
            var random = PersistenceRNG(seed: seed &+ UInt64(iteration))
            var candidates: [Document] = []
            for i in 0..<random.int(0..<25) {
                var fields: [String: Value] = [:]
                if random.chance(0.85) { fields["n"] = .integer(Int64(random.int(0..<6))) }
                fields["tag"] = .string(random.pick(["x", "y"]))
                // Another collection's documents and tombstones do not match.
                let path = random.chance(0.1) ? "rooms/other/messages/m\(i)" : "rooms/eros/messages/m\(random.int(0..<1000))"
                var document = F.doc(path, Int64(i + 1), fields, local: random.chance(0.3), committed: random.chance(0.2))
                if random.chance(0.1) { document = F.tombstoned(document, version: Int64(i + 1)) }
                candidates.append(document)
            }
            // Keys are distinct here, as the local store's results are.
            var seen = Set<DocumentKey>()
            candidates = candidates.filter { seen.insert($0.key).inserted }
            for query in try Self.queries() {
                let bulk = View(query: query, remoteDocuments: []).computeDocumentChanges(candidates)
                let general = View(query: query, remoteDocuments: [])
                    .computeDocumentChanges(candidates, previousChanges: Self.empty(query))
                let context = "seed \(seed), iteration \(iteration), \(query.canonicalID)"
                #expect(bulk.documentSet == general.documentSet, "\(context)")
                #expect(bulk.mutatedKeys == general.mutatedKeys, "\(context)")
                #expect(bulk.changeSet == general.changeSet, "\(context)")
                #expect(bulk.changeSet.changes(sortedBy: bulk.documentSet) == general.changeSet.changes(sortedBy: general.documentSet), "\(context)")
                #expect(!bulk.needsRefill)
            }
        }
    }

    @Test func aFirstSnapshotReportsEveryResultAddedInOrder() throws {
        let query = try F.query("rooms/eros/messages").order(by: "n", descending: true).limit(to: 2)
        let docs = (0..<5).map { F.doc("rooms/eros/messages/m\($0)", 1, ["n": .integer(Int64($0))]) }
        let view = View(query: query, remoteDocuments: [])
        let snapshot = try #require(view.applyChanges(view.computeDocumentChanges(docs.shuffled())).snapshot)
        #expect(snapshot.documents.documents.map(\.key) == [docs[4].key, docs[3].key])
        #expect(snapshot.documentChanges == [DocumentViewChange(.added, docs[4]), DocumentViewChange(.added, docs[3])])
        // The view keeps the results: a later change is computed against them.
        let next = view.computeDocumentChanges([F.doc("rooms/eros/messages/m9", 2, ["n": 9])])
        #expect(next.changeSet.changes(sortedBy: next.documentSet).map(\.kind) == [.removed, .added])
    }
}

import Testing
import DocModel
@testable import DocCache
import DocTestSupport

/// The query engine answers limited, ordered queries by walking a field index; whatever path
/// it takes, the results must equal "filter every local document, sort, take the limit".
@Suite("Cache queries agree with a full evaluation")
struct CacheQueryTests {
    typealias Generator = SplitMix64

    static func randomScore(_ g: inout Generator) -> Value? {
        switch Int.random(in: 0..<10, using: &g) {
        case 0: return nil                                                // field missing
        case 1: return .string(String(repeating: "z", count: 1_600 + Int.random(in: 0..<50, using: &g)))  // unindexable
        case 2: return .string("t\(Int.random(in: 0..<20, using: &g))")
        case 3: return .double(Double(Int.random(in: 0..<40, using: &g)) / 2)
        case 4: return .null
        default: return .integer(Int64.random(in: 0..<40, using: &g))
        }
    }

    /// A store of 300 server documents in `items` (a `group`, a random `score`), with 40
    /// pending writes on top: changed scores, new documents, deletes and tombstones; the
    /// overlays indexed after the `indexingOverlaysAfter`-th when given.
    static func seededStore(at path: String, indexingOverlaysAfter: Int? = nil, using g: inout Generator)
        async throws -> DocumentStore {
        let store = try await DocumentStore.open(directory: path, tenant: "t", user: "u")
        var docs: [Document] = []
        for i in 0..<300 {
            var fields: [String: Value] = ["group": .integer(Int64(i % 3))]
            if let score = Self.randomScore(&g) { fields["score"] = score }
            docs.append(Document(key: try DocumentKey("items/d\(i)"), data: ObjectValue(fields),
                                 version: SnapshotVersion(microseconds: 10)))
        }
        try await store.core.loadRemoteDocuments(docs, version: SnapshotVersion(microseconds: 10))
        for i in 0..<40 {
            let ref = try store.document("items/d\(Int.random(in: 0..<330, using: &g))")
            switch i % 4 {
            case 0: try await ref.setData(["group": 1, "score": .value(.integer(Int64.random(in: 0..<40, using: &g)))])
            case 1: try await ref.setData(["score": .value(Self.randomScore(&g) ?? .null)], merge: true)
            case 2: try await ref.delete()
            default: try await ref.purge()
            }
            if i == indexingOverlaysAfter { try await store.core.indexOverlaysNow() }
        }
        return store
    }

    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func limitedQueriesMatchAFullEvaluation(seed: UInt64) async throws {
        var g = Generator(seed: seed)
        let dir = TemporaryDirectory("cache-query")
        let store = try await Self.seededStore(at: dir.path, using: &g)
        let all = try await store.collection("items").includeDeleted().getDocuments(source: .cache)
        let local = all.documents.compactMap(\.document)

        for (descending, op, value, limit) in [
            (false, nil, nil, 15), (true, nil, nil, 15), (false, FieldFilter.Operator.greaterThan, Value.integer(20), 10),
            (true, .lessThanOrEqual, .integer(10), 7), (false, .greaterThanOrEqual, .string("t"), 5),
            (false, .equal, .integer(3), 50),
        ] as [(Bool, FieldFilter.Operator?, Value?, Int)] {
            var query = try store.collection("items").order(by: "score", descending: descending)
            if let op, let value { query = try query.whereField("score", op, value) }
            for limited in [try query.limit(to: limit), try query.limit(toLast: limit)] {
                let snapshot = try await limited.getDocuments(source: .cache)
                let actual = snapshot.ids
                let expected = limited.query.results(from: local).map(\.key.documentID)
                #expect(actual == expected, "seed \(seed): \(limited.query.canonicalID)")
                // Whole documents, not only which: pending writes' fields included.
                #expect(snapshot.documents.map { $0.data() } == limited.query.results(from: local).map(\.data.fields))
            }
        }
        // Pages after a document (the walk starts at its row), and before one (`limit(toLast:)`
        // turns an end cursor into the target's start).
        for snapshot in all.documents where snapshot.document != nil && Int.random(in: 0..<15, using: &g) == 0 {
            for descending in [false, true] {
                let ordered = try store.collection("items").order(by: "score", descending: descending)
                // A document without the sort field cannot be a cursor (refused: skipped).
                for limited in [try? ordered.start(afterDocument: snapshot).limit(to: 15),
                                try? ordered.start(atDocument: snapshot).limit(to: 15),
                                try? ordered.end(beforeDocument: snapshot).limit(toLast: 15)].compactMap({ $0 }) {
                    let actual = try await limited.getDocuments(source: .cache).ids
                    #expect(actual == limited.query.results(from: local).map(\.key.documentID), "seed \(seed): \(limited.query.canonicalID)")
                }
            }
        }
        await store.close()
    }

    /// `==` queries in document-id order walk the rows of that one value (``EqualityPlan``),
    /// limited or not, and a count from the cache folds what the walk finds: both must equal a
    /// full evaluation, with pending writes, deletes, tombstones, values too large to index and
    /// cursors; the count's `hasPendingWrites` says whether a result has a pending write.
    @Test(arguments: [5, 6, 7] as [UInt64])
    func equalityQueriesAndCacheCountsMatchAFullEvaluation(seed: UInt64) async throws {
        var g = Generator(seed: seed)
        let dir = TemporaryDirectory("cache-equality")
        // Half the histories query with the overlays indexed, half with them still above the
        // index's watermark.
        let store = try await Self.seededStore(at: dir.path, indexingOverlaysAfter: seed % 2 == 0 ? 20 : nil, using: &g)
        let all = try await store.collection("items").includeDeleted().getDocuments(source: .cache)
        let local = all.documents.compactMap(\.document)
        var values: [Value] = [.null, .integer(3), .double(3), .string("t4"), .string(String(repeating: "z", count: 1_600))]
        for _ in 0..<6 { values.append(Self.randomScore(&g) ?? .integer(1)) }
        // Values of documents with pending writes, so that some results have them.
        values += local.filter { $0.hasLocalMutations }.prefix(3).compactMap { $0.data["score"] }
        var walked = 0, countsWithPendingWrites = 0
        for value in values {
            let equal = try store.collection("items").whereField("score", .equal, value)
            for (query, ordered) in [(equal, false), (try equal.whereField("group", .equal, .integer(1)), false),
                                     (try equal.order(by: "__name__", descending: true), true)] {
                if EqualityPlan(target: try query.query.toTarget()) != nil { walked += 1 }
                // `limit(toLast:)` needs an explicit order.
                for limited in [query, try query.limit(to: 7)] + (ordered ? [try query.limit(toLast: 7)] : []) {
                    let snapshot = try await limited.getDocuments(source: .cache)
                    let expected = limited.query.results(from: local)
                    #expect(snapshot.ids == expected.map(\.key.documentID), "seed \(seed): \(limited.query.canonicalID)")
                    #expect(snapshot.documents.map { $0.data() } == expected.map(\.data.fields))
                    let counted = try await limited.aggregate([try AggregateField.count()], source: .cache)
                    #expect(counted.count == Int64(expected.count), "seed \(seed): count of \(limited.query.canonicalID)")
                    #expect(counted.metadata.hasPendingWrites == expected.contains { $0.hasLocalMutations },
                            "seed \(seed): pending writes of \(limited.query.canonicalID)")
                    if counted.metadata.hasPendingWrites { countsWithPendingWrites += 1 }
                }
            }
            // A page after a result, in document-id order.
            if let first = try await equal.limit(to: 1).getDocuments(source: .cache).documents.first {
                let page = try equal.start(afterDocument: first).limit(to: 5)
                #expect(try await page.getDocuments(source: .cache).ids == page.query.results(from: local).map(\.key.documentID))
            }
        }
        #expect(walked == values.count * 3)
        #expect(countsWithPendingWrites > 0)
        await store.close()
    }

    /// A start cursor on exactly (field, document) — `start(afterDocument:)` on a query
    /// ordered by the field — starts the field index's walk at the document's row, in either
    /// direction, even among rows whose values are all equal.
    @Test func aDocumentCursorStartsTheFieldWalkAtItsRow() throws {
        let cursorDocument = Document(key: try DocumentKey("items/s07"), data: ObjectValue(["score": 5]), version: .none)
        try PersistenceFixtures.withDirectory { dir in
            let p = try Persistence.open(directory: dir)
            defer { p.close() }
            try PersistenceFixtures.addDocuments((0..<15).map { i in
                PersistenceFixtures.document("items/s\(i < 10 ? "0" : "")\(i)", ["score": 5])
            }, to: p)
            for descending in [false, true] {
                let query = try Query(collection: ResourcePath("items")).order(by: "score", descending: descending)
                    .start(afterDocument: cursorDocument).limit(to: 3)
                let plan = try #require(IndexPlan(target: try query.toTarget()))
                let seed = try #require(plan.seed)
                #expect(seed.value == .integer(5) && seed.documentID == "s07")
                let collection = try ResourcePath("items")
                let ids = try p.run("walk") { txn throws(DocError) in
                    var ids: [String] = []
                    for row in p.remoteDocuments.scanIndex(
                        collection: collection, field: plan.field, lower: plan.lower, upper: plan.upper, from: plan.seed,
                        descending: plan.descending, in: txn)
                    {
                        ids.append(row.key.documentID)
                    }
                    if let failure = txn.failure { throw failure }
                    return ids
                }
                let expected = descending ? (0...7).reversed().map { "s0\($0)" } : (7..<15).map { "s\($0 < 10 ? "0" : "")\($0)" }
                #expect(ids == expected, "descending \(descending)")
            }
            // Ordered by the field, then another field: ties are not in document order, no seed.
            let other = try Query(collection: ResourcePath("items")).order(by: "score").order(by: "name")
                .start(after: [.integer(5), "x"]).limit(to: 3)
            #expect(try #require(IndexPlan(target: try other.toTarget())).seed == nil)
        }
    }
}

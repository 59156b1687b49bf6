import Testing
import DocModel
@testable import DocCache
import DocTestSupport

/// Declared composite indexes of the cache: the rows they hold, the queries they serve, their
/// build from cached documents (also across a reopen), and their removal. Whatever path a query
/// takes, its results must equal "filter every local document, sort, take the limit".
@Suite("Composite cache indexes")
struct CompositeIndexTests {
    typealias Generator = SplitMix64

    static func index(_ group: String = "items", _ fields: (String, OrderBy.Direction)...) throws -> CompositeIndex {
        try CompositeIndex(collectionGroup: group, fields: fields.map { try CompositeIndex.Field($0.0, $0.1) })
    }

    static func documents(count: Int, seed: UInt64, collection: String = "items") throws -> [Document] {
        var g = Generator(seed: seed)
        var docs: [Document] = []
        for i in 0..<count {
            var fields: [String: Value] = ["group": .integer(Int64(i % 3))]
            if let score = CacheQueryTests.randomScore(&g) { fields["score"] = score }
            if Int.random(in: 0..<4, using: &g) > 0 { fields["tag"] = .string("t\(Int.random(in: 0..<3, using: &g))") }
            docs.append(Document(key: try DocumentKey("\(collection)/d\(i)"), data: ObjectValue(fields),
                                 version: SnapshotVersion(microseconds: 10)))
        }
        return docs
    }

    /// The rows of the store's composite indexes (0x16 and 0x18).
    static func rowCount(_ store: DocumentStore) async throws -> Int {
        try await store.core.compositeIndexRowCount()
    }

    @Test func rejectsMalformedDeclarations() throws {
        #expect(throws: DocError.self) { try CompositeIndex(collectionGroup: "items", fields: [try .init("a")]) }
        #expect(throws: DocError.self) { try Self.index("", ("a", .ascending), ("b", .ascending)) }
        #expect(throws: DocError.self) { try Self.index("a/b", ("a", .ascending), ("b", .ascending)) }
        #expect(throws: DocError.self) { try Self.index("items", ("a", .ascending), ("a", .descending)) }
        #expect(throws: DocError.self) { try Self.index("items", ("a", .ascending), ("__name__", .ascending)) }
        do {
            _ = try Self.index("items", ("a", .ascending), ("a", .descending))
        } catch let error as DocError {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("appears twice"))
        }
        // The id names the collection, fields and directions; equal declarations share it.
        let a = try Self.index("items", ("category", .ascending), ("score", .descending))
        #expect(a.id == "items(category asc,score desc)")
        #expect(a.id == (try Self.index("items", ("category", .ascending), ("score", .descending))).id)
        #expect(a.id != (try Self.index("items", ("category", .ascending), ("score", .ascending))).id)
    }

    @Test func plansOnlyQueriesTheIndexServes() throws {
        let index = try Self.index("items", ("group", .ascending), ("score", .descending))
        func plan(_ build: (Query) throws -> Query) throws -> CompositeIndexPlan? {
            let query = try build(try Query(collection: ResourcePath("items")))
            return CompositeIndexPlan(target: try query.toTarget(), indexes: [index])
        }
        let forward = try plan { try $0.filter("group", .equal, 1).order(by: "score", descending: true).limit(to: 5) }
        #expect(forward?.reverse == false)
        #expect(forward?.leading == [.integer(1)])
        let backward = try plan { try $0.filter("group", .equal, 1).order(by: "score").limit(to: 5) }
        #expect(backward?.reverse == true)
        // All equalities: the document-id order of the index (descending, from the last field).
        let byID = try plan { try $0.filter("group", .equal, 1).filter("score", .equal, 3).limit(to: 5) }
        #expect(byID?.leading == [.integer(1), .integer(3)])
        #expect(byID?.reverse == true)
        // Not served: the leading field has no equality, orders are not the trailing fields,
        // or mixed directions.
        #expect(try plan { try $0.filter("group", .greaterThan, 1).order(by: "score").limit(to: 5) } == nil)
        #expect(try plan { try $0.filter("group", .equal, 1).order(by: "tag").limit(to: 5) } == nil)
        #expect(try plan { try $0.order(by: "group").order(by: "score").limit(to: 5) } == nil)
        #expect(try plan { try $0.order(by: "group").order(by: "score", descending: true).limit(to: 5) }?.reverse == false)
    }

    @Test func aRangeOnTheFirstOrderByBoundsTheWalk() throws {
        let index = try Self.index("items", ("group", .ascending), ("score", .descending))
        let query = try Query(collection: ResourcePath("items")).filter("group", .equal, 1)
            .filter("score", .greaterThan, 10).filter("score", .lessThanOrEqual, 14).order(by: "score").limit(to: 3)
        let plan = try #require(CompositeIndexPlan(target: try query.toTarget(), indexes: [index]))
        #expect(plan.lower == IndexBound(value: .integer(10), inclusive: false))
        #expect(plan.upper == IndexBound(value: .integer(14), inclusive: true))
        // The walk reads only the rows within the range, in either field direction and walk.
        for direction in [OrderBy.Direction.ascending, .descending] {
            let index = try Self.index("items", ("group", .ascending), ("score", direction))
            let documents = (0..<20).flatMap { i in
                [PersistenceFixtures.document("items/s\(i)", ["group": 1, "score": .integer(Int64(i))]),
                 PersistenceFixtures.document("items/o\(i)", ["group": 2, "score": .integer(Int64(i))])]
            }
            try Self.withIndex(index, documents: documents) { p in
                for reverse in [false, true] {
                    let ids = try Self.walk(p, index, leading: [.integer(1)], lower: plan.lower, upper: plan.upper, reverse: reverse)
                    var expected = (11...14).map { "s\($0)" }
                    if (direction == .descending) != reverse { expected.reverse() }
                    #expect(ids == expected, "\(direction), reverse \(reverse)")
                }
            }
        }
    }

    /// Runs `body` on a fresh cache that declares `index` (complete) and holds `documents`.
    static func withIndex(_ index: CompositeIndex, documents: [MaybeDocument], _ body: (Persistence) throws -> Void) throws {
        try PersistenceFixtures.withDirectory { dir in
            let p = try Persistence.open(directory: dir)
            defer { p.close() }
            let declared = try p.run("declare") { txn throws(DocError) in try p.compositeIndexes.declare([index], in: txn).declared }
            p.compositeIndexes.commitDeclared(declared)
            try PersistenceFixtures.addDocuments(documents, to: p)
            try body(p)
        }
    }

    /// The document ids of `index`'s rows in `items` that a scan with these arguments reads.
    static func walk(
        _ p: Persistence, _ index: CompositeIndex, leading: [Value], lower: IndexBound?, upper: IndexBound?,
        from seed: CompositeIndexMatch.CursorRow? = nil, reverse: Bool
    ) throws -> [String] {
        let collection = try ResourcePath("items")
        return try p.run("walk") { txn throws(DocError) in
            var ids: [String] = []
            for row in p.compositeIndexes.scan(
                index, collection: collection, leading: leading, lower: lower, upper: upper, from: seed, reverse: reverse, in: txn)
            {
                ids.append(row.key.documentID)
            }
            if let failure = txn.failure { throw failure }
            return ids
        }
    }

    /// A start cursor naming every sort key and the document (`start(afterDocument:)`) starts
    /// the composite walk at that document's row, in either direction, even among rows whose
    /// values are all equal.
    @Test func aDocumentCursorStartsTheWalkAtItsRow() throws {
        let index = try Self.index("items", ("group", .ascending), ("score", .descending))
        let cursorDocument = Document(key: try DocumentKey("items/s07"), data: ObjectValue(["group": 1, "score": 5]), version: .none)
        for descending in [false, true] {
            let query = try Query(collection: ResourcePath("items")).filter("group", .equal, 1)
                .order(by: "score", descending: descending).start(afterDocument: cursorDocument).limit(to: 3)
            let plan = try #require(CompositeIndexPlan(target: try query.toTarget(), indexes: [index]))
            let seed = try #require(plan.seed)
            #expect(seed.values == [.integer(1), .integer(5)] && seed.key.documentID == "s07" && !seed.inclusive)
            let documents = (0..<15).map { i in PersistenceFixtures.document("items/s\(i < 10 ? "0" : "")\(i)", ["group": 1, "score": 5]) }
            try Self.withIndex(index, documents: documents) { p in
                let ids = try Self.walk(p, index, leading: plan.leading, lower: plan.lower, upper: plan.upper,
                                        from: plan.seed, reverse: plan.reverse)
                // Ties come in document-id order in the query's direction; the seed's row first.
                let expected = descending ? (0...7).reversed().map { "s0\($0)" } : (7..<15).map { "s\($0 < 10 ? "0" : "")\($0)" }
                #expect(ids == expected, "descending \(descending)")
            }
        }
    }

    /// A cursor's first value bounds the walk of the first sort key, in its direction:
    /// exclusive only when the cursor has that one value and excludes it.
    @Test func aCursorBoundsTheWalk() throws {
        let items = try Query(collection: ResourcePath("items"))
        func plan(_ build: (Query) throws -> Query) throws -> IndexPlan {
            try #require(IndexPlan(target: try build(items).toTarget()))
        }
        var p = try plan { try $0.order(by: "score").start(after: [.integer(10)]).limit(to: 5) }
        #expect(p.lower == IndexBound(value: .integer(10), inclusive: false) && p.upper == nil)
        p = try plan { try $0.order(by: "score").order(by: "name").start(after: [.integer(10), "x"]).end(at: [.integer(20)]).limit(to: 5) }
        #expect(p.lower == IndexBound(value: .integer(10), inclusive: true))
        #expect(p.upper == IndexBound(value: .integer(20), inclusive: true))
        p = try plan { try $0.order(by: "score", descending: true).start(at: [.integer(30)]).end(before: [.integer(20)]).limit(to: 5) }
        #expect(p.upper == IndexBound(value: .integer(30), inclusive: true))
        #expect(p.lower == IndexBound(value: .integer(20), inclusive: false))
        // The tighter of a filter and a cursor.
        p = try plan { try $0.filter("score", .greaterThan, .integer(12)).order(by: "score").start(at: [.integer(10)]).limit(to: 5) }
        #expect(p.lower == IndexBound(value: .integer(12), inclusive: false))
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func queriesThroughIndexesMatchAFullEvaluation(seed: UInt64) async throws {
        var g = Generator(seed: seed)
        let dir = TemporaryDirectory("composite-index")
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let docs = try Self.documents(count: 300, seed: seed)
        // One index declared before the documents arrive (maintained as they are stored), one
        // after (built from the cache).
        try await store.setIndexConfiguration([try Self.index("items", ("group", .ascending), ("score", .descending))])
        try await store.core.loadRemoteDocuments(Array(docs[..<150]), version: SnapshotVersion(microseconds: 10))
        try await store.setIndexConfiguration([
            try Self.index("items", ("group", .ascending), ("score", .descending)),
            try Self.index("items", ("tag", .ascending), ("group", .descending), ("score", .descending)),
        ])
        try await store.core.loadRemoteDocuments(Array(docs[150...]), version: SnapshotVersion(microseconds: 11))
        #expect(await store.indexConfiguration().allSatisfy(\.isComplete))
        // Server updates that move documents between groups, and pending writes on top.
        var moved = docs[0..<20].map { $0 }
        for i in moved.indices { moved[i].data = ObjectValue(["group": .integer(2), "score": .integer(Int64(i)), "tag": "t1"]) }
        try await store.core.loadRemoteDocuments(moved, version: SnapshotVersion(microseconds: 12))
        for i in 0..<40 {
            let ref = try store.document("items/d\(Int.random(in: 0..<330, using: &g))")
            switch i % 4 {
            case 0: try await ref.setData(["group": 1, "score": .value(.integer(Int64.random(in: 0..<40, using: &g))), "tag": "t0"])
            case 1: try await ref.setData(["score": .value(CacheQueryTests.randomScore(&g) ?? .null)], merge: true)
            case 2: try await ref.delete()
            default: try await ref.purge()
            }
        }
        let all = try await store.collection("items").includeDeleted().getDocuments(source: .cache)
        let local = all.documents.compactMap(\.document)
        for group in 0..<3 {
            for descending in [true, false] {
                var queries = [
                    try store.collection("items").whereField("group", isEqualTo: .integer(Int64(group)))
                        .order(by: "score", descending: descending),
                    try store.collection("items").whereField("tag", isEqualTo: .string("t\(group)"))
                        .order(by: "group", descending: descending).order(by: "score", descending: descending),
                    try store.collection("items").whereField("group", isEqualTo: .integer(Int64(group)))
                        .whereField("tag", isEqualTo: .string("t1")).order(by: "score", descending: descending),
                ]
                queries.append(try queries[0].whereField("score", .greaterThan, .integer(10)))
                // Cursors bound the walk too (a page after a cursor starts there), also the
                // single-field walk of a query no declared index serves.
                queries.append(try queries[0].start(after: [.integer(15)]))
                queries.append(try queries[0].start(at: [.integer(5)]).end(before: [.integer(30)]))
                queries.append(try queries[1].start(after: [.integer(1), .integer(20)]))
                queries.append(try store.collection("items").order(by: "score", descending: descending).start(after: [.integer(12)]))
                queries.append(try store.collection("items").order(by: "score", descending: descending).end(at: [.integer(25)]))
                // Document cursors: the composite walk starts at the cursor's row.
                for snapshot in all.documents where snapshot.document != nil && Int.random(in: 0..<20, using: &g) == 0 {
                    // A document without the sort fields cannot be a cursor (refused: skipped).
                    if let query = try? queries[0].start(afterDocument: snapshot) { queries.append(query) }
                    if let query = try? queries[1].start(atDocument: snapshot) { queries.append(query) }
                }
                for query in queries {
                    for limited in [try query.limit(to: 7), try query.limit(toLast: 7), try query.limit(to: 200)] {
                        let snapshot = try await limited.getDocuments(source: .cache)
                        let actual = snapshot.ids
                        let expected = limited.query.results(from: local).map(\.key.documentID)
                        #expect(actual == expected, "seed \(seed): \(limited.query.canonicalID)")
                        // Whole documents, not only which: pending writes' fields included.
                        #expect(snapshot.documents.map { $0.data() } == limited.query.results(from: local).map(\.data.fields))
                    }
                }
            }
        }
        // Dropping the declaration drops every row.
        #expect(try await Self.rowCount(store) > 0)
        try await store.setIndexConfiguration([])
        #expect(try await Self.rowCount(store) == 0)
        #expect(await store.indexConfiguration().isEmpty)
        await store.close()
    }

    @Test func aQueryTheIndexServesReadsItsRows() async throws {
        let dir = TemporaryDirectory("composite-index-served")
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        try await store.setIndexConfiguration([try Self.index("items", ("group", .ascending), ("score", .descending))])
        let docs = try Self.documents(count: 100, seed: 4)
        try await store.core.loadRemoteDocuments(docs, version: SnapshotVersion(microseconds: 10))
        let served = try store.collection("items").whereField("group", isEqualTo: .integer(1)).order(by: "score", descending: true).limit(to: 7)
        let notServed = try store.collection("items").whereField("tag", isEqualTo: "t1").order(by: "score").limit(to: 7)
        #expect(try await served.getDocuments(source: .cache).ids == served.query.results(from: docs).map(\.key.documentID))
        // Without its rows (the declaration kept complete) the query the index serves finds
        // nothing, while one it does not serve is unchanged: the first reads the index.
        try await store.core.deleteCompositeIndexRows()
        #expect(try await served.getDocuments(source: .cache).ids.isEmpty)
        #expect(try await notServed.getDocuments(source: .cache).ids == notServed.query.results(from: docs).map(\.key.documentID))
        await store.close()
    }

    /// The configuration file a server takes declares the same indexes on the client; a file
    /// that is not one changes nothing.
    @Test func aConfigurationFileDeclaresTheIndexes() async throws {
        let dir = TemporaryDirectory("composite-index-json")
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        try await store.setIndexConfiguration(json: """
            {"indexes": [{"collectionGroup": "items", "queryScope": "COLLECTION",
                          "fields": [{"fieldPath": "group", "order": "ASCENDING"}, {"fieldPath": "score", "order": "DESCENDING"}]}]}
            """)
        let declared = await store.indexConfiguration()
        #expect(declared.map(\.index) == [try Self.index("items", ("group", .ascending), ("score", .descending))])
        #expect(declared.allSatisfy { $0.isComplete })
        let error = await #expect(throws: DocError.self) {
            try await store.setIndexConfiguration(json: #"{"indexes": [{"collectionGroup": "items", "fields": [{"fieldPath": "group"}]}]}"#)
        }
        #expect(error?.code == .invalidArgument && error?.message.contains("indexes[0].fields[0].order") == true, "\(String(describing: error))")
        #expect(await store.indexConfiguration().map(\.index) == declared.map(\.index))
        await store.close()
    }

    @Test func aBuildStepThatCannotCommitIsDoneAgain() async throws {
        let dir = TemporaryDirectory("composite-index-fault")
        let count = ClientCore.compositeIndexBackfillStep * 2 + 10
        let docs = try Self.documents(count: count, seed: 5)
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        try await store.core.loadRemoteDocuments(docs, version: SnapshotVersion(microseconds: 10))
        #expect(try await store.core.declareCompositeIndexes([try Self.index("items", ("group", .ascending), ("score", .descending))]))
        let faults = StorageFaults()
        await store.core.injectStorageFaults(faults)
        faults.fail(.commit, in: "Backfill composite indexes")
        await #expect(throws: DocError.self) { try await store.core.backfillCompositeIndexes() }
        #expect(faults.injected == 1)
        // The failed step is done again, not skipped: every document gets its row.
        while try await store.core.backfillCompositeIndexes() {}
        #expect(await store.indexConfiguration().map(\.isComplete) == [true])
        #expect(try await Self.rowCount(store) == docs.filter { $0.data["score"] != nil }.count)
        await store.close()
    }

    @Test func aBuildStepThatFailsForTheAppGoesOnInTheBackground() async throws {
        let dir = TemporaryDirectory("composite-index-retry")
        let docs = try Self.documents(count: ClientCore.compositeIndexBackfillStep + 10, seed: 6)
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        try await store.core.loadRemoteDocuments(docs, version: SnapshotVersion(microseconds: 10))
        let faults = StorageFaults()
        await store.core.injectStorageFaults(faults)
        faults.fail(.commit, in: "Backfill composite indexes")
        await #expect(throws: DocError.self) {
            try await store.setIndexConfiguration([try Self.index("items", ("group", .ascending), ("score", .descending))])
        }
        #expect(faults.injected == 1)
        // The declaration stands and its build continues in this session, without another call.
        let deadline = ContinuousClock.now + .seconds(120)   // a liveness cap: the build takes well under a second alone
        while await store.indexConfiguration().contains(where: { !$0.isComplete }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(await store.indexConfiguration().map(\.isComplete) == [true])
        #expect(try await Self.rowCount(store) == docs.filter { $0.data["score"] != nil }.count)
        await store.close()
    }

    @Test func aBuildLeftIncompleteContinuesAfterReopen() async throws {
        let dir = TemporaryDirectory("composite-index-reopen")
        let count = ClientCore.compositeIndexBackfillStep * 2 + 10
        let index = try Self.index("items", ("group", .ascending), ("score", .descending))
        do {
            let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
            try await store.core.loadRemoteDocuments(try Self.documents(count: count, seed: 9), version: SnapshotVersion(microseconds: 10))
            // Declared and one step built, then closed: the index is incomplete on disk.
            #expect(try await store.core.declareCompositeIndexes([index]))
            #expect(try await store.core.backfillCompositeIndexes())
            #expect(await store.indexConfiguration().map(\.isComplete) == [false])
            await store.close()
        }
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        #expect(await store.indexConfiguration().map(\.index.id) == [index.id])
        // The store continues the build by itself.
        let deadline = ContinuousClock.now + .seconds(120)   // a liveness cap: the build takes well under a second alone
        while await store.indexConfiguration().contains(where: { !$0.isComplete }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(await store.indexConfiguration().map(\.isComplete) == [true])
        let docs = try Self.documents(count: count, seed: 9)
        let rows = docs.filter { $0.data["score"] != nil }.count
        #expect(try await Self.rowCount(store) == rows)
        let query = try store.collection("items").whereField("group", isEqualTo: .integer(2)).order(by: "score", descending: true).limit(to: 30)
        let expected = query.query.results(from: docs).map(\.key.documentID)
        #expect(try await query.getDocuments(source: .cache).ids == expected)
        // Declaring the same index again keeps it complete and its rows.
        try await store.setIndexConfiguration([index])
        #expect(await store.indexConfiguration().map(\.isComplete) == [true])
        #expect(try await Self.rowCount(store) == rows)
        await store.close()
    }
}

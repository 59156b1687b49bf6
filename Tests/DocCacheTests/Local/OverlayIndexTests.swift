import DocModel
import DocTestSupport
import DocTestTraits
import Testing
@testable import DocCache

/// The overlay index (`OverlayIndex`): limited queries walk the overlays' index rows instead
/// of reading every overlay, the rows stay exact through acknowledgements, rejections and
/// remote changes, and local writes above the watermark are read directly until indexed.
@Suite("Overlay index", .cpuBound)
struct OverlayIndexTests {
    typealias F = PersistenceFixtures

    /// Queries that walk an index: limited ones over a single field ascending and descending,
    /// with a range, one that a declared composite index serves, the array index and an `==`
    /// value's rows; unlimited ones over the rows of exact values.
    static func queries() throws -> [Query] {
        let docs = try Query(collection: "docs")
        return [
            try docs.order(by: "n").limit(to: 3),
            try docs.order(by: "n", descending: true).limit(to: 2),
            try docs.filter("n", .greaterThan, .integer(2)).order(by: "n").limit(to: 2),
            try docs.filter("s", .equal, "set").order(by: "n", descending: true).limit(to: 2),
            try docs.order(by: "n").limit(toLast: 2),
            // Many documents tie on `s`: the window is decided by `n` among them.
            try docs.order(by: "s").order(by: "n", descending: true).limit(to: 2),
            // The array index, in document-id order and reversed.
            try docs.filter("tags", .arrayContains, .integer(1)).limit(to: 2),
            try docs.filter("tags", .arrayContains, .integer(2)).order(by: FieldPath.documentID, descending: true).limit(to: 2),
            // The field index of an `==` value, in document-id order and reversed.
            try docs.filter("s", .equal, "set").limit(to: 2),
            try docs.filter("n", .equal, .integer(3)).order(by: FieldPath.documentID, descending: true).limit(to: 2),
            // Unlimited queries walk the rows of exact values too (a `get`, an aggregation).
            try docs.filter("s", .equal, "updated"),
            try docs.filter("n", .equal, .integer(2)).filter("s", .notEqual, "set"),
            try docs.filter("tags", .arrayContains, .integer(0)),
            try docs.filter("s", .equal, "set").order(by: "n", descending: true),
        ]
    }

    static func compositeIndex() throws -> CompositeIndex {
        try CompositeIndex(collectionGroup: "docs", fields: [try .init("s"), try .init("n", .descending)])
    }

    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func randomHistoriesAnswerQueriesAsTheLocalViewsDo(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        try OverlayHarness.run { h in
            _ = try h.localStore.declareCompositeIndexes([try Self.compositeIndex()])
            while try h.localStore.backfillCompositeIndexes(maxDocuments: 100) {}
            let keys = (0..<10).map { F.key("docs/d\($0)") }
            let queries = try Self.queries()
            var indexedWalks = 0
            for _ in 0..<160 {
                try h.randomStep(keys, indexing: true, using: &rng)
                try Self.checkRows(h)
                // Steps whose queries walk overlay rows (some are stored, and few enough batches
                // wait above the watermark).
                let unindexed = try h.localStore.unindexedOverlayBatches(upTo: QueryEngine.maximumUnindexedBatches + 1)
                if unindexed <= QueryEngine.maximumUnindexedBatches, try Self.rowCount(h) > 0 { indexedWalks += 1 }
                let views = try keys.compactMap { key throws -> Document? in try h.local(key) }
                for query in queries {
                    let expected = query.results(from: views)
                    let target = try query.toTarget()
                    var actual = try h.localStore.executeQuery(query, usePreviousResults: false).documents
                    actual.sort { target.compare($0, $1) < 0 }
                    if query.limitType == .last { actual.reverse() }
                    #expect(actual.map(\.key) == expected.map(\.key), "\(query.canonicalID)")
                    #expect(actual.map { $0.data } == expected.map { $0.data }, "\(query.canonicalID)")
                }
            }
            #expect(indexedWalks > 40, "the histories query through the overlay index, with rows to find (\(indexedWalks) steps)")
        }
    }

    /// The rows invariant: the rows listed for each overlay are stored, nothing else is, and
    /// for a document that no batch above the watermark writes they are exactly the rows of
    /// its overlay's local view.
    static func checkRows(_ h: OverlayHarness, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let persistence = h.persistence
        try persistence.run("check overlay index") { txn throws(DocError) in
            let space = OverlayIndex.space("u")
            var stored = Set<[UInt8]>()
            for entry in txn.scan(prefix: space) { stored.insert(Array(entry.key.dropFirst(space.count))) }
            var listed = Set<[UInt8]>()
            var listedByKey: [DocumentKey: Set<[UInt8]>] = [:]
            let listPrefix = KeySchema.Table.overlayIndexRows.prefix
            for entry in txn.scan(prefix: listPrefix) {
                var d = KeyDecoder(entry.key, offset: 1)
                _ = try d.readString()
                let key = try d.readKey()
                var r = ByteReader(entry.value, record: "test")
                let count = try r.varint()
                var rows = Set<[UInt8]>()
                for _ in 0..<count { rows.insert(try r.lengthPrefixed()) }
                listedByKey[key] = rows
                listed.formUnion(rows)
            }
            #expect(stored == listed, "every stored row is listed for its overlay, and no other", sourceLocation: sourceLocation)
            let watermark = try persistence.overlayIndex.watermark(user: "u", in: txn)
            var above = Set<DocumentKey>()
            for batch in try h.localStore.queue.nextBatches(after: watermark, limit: .max, in: txn) {
                above.formUnion(batch.mutations.map(\.key))
            }
            let overlays = try persistence.overlays.allOverlays(user: "u", in: txn)
            for key in Set(overlays.keys).union(listedByKey.keys) where !above.contains(key) {
                let expected = overlays[key]?.document.document.map { Set(persistence.remoteDocuments.indexRows(for: $0)) } ?? []
                #expect(listedByKey[key] ?? [] == expected, "the rows of \(key)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func aLimitedQueryReadsTheOverlaysFromTheIndexOnceIndexed() throws {
        try OverlayHarness.run { h in
            var documents: [DocumentKey: MaybeDocument] = [:]
            for i in 0..<20 { documents[F.key("docs/d\(i)")] = F.document("docs/d\(i)", ["n": .integer(Int64(i))]) }
            _ = try h.localStore.applyRemoteEvent(RemoteEvent(snapshotVersion: F.version(10), documentUpdates: documents))
            // Pending merges lift d5 and d7 to the top.
            try h.write(.setMerge(F.key("docs/d5"), ObjectValue(["n": 100])))
            try h.write(.setMerge(F.key("docs/d7"), ObjectValue(["n": 90])))
            let top = try Query(collection: "docs").order(by: "n", descending: true).limit(to: 3)
            func keys() throws -> [String] {
                try h.localStore.executeQuery(top, usePreviousResults: false).documents
                    .sorted { $0.data["n"]!.integerValue! > $1.data["n"]!.integerValue! }.map(\.key.documentID)
            }
            #expect(try keys() == ["d5", "d7", "d19"], "unindexed overlays are read directly")
            #expect(try h.localStore.unindexedOverlayBatches(upTo: 10) == 2)
            #expect(try h.localStore.indexOverlays(maxBatches: 10) == false)
            #expect(try h.localStore.unindexedOverlayBatches(upTo: 10) == 0)
            #expect(try keys() == ["d5", "d7", "d19"])

            // The query reads the overlays through their rows now: without d5's rows it cannot
            // see d5's local view (and the remote row of d5 is skipped, as d5 has an overlay).
            try Self.dropRows(of: "d5", under: OverlayIndex.space("u") + KeySchema.fieldPrefix(.fieldIndex, F.path("docs"), F.field("n")), h)
            #expect(try keys() == ["d7", "d19", "d18"])
        }
    }

    @Test func rowsTiedOnTheIndexedFieldAreOrderedByTheNextOrderBy() throws {
        try OverlayHarness.run { h in
            var documents: [DocumentKey: MaybeDocument] = [:]
            for i in 1...5 { documents[F.key("docs/d\(i)")] = F.document("docs/d\(i)", ["s": "a", "n": .integer(Int64(i))]) }
            documents[F.key("docs/e")] = F.document("docs/e", ["s": "b", "n": 100])
            _ = try h.localStore.applyRemoteEvent(RemoteEvent(snapshotVersion: F.version(10), documentUpdates: documents))
            try h.write(.setMerge(F.key("docs/d1"), ObjectValue(["n": 50])))
            let query = try Query(collection: "docs").order(by: "s").order(by: "n", descending: true).limit(to: 2)
            func ids() throws -> [String] {
                let target = try query.toTarget()
                return try h.localStore.executeQuery(query, usePreviousResults: false).documents
                    .sorted { target.compare($0, $1) < 0 }.map(\.key.documentID)
            }
            // The index holds (s, id): d1…d5 tie on s, and n decides among all five.
            #expect(try ids() == ["d1", "d5"])
            _ = try h.localStore.indexOverlays(maxBatches: 10)
            #expect(try ids() == ["d1", "d5"])
        }
    }

    @Test func anArrayContainsQueryWalksTheArrayIndexOfBothSpaces() throws {
        try OverlayHarness.run { h in
            var documents: [DocumentKey: MaybeDocument] = [:]
            for i in 0..<10 {
                documents[F.key("docs/d\(i)")] = F.document("docs/d\(i)", ["tags": .array(i % 2 == 0 ? ["x", "y"] : ["y"])])
            }
            _ = try h.localStore.applyRemoteEvent(RemoteEvent(snapshotVersion: F.version(10), documentUpdates: documents))
            // A pending write gives d1 the element; another takes it from d0.
            try h.write(.setMerge(F.key("docs/d1"), ObjectValue(["tags": .array(["x"])])))
            try h.write(.setMerge(F.key("docs/d0"), ObjectValue(["tags": .array(["y"])])))
            let query = try Query(collection: "docs").filter("tags", .arrayContains, "x").limit(to: 3)
            func ids() throws -> [String] {
                try h.localStore.executeQuery(query, usePreviousResults: false).documents.map(\.key.documentID).sorted()
            }
            let last = try Query(collection: "docs").filter("tags", .arrayContains, "x")
                .order(by: FieldPath.documentID, descending: true).limit(to: 2)
            func lastIDs() throws -> [String] {
                try h.localStore.executeQuery(last, usePreviousResults: false).documents.map(\.key.documentID).sorted()
            }
            #expect(try ids() == ["d1", "d2", "d4"])
            #expect(try lastIDs() == ["d6", "d8"])
            _ = try h.localStore.indexOverlays(maxBatches: 10)
            #expect(try ids() == ["d1", "d2", "d4"])
            #expect(try lastIDs() == ["d6", "d8"])
            // It reads the rows: without d2's remote row for "x", the window moves on to d6.
            try Self.dropRows(of: "d2", under: KeySchema.fieldPrefix(.arrayIndex, F.path("docs"), F.field("tags")), h)
            #expect(try ids() == ["d1", "d4", "d6"])
        }
    }

    @Test func tiesOrderedByDocumentIDAgainstTheWalkComeInTheTargetsOrder() throws {
        try OverlayHarness.run { h in
            var documents: [DocumentKey: MaybeDocument] = [:]
            for id in ["a", "b", "c"] { documents[F.key("docs/\(id)")] = F.document("docs/\(id)", ["n": 5]) }
            _ = try h.localStore.applyRemoteEvent(RemoteEvent(snapshotVersion: F.version(10), documentUpdates: documents))
            let docs = try Query(collection: "docs")
            let descendingThenID = try docs.order(by: "n", descending: true).order(by: FieldPath.documentID).limit(to: 1)
            let ascendingThenIDDescending = try docs.order(by: "n").order(by: FieldPath.documentID, descending: true).limit(to: 1)
            #expect(try h.localStore.executeQuery(descendingThenID, usePreviousResults: false).documents.map(\.key.documentID) == ["a"])
            #expect(try h.localStore.executeQuery(ascendingThenIDDescending, usePreviousResults: false).documents.map(\.key.documentID) == ["c"])
        }
    }

    @Test func aBatchWritingManyDocumentsIsReadWithTheWholeCollection() throws {
        try OverlayHarness.run { h in
            let count = QueryEngine.maximumUnindexedDocuments + 40
            try h.write((0..<count).map { i in .set(F.key("docs/d\(i)"), ObjectValue(["n": .integer(Int64(i))])) })
            try Self.checkFallback(h, expected: ["d\(count - 2)", "d\(count - 1)"]) {
                _ = try h.localStore.indexOverlays(maxBatches: 1)
            }
        }
    }

    @Test func manyUnindexedBatchesAreReadWithTheWholeCollection() throws {
        try OverlayHarness.run { h in
            let count = QueryEngine.maximumUnindexedBatches + 1
            for i in 0..<count { try h.write(.set(F.key("docs/d\(i)"), ObjectValue(["n": .integer(Int64(i))]))) }
            try Self.checkFallback(h, expected: ["d\(count - 2)", "d\(count - 1)"]) {
                while try h.localStore.indexOverlays(maxBatches: 10) {}
            }
        }
    }

    /// `order(by: "n", descending: true).limit(to: 2)` gives `expected` while the query reads
    /// every overlay of the collection, and, after `index`, reads the overlay rows: a stray row
    /// (of a document without an overlay, above every value) is met only by the walk of the
    /// overlay rows, which reports it as `dataLoss`.
    static func checkFallback(
        _ h: OverlayHarness, expected: [String], sourceLocation: SourceLocation = #_sourceLocation, index: () throws -> Void
    ) throws {
        let top = try Query(collection: "docs").order(by: "n", descending: true).limit(to: 2)
        func ids() throws -> [String] {
            try h.localStore.executeQuery(top, usePreviousResults: false).documents.map(\.key.documentID).sorted()
        }
        var stray = KeyEncoder(prefix: OverlayIndex.space("u") + KeySchema.fieldPrefix(.fieldIndex, F.path("docs"), F.field("n")))
        stray.append(raw: Value.integer(1_000_000).indexEncoded())
        stray.append(string: "stray")
        try h.persistence.run("stray row") { txn throws(DocError) in txn.put(stray.bytes, []) }
        #expect(try ids() == expected, "the query read every overlay, not the rows", sourceLocation: sourceLocation)
        try index()
        let error = #expect(throws: DocError.self, "the query walks the overlay rows once indexed", sourceLocation: sourceLocation) { try ids() }
        #expect(error?.code == .dataLoss, sourceLocation: sourceLocation)
        try h.persistence.run("remove the stray row") { txn throws(DocError) in txn.delete(stray.bytes) }
        #expect(try ids() == expected, sourceLocation: sourceLocation)
    }

    @Test func acknowledgingAnIndexedOverlayRemovesItsRows() throws {
        try OverlayHarness.run { h in
            try h.write(.setMerge(F.key("docs/a"), ObjectValue(["n": 1, "s": "x"])))
            try h.write(.set(F.key("docs/b"), ObjectValue(["n": 2])))
            _ = try h.localStore.indexOverlays(maxBatches: 10)
            #expect(try Self.rowCount(h) > 0)
            try Self.checkRows(h)
            try h.acknowledgeOldest()
            try h.acknowledgeOldest()
            try Self.checkRows(h)
            #expect(try Self.rowCount(h) == 0, "no overlay, no row")
            #expect(try h.overlayCount() == 0)
        }
    }

    @Test func declaringOtherCompositeIndexesMarksEveryOverlayUnindexed() throws {
        try OverlayHarness.run { h in
            try h.write(.setMerge(F.key("docs/a"), ObjectValue(["n": 1, "s": "set"])))
            try h.write(.setMerge(F.key("docs/b"), ObjectValue(["n": 2, "s": "set"])))
            _ = try h.localStore.indexOverlays(maxBatches: 10)
            #expect(try h.localStore.unindexedOverlayBatches(upTo: 10) == 0)
            _ = try h.localStore.declareCompositeIndexes([try Self.compositeIndex()])
            while try h.localStore.backfillCompositeIndexes(maxDocuments: 100) {}
            #expect(try h.localStore.unindexedOverlayBatches(upTo: 10) == 2, "indexed again with the new index")
            let query = try Query(collection: "docs").filter("s", .equal, "set").order(by: "n", descending: true).limit(to: 1)
            #expect(try h.localStore.executeQuery(query, usePreviousResults: false).documents.map(\.key.documentID) == ["b"])
            _ = try h.localStore.indexOverlays(maxBatches: 10)
            try Self.checkRows(h)
            #expect(try h.localStore.executeQuery(query, usePreviousResults: false).documents.map(\.key.documentID) == ["b"])
            // The same declaration again changes nothing.
            _ = try h.localStore.declareCompositeIndexes([try Self.compositeIndex()])
            #expect(try h.localStore.unindexedOverlayBatches(upTo: 10) == 0)
        }
    }

    /// Deletes the index rows of the document `id` under `prefix` (a field's rows in the field
    /// or array index, of either space): a query that still sees the document does not read them.
    static func dropRows(of id: String, under prefix: [UInt8], _ h: OverlayHarness) throws {
        try h.persistence.run("drop rows") { txn throws(DocError) in
            for entry in txn.scan(prefix: prefix)
            where try KeySchema.decodeIndexEntry(entry.key, prefixCount: prefix.count).id == id {
                txn.delete(entry.key)
            }
        }
    }

    static func rowCount(_ h: OverlayHarness) throws -> Int {
        try F.keys(of: .overlayIndex, in: h.persistence).count
    }
}

import DocModel
import DocTestSupport
import DocTestTraits
import Testing
@testable import DocServer

/// ``QueryFold``, how aggregations read: every matching document visited exactly once, as the
/// full scan finds them, in pages, and through a point filter's index when there is one.
@Suite(.cpuBound) struct QueryFoldTests {
    @Test(arguments: 0..<10 as Range<UInt64>)
    func visitsEveryMatchOnce(seed: UInt64) async throws {
        let server = TestServer()
        let store = try server.tenantStore("acme")
        var data = RandomQueryData(seed: seed)
        var model: [DocumentKey: Document] = [:]
        for batch in 1...50 {
            let writes = data.batch(over: model, version: .none).map { DocumentWrite(key: $0.key, document: $0.value) }
            try await store.commitNext(writes, batch: batch, checked: false, model: &model)
        }
        var plans: Set<String> = []
        for _ in 0..<120 {
            guard let limited = try? data.query(cursorsFrom: Array(model.values)).toTarget() else { continue }
            for target in [limited, limited.withoutLimit] {
                let (reader, _) = try store.queryReader()
                defer { reader.release() }
                var visited: [DocumentKey] = []
                let plan = try await QueryFold(target: target).run(with: reader) { visited.append($0.key) }
                let expected = fullScan(model.values, target, limit: target.limit)
                #expect(Set(visited) == Set(expected.map(\.key)) && visited.count == expected.count,
                        "seed \(seed): \(target) via \(plan)")
                if target.limit == nil { plans.insert(plan.hasPrefix("index range") ? "range" : plan.hasPrefix("key-order") ? "scan" : plan) }
            }
        }
        // Unlimited targets took each kind of plan.
        #expect(plans.isSuperset(of: ["range", "scan", "key lookup"]), "\(plans)")
    }

    /// A value too large for the index has a marker, not an entry: `==` on it finds its
    /// documents through the markers (and only those), as does `in`.
    @Test func valuesTooLargeForTheIndexAreFoundThroughTheirMarkers() async throws {
        let server = TestServer()
        let store = try server.tenantStore("acme")
        let large = Value.string(String(repeating: "x", count: 2_000))
        var model: [DocumentKey: Document] = [:]
        var writes: [DocumentWrite] = []
        for i in 0..<30 {
            let key = try DocumentKey("items/d\(i)")
            let a: Value = i % 3 == 0 ? large : .integer(Int64(i % 2))
            writes.append(DocumentWrite(key: key, document: Document(key: key, data: ObjectValue(["a": a, "b": .integer(Int64(i % 5))]), version: .none)))
        }
        try await store.commitNext(writes, batch: 1, checked: false, model: &model)
        for query in [
            try DocModel.Query(collection: "items").filter("a", .equal, large),
            try DocModel.Query(collection: "items").filter("a", .equal, large).filter("b", .equal, 0),
            try DocModel.Query(collection: "items").filter("a", .in, [large, .integer(1)]),
        ] {
            let target = try query.toTarget()
            let (reader, _) = try store.queryReader()
            defer { reader.release() }
            var visited: [DocumentKey] = []
            let plan = try await QueryFold(target: target).run(with: reader) { visited.append($0.key) }
            let expected = fullScan(model.values, target, limit: nil).map(\.key)
            #expect(!expected.isEmpty && Set(visited) == Set(expected) && visited.count == expected.count, "\(target) via \(plan)")
            #expect(plan.hasPrefix("index range read"), "\(plan)")
        }
    }

    /// 5,000 documents, `a` in 0..<10: counting `a == 3` reads its 500 documents through the
    /// index, not the collection; counting everything reads pages of at most ``QueryFold/pageSize``.
    @Test func aPointFilterReadsItsRangeAndEveryReadIsAPage() async throws {
        let server = TestServer()
        let store = try server.tenantStore("acme")
        var model: [DocumentKey: Document] = [:]
        for chunk in 0..<10 {
            var writes: [DocumentWrite] = []
            for i in chunk * 500..<(chunk + 1) * 500 {
                let key = try DocumentKey("items/item\(i)")
                let fields: [String: Value] = ["a": .integer(Int64(i % 10)), "b": .integer(Int64(i % 7))]
                writes.append(DocumentWrite(key: key, document: Document(key: key, data: ObjectValue(fields), version: .none)))
            }
            try await store.commitNext(writes, batch: chunk + 1, checked: false, model: &model)
        }
        for (query, documents) in [
            (try DocModel.Query(collection: "items").filter("a", .equal, 3), 500),
            (try DocModel.Query(collection: "items").filter("a", .equal, 3).filter("b", .equal, 2), 72),
            (try DocModel.Query(collection: "items"), 5_000),
        ] {
            let target = try query.toTarget()
            let (reader, _) = try store.queryReader()
            defer { reader.release() }
            let counting = CountingReader(reader)
            var count = 0
            let plan = try await QueryFold(target: target).run(with: counting) { _ in count += 1 }
            #expect(count == fullScan(model.values, target, limit: nil).count, "\(target)")
            #expect(counting.counts.documents <= documents, "\(counting.counts) via \(plan)")
            #expect(counting.counts.largestRead <= QueryFold.pageSize, "\(counting.counts) via \(plan)")
        }
    }
    /// `count()` alone over a whole collection counts keys and the tombstones' `deletedAt`
    /// entries (and markers, for a value too large to index): no document is read, and the
    /// answer is the full scan's, with and without tombstones, also for a sub-collection.
    @Test func countingACollectionReadsNoDocument() async throws {
        let server = TestServer()
        let store = try server.tenantStore("acme")
        var model: [DocumentKey: Document] = [:]
        var writes: [DocumentWrite] = []
        for i in 0..<3_000 {
            let key = try DocumentKey(i % 10 == 9 ? "items/i\(i % 7)/parts/p\(i)" : "items/item\(i)")
            var fields: [String: Value] = ["n": .integer(Int64(i))]
            switch i % 6 {
            case 0: fields[tombstoneField] = .timestamp(try Timestamp(seconds: Int64(i)))   // a tombstone
            case 1: fields[tombstoneField] = .null                                          // not one
            case 2 where i % 12 == 2: fields[tombstoneField] = .string(String(repeating: "d", count: 2_000))   // one, unindexed
            default: break
            }
            writes.append(DocumentWrite(key: key, document: Document(key: key, data: ObjectValue(fields), version: .none)))
        }
        try await store.commitNext(writes, batch: 1, checked: false, model: &model)
        let count = [try AggregateField.count(), try AggregateField.count(alias: "again")]
        for query in [
            try DocModel.Query(collection: "items"), try DocModel.Query(collection: "items").includingDeleted(),
            try DocModel.Query(collection: "items").order(by: .documentID, descending: true),
            try DocModel.Query(collection: "items/i3/parts"), try DocModel.Query(collection: "items/i3/parts").includingDeleted(),
        ] {
            let target = try query.toTarget()
            let (reader, _) = try store.queryReader()
            defer { reader.release() }
            let counting = CountingReader(reader)
            let result = try await QueryFold(target: target).aggregate(count, with: counting)
            let expected = Value.integer(Int64(fullScan(model.values, target, limit: nil).count))
            #expect(result == ["count": expected, "again": expected], "\(target)")
            #expect(counting.counts.documents == 0, "\(target): \(counting.counts)")
        }
        // Tombstones of every kind are there to subtract.
        let all = model.values.filter { $0.key.collectionPath.canonicalString == "items" }
        #expect(all.filter(\.isTombstone).count > 300 && all.contains { $0.data[tombstoneField] == .null })
        // Other aggregations, filters and limits still read the documents.
        let (reader, _) = try store.queryReader()
        defer { reader.release() }
        let counting = CountingReader(reader)
        _ = try await QueryFold(target: try DocModel.Query(collection: "items").filter("n", .greaterThan, 10).toTarget()).aggregate(count, with: counting)
        #expect(counting.counts.documents > 0)
    }

    /// Counts each query's documents with `count()` alone: each count must be the full scan's,
    /// having read exactly the given number of documents.
    static func expectCounts(
        _ store: LevelDBTenantStore, _ model: [DocumentKey: Document], _ cases: [(DocModel.Query, Int)],
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let count = [try AggregateField.count()]
        for (query, documentsRead) in cases {
            let target = try query.toTarget()
            let (reader, _) = try store.queryReader()
            defer { reader.release() }
            let counting = CountingReader(reader)
            let result = try await QueryFold(target: target).aggregate(count, with: counting)
            #expect(result == ["count": .integer(Int64(fullScan(model.values, target, limit: nil).count))], "\(target)",
                    sourceLocation: sourceLocation)
            #expect(counting.counts.documents == documentsRead, "\(target): \(counting.counts)", sourceLocation: sourceLocation)
        }
    }

    /// `count()` alone with point filters counts one filter's index entries (probing the
    /// others'): it reads no document but the tombstones among the entries (found by probing
    /// from the tombstones' index), none when tombstones are included, and folds the matches
    /// instead when there are fewer of them than tombstones.
    @Test func countingWithPointFiltersReadsOnlyTheMatchingTombstones() async throws {
        let server = TestServer()
        let store = try server.tenantStore("acme")
        var model: [DocumentKey: Document] = [:]
        var writes: [DocumentWrite] = []
        for i in 0..<3_000 {
            let key = try DocumentKey("items/item\(i)")
            var fields: [String: Value] = ["c": .string(i == 7 ? "rare" : "c\(i % 10)"), "tags": .array([.integer(Int64(i % 3))])]
            if i % 50 == 1 { fields[tombstoneField] = .timestamp(try Timestamp(seconds: Int64(i))) }   // 60 tombstones
            writes.append(DocumentWrite(key: key, document: Document(key: key, data: ObjectValue(fields), version: .none)))
        }
        try await store.commitNext(writes, batch: 1, checked: false, model: &model)
        let items = try DocModel.Query(collection: "items")
        try await Self.expectCounts(store, model, [
            (try items.filter("c", .equal, "c1"), 60),                      // every tombstone is a c1
            (try items.filter("c", .in, .array(["c1", "c3", "c1"])), 60),
            (try items.filter("c", .equal, "c2"), 0),
            (try items.filter("tags", .arrayContains, .integer(2)), 20),     // i % 3 == 2 among i % 50 == 1
            (try items.filter("c", .equal, "c1").filter("tags", .arrayContains, .integer(2)), 20),   // the other probed
            (try items.filter("tags", .arrayContains, .integer(2)).filter("c", .in, .array(["c1", "c2"])), 20),
            (try items.filter("c", .equal, "c1").includingDeleted(), 0),
            (try items.filter("c", .equal, "rare"), 1),   // one match, 60 tombstones: folded
        ])
        #expect(fullScan(model.values, try items.filter("c", .equal, "c1").toTarget(), limit: nil).count == 240)
    }

    /// `count()` with comparisons on one field counts the entries of its value range: `NaN`
    /// (the lowest number) is in a `<` range, values of other types are not in the range, and
    /// only the tombstones are read (to subtract those in the range).
    @Test func countingAComparisonReadsOnlyTheTombstones() async throws {
        let server = TestServer()
        let store = try server.tenantStore("acme")
        var model: [DocumentKey: Document] = [:]
        var writes: [DocumentWrite] = []
        for i in 0..<2_000 {
            let key = try DocumentKey("items/item\(i)")
            var fields: [String: Value]
            switch i % 50 {
            case 3: fields = ["n": .double(.nan)]
            case 4: fields = ["n": .string("s\(i)")]
            case 5: fields = ["n": .null]
            case 6: fields = [:]
            case 7: fields = ["n": .double(Double(i) + 0.5)]
            default: fields = ["n": .integer(Int64(i))]
            }
            if i % 100 == 1 { fields[tombstoneField] = .timestamp(try Timestamp(seconds: Int64(i))) }   // 20 tombstones
            writes.append(DocumentWrite(key: key, document: Document(key: key, data: ObjectValue(fields), version: .none)))
        }
        try await store.commitNext(writes, batch: 1, checked: false, model: &model)
        let items = try DocModel.Query(collection: "items")
        try await Self.expectCounts(store, model, [
            (try items.filter("n", .lessThan, .integer(1_000)), 20),
            (try items.filter("n", .greaterThanOrEqual, .double(100.5)).filter("n", .lessThanOrEqual, .integer(1_500)), 20),
            (try items.filter("n", .greaterThan, .integer(-1)).order(by: "n", descending: true), 20),
            (try items.filter("n", .greaterThan, .string("s1")), 20),         // strings, none a tombstone: all 20 read
            (try items.filter("n", .lessThan, .integer(1_000)).includingDeleted(), 0),
        ])
        // NaN, the lowest number, is below 1,000 (40 documents); strings, nulls and missing
        // values are not numbers; 10 of the integers are tombstones.
        #expect(fullScan(model.values, try items.filter("n", .lessThan, .integer(1_000)).toTarget(), limit: nil).count == 950)
    }
}

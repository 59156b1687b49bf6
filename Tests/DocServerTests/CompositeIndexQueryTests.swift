import DocModel
import DocTestSupport
import DocTestTraits
import Foundation
import LevelDB
import Testing
@testable import DocServer

/// Declared composite indexes on the embedded store: the planner's answers with them equal the
/// full scan's, their rows are exactly those of the stored documents, they are built and
/// dropped when the store is opened, and a query they serve reads the limit, not the
/// collection.
@Suite(.cpuBound) struct CompositeIndexQueryTests {
    static let indexes = RandomQueryData.compositeIndexes

    @Test(arguments: 0..<16 as Range<UInt64>)
    func plannerWithCompositeIndexesAgreesWithFullScan(seed: UInt64) async throws {
        let server = TestServer(compositeIndexes: Self.indexes)
        let store = try server.tenantStore("acme")
        var data = RandomQueryData(seed: seed)
        var model: [DocumentKey: Document] = [:]
        var batch = 0
        var served = 0, checked = 0
        for round in 0..<3 {
            for _ in 0..<(round == 0 ? 40 : 15) {
                let writes = data.batch(over: model, version: .none).map { DocumentWrite(key: $0.key, document: $0.value) }
                batch += 1
                try await store.commitNext(writes, batch: batch, checked: data.chance(70), model: &model)
            }
            #expect(try store.storedIndexRows() == store.expectedIndexRows(model.values, compositeIndexes: Self.indexes),
                    "seed \(seed) round \(round)")
            for i in 0..<80 {
                let query = i % 4 == 0 ? data.query(cursorsFrom: Array(model.values)) : data.compositeIndexQuery(documents: Array(model.values))
                guard let target = try? query.toTarget() else { continue }
                let limit = data.pick([target.limit, target.limit.map { $0 + 3 }, nil])
                let expected = fullScan(model.values, target, limit: limit)
                let read = try await store.query(target, limit: limit)
                #expect(read.documents == expected, "seed \(seed): \(target) limit \(limit.map(String.init) ?? "nil")")
                if try await QueryPlannerTests.checkEachPlan(store, target, limit: limit, expected: expected, seed: seed,
                                                            compositeIndexes: Self.indexes) { served += 1 }
                checked += 1
            }
        }
        #expect(checked > 150)
        // Most index queries are served (not those with mixed directions, an equality the
        // other filter contradicts or replaces, or a collection group).
        #expect(served > checked / 3, "only \(served) of \(checked) queries had a composite index plan")
    }

    /// 10,000 documents, `a` in 0..<10, `b` distinct: `where a == 3 order by b desc limit 50`
    /// reads 51 entries and 50 documents through the index, where the single-field walk
    /// examines ~500 entries of `b`. A range of `b` (filters, cursors) narrows the walk: a
    /// page in the middle of the rows reads no more than the first.
    @Test func aServedQueryReadsTheLimitNotTheCollection() async throws {
        let index = try CompositeIndex(collectionGroup: "items", fields: [.init("a"), .init("b", .descending)])
        let server = TestServer(compositeIndexes: [index])
        let store = try server.tenantStore("acme")
        var model: [DocumentKey: Document] = [:]
        var rng = SplitMix64(seed: 7)
        for chunk in 0..<20 {
            var writes: [DocumentWrite] = []
            for i in chunk * 500..<(chunk + 1) * 500 {
                let key = try DocumentKey("items/item\(i)")
                let fields: [String: Value] = ["a": .integer(Int64(i % 10)), "b": .integer(Int64.random(in: 0..<1_000_000, using: &rng))]
                writes.append(DocumentWrite(key: key, document: Document(key: key, data: ObjectValue(fields), version: .none)))
            }
            try await store.commitNext(writes, batch: chunk + 1, checked: false, model: &model)
        }
        for (query, reversed) in [
            (try DocModel.Query(collection: "items").filter("a", .equal, 3).order(by: "b", descending: true).limit(to: 50), false),
            (try DocModel.Query(collection: "items").filter("a", .equal, 3).order(by: "b").limit(to: 50), true),
            (try DocModel.Query(collection: "items").filter("a", .equal, 3).order(by: "b", descending: true).limit(toLast: 50), true),
            // The index holds `b` descending: a lower end of `b` is the walk's far end.
            (try DocModel.Query(collection: "items").filter("a", .equal, 3).filter("b", .lessThan, 500_000)
                .order(by: "b", descending: true).limit(to: 50), false),
            (try DocModel.Query(collection: "items").filter("a", .equal, 3).filter("b", .greaterThanOrEqual, 500_000)
                .order(by: "b").limit(to: 50), true),
            (try DocModel.Query(collection: "items").filter("a", .equal, 3).filter("b", .greaterThan, 250_000)
                .filter("b", .lessThanOrEqual, 750_000).order(by: "b", descending: true).limit(toLast: 50), true),
            // Pages after a cursor.
            (try DocModel.Query(collection: "items").filter("a", .equal, 3).order(by: "b", descending: true)
                .start(after: [.integer(500_000)]).limit(to: 50), false),
            (try DocModel.Query(collection: "items").filter("a", .equal, 3).order(by: "b")
                .start(at: [.integer(400_000)]).end(before: [.integer(900_000)]).limit(to: 50), true),
        ] {
            let target = try query.toTarget()
            let (reader, _) = try store.queryReader()
            defer { reader.release() }
            let counting = CountingReader(reader)
            let execution = try await ServerQueryPlanner(target: target, limit: target.limit, compositeIndexes: [index]).execute(with: counting)
            #expect(execution.documents == fullScan(model.values, target, limit: target.limit), "\(target)")
            #expect(execution.plan.hasPrefix("index walk \(reversed ? "desc" : "asc")") && execution.plan.contains("composite"), "\(execution.plan)")
            #expect(counting.counts.indexEntries <= 52 && counting.counts.documents <= 51, "\(counting.counts) via \(execution.plan)")
        }
    }

    /// Paging with `start(afterDocument:)` through a run of equal values (every `b` the same)
    /// starts each page at the cursor's row: 50 documents and about as many entries, on the
    /// tenth page as on the first, in both walk directions.
    @Test func aPageAfterADocumentStartsAtItsRow() async throws {
        let index = try CompositeIndex(collectionGroup: "items", fields: [.init("a"), .init("b", .descending)])
        let server = TestServer(compositeIndexes: [index])
        let store = try server.tenantStore("acme")
        var model: [DocumentKey: Document] = [:]
        var writes: [DocumentWrite] = []
        for i in 0..<2_000 {
            let key = try DocumentKey("items/item\(String(i + 10_000))")
            let fields: [String: Value] = ["a": .integer(Int64(i % 2)), "b": .integer(0)]
            writes.append(DocumentWrite(key: key, document: Document(key: key, data: ObjectValue(fields), version: .none)))
        }
        try await store.commitNext(writes, batch: 1, checked: false, model: &model)
        for descending in [true, false] {
            let base = try DocModel.Query(collection: "items").filter("a", .equal, 1).order(by: "b", descending: descending)
            var cursor: Document?
            for page in 0..<10 {
                let query = try (cursor.map { try base.start(afterDocument: $0) } ?? base).limit(to: 50)
                let target = try query.toTarget()
                let (reader, _) = try store.queryReader()
                defer { reader.release() }
                let counting = CountingReader(reader)
                let execution = try await ServerQueryPlanner(target: target, limit: 50, compositeIndexes: [index]).execute(with: counting)
                let expected = fullScan(model.values, target, limit: 50)
                #expect(execution.documents == expected, "page \(page)")
                #expect(counting.counts.indexEntries <= 52 && counting.counts.documents <= 51,
                        "page \(page), descending \(descending): \(counting.counts) via \(execution.plan)")
                cursor = execution.documents.last
            }
        }
    }

    /// Opening builds a newly declared index for the documents already stored (every tenant)
    /// and drops the rows of one no longer declared; reopening with the same declarations
    /// changes nothing.
    @Test func openingBuildsAndDropsIndexes() async throws {
        let directory = TempDirectory()
        defer { directory.remove() }
        let (first, second) = (Self.indexes[0], Self.indexes[3])
        var models: [String: [DocumentKey: Document]] = [:]
        do {
            let store = try LevelDBServerStore.open(directory: directory.path, options: .init(syncWrites: false, compositeIndexes: [first]))
            defer { store.database.close() }
            #expect(store.compositeIndexChanges.built == [first.id] && store.compositeIndexChanges.documentsRead == 0)
            for (n, tenant) in ["acme", "globex"].enumerated() {
                let tenantStore = try store.tenantStore(TenantID(tenant))
                var data = RandomQueryData(seed: 100 + UInt64(n))
                var model: [DocumentKey: Document] = [:]
                for batch in 1...30 {
                    let writes = data.batch(over: model, version: .none).map { DocumentWrite(key: $0.key, document: $0.value) }
                    try await tenantStore.commitNext(writes, batch: batch, model: &model)
                }
                models[tenant] = model
                #expect(try tenantStore.storedIndexRows() == tenantStore.expectedIndexRows(model.values, compositeIndexes: [first]))
            }
        }
        // Declared: the second instead of the first.
        let database = try LevelDB.Database.open(path: directory.path, options: LevelDBServerStore.databaseOptions)
        let report = try LevelDBCompositeIndexes.synchronize(database, declared: [second, second], options: WriteOptions(sync: false))
        database.close()
        #expect(report.built == [second.id] && report.dropped == [first.id])
        #expect(report.documentsRead == models.values.reduce(0) { $0 + $1.count })
        let store = try LevelDBServerStore.open(directory: directory.path, options: .init(syncWrites: false, compositeIndexes: [second]))
        defer { store.database.close() }
        #expect(try LevelDBCompositeIndexes.recordedIDs(store.database) == [second.id])
        #expect(store.compositeIndexChanges.built.isEmpty && store.compositeIndexChanges.dropped.isEmpty)
        for (tenant, model) in models {
            let tenantStore = try store.tenantStore(TenantID(tenant))
            #expect(try tenantStore.storedIndexRows() == tenantStore.expectedIndexRows(model.values, compositeIndexes: [second]), "\(tenant)")
        }
        // The same declarations again: nothing to do.
        #expect(try LevelDBCompositeIndexes.synchronize(store.database, declared: [second], options: WriteOptions(sync: false))
                == LevelDBCompositeIndexes.Report())
    }

    /// A build interrupted part way (rows written, the record not) is cleared and done again
    /// on the next open: stale rows of documents changed since do not survive.
    @Test func anInterruptedBuildIsRedone() async throws {
        let directory = TempDirectory()
        defer { directory.remove() }
        let index = Self.indexes[1]
        var model: [DocumentKey: Document] = [:]
        do {
            let store = try LevelDBServerStore.open(directory: directory.path, options: .init(syncWrites: false))
            defer { store.database.close() }
            let tenantStore = try store.tenantStore(TenantID("acme"))
            var data = RandomQueryData(seed: 9)
            for batch in 1...30 {
                let writes = data.batch(over: model, version: .none).map { DocumentWrite(key: $0.key, document: $0.value) }
                try await tenantStore.commitNext(writes, batch: batch, model: &model)
            }
            // What a build that stopped before its record leaves: rows, of older data too.
            var batch = WriteBatch()
            let stale = Document(key: try DocumentKey("items/gone"), data: ObjectValue(["a": 1, "b": 2]), version: .none)
            for document in Array(model.values) + [stale] {
                for row in tenantStore.keys.compositeRows(of: document, in: [index]) { batch.put(row, []) }
            }
            try store.database.write(batch)
        }
        let store = try LevelDBServerStore.open(directory: directory.path, options: .init(syncWrites: false, compositeIndexes: [index]))
        defer { store.database.close() }
        let tenantStore = try store.tenantStore(TenantID("acme"))
        #expect(try tenantStore.storedIndexRows() == tenantStore.expectedIndexRows(model.values, compositeIndexes: [index]))
    }
}

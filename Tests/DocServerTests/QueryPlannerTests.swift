import DocModel
import DocTestSupport
import DocTestTraits
import Testing
@testable import DocServer

/// ``ServerQueryPlanner`` against the full scan (`Target.matches`, sort, limit) on the LevelDB
/// store's indexes, and what bounded queries cost.
@Suite(.cpuBound) struct QueryPlannerTests {
    /// Random collections written through commits (creates, replacements, hard deletes,
    /// tombstones), random queries; every answer — the planner's, and each candidate plan's
    /// run alone with tiny pages — equals the full scan's, and the index rows are exactly those
    /// of the stored documents.
    @Test(arguments: 0..<20 as Range<UInt64>)
    func plannerAgreesWithFullScan(seed: UInt64) async throws {
        let server = TestServer()
        let store = try server.tenantStore("acme")
        var data = RandomQueryData(seed: seed)
        var model: [DocumentKey: Document] = [:]
        var batch = 0
        var queriesChecked = 0
        for round in 0..<3 {
            for _ in 0..<(round == 0 ? 40 : 15) {
                let writes = data.batch(over: model, version: .none).map { DocumentWrite(key: $0.key, document: $0.value) }
                batch += 1
                try await store.commitNext(writes, batch: batch, checked: data.chance(70), model: &model)
            }
            #expect(try store.storedIndexRows() == store.expectedIndexRows(model.values), "seed \(seed) round \(round)")

            for _ in 0..<80 {
                let query = data.query(cursorsFrom: Array(model.values))
                guard let target = try? query.toTarget() else { continue }
                let limits: [Int?] = [target.limit, target.limit.map { $0 + 3 }, nil]
                let limit = data.pick(limits)
                let expected = fullScan(model.values, target, limit: limit)
                let read = try await store.query(target, limit: limit)
                #expect(read.documents == expected, "seed \(seed): \(target) limit \(limit.map(String.init) ?? "nil")")
                try await Self.checkEachPlan(store, target, limit: limit, expected: expected, seed: seed)
                queriesChecked += 1
            }
        }
        #expect(queriesChecked > 100)
    }

    /// Runs each candidate plan of `target` alone, with pages of 1, 2, 4 entries; returns
    /// whether one of them walks a composite index of `compositeIndexes`.
    @discardableResult
    static func checkEachPlan(_ store: LevelDBTenantStore, _ target: Target, limit: Int?, expected: [Document], seed: UInt64,
                              compositeIndexes: [CompositeIndex] = []) async throws -> Bool {
        let (reader, _) = try store.queryReader()
        defer { reader.release() }
        let planner = ServerQueryPlanner(target: target, limit: limit, compositeIndexes: compositeIndexes, pageSizes: (1, 4))
        var composite = false
        for plan in planner.plans() {
            composite = composite || plan.description.contains("composite")
            let execution = try await planner.run([plan], reader: reader)
            #expect(execution.documents == expected, "seed \(seed): \(plan) for \(target) limit \(limit.map(String.init) ?? "nil")")
        }
        return composite
    }

    // MARK: Cost

    /// 10,000 documents: `a` in 0..<10, `b` distinct, `rare` on 5 of them.
    func largeCollection() async throws -> (TestServer, LevelDBTenantStore, [DocumentKey: Document]) {
        let server = TestServer()
        let store = try server.tenantStore("acme")
        var model: [DocumentKey: Document] = [:]
        var rng = SplitMix64(seed: 42)
        for chunk in 0..<20 {
            var writes: [DocumentWrite] = []
            for i in chunk * 500..<(chunk + 1) * 500 {
                let key = try DocumentKey("items/item\(i)")
                var fields: [String: Value] = ["a": .integer(Int64(i % 10)), "b": .integer(Int64.random(in: 0..<1_000_000, using: &rng))]
                if i % 2_000 == 7 { fields["rare"] = true }
                writes.append(DocumentWrite(key: key, document: Document(key: key, data: ObjectValue(fields), version: .none)))
            }
            try await store.commitNext(writes, batch: chunk + 1, checked: false, model: &model)
        }
        return (server, store, model)
    }

    /// Runs `query` through a counting reader; checks the results against the full scan.
    func countedRun(_ store: LevelDBTenantStore, _ model: [DocumentKey: Document], _ query: DocModel.Query) async throws -> (CountingReader.Counts, String) {
        let target = try query.toTarget()
        let (reader, _) = try store.queryReader()
        defer { reader.release() }
        let counting = CountingReader(reader)
        let execution = try await ServerQueryPlanner(target: target, limit: target.limit).execute(with: counting)
        #expect(execution.documents == fullScan(model.values, target, limit: target.limit), "\(target)")
        return (counting.counts, execution.plan)
    }

    @Test func boundedQueriesReadFarLessThanTheCollection() async throws {
        let (server, store, model) = try await largeCollection()
        _ = server
        let items = try DocModel.Query(collection: "items")

        // where a == 3 order by b limit 50: a tenth of the documents match.
        let (equal, equalPlan) = try await countedRun(store, model, try items.filter("a", .equal, 3).order(by: "b").limit(to: 50))
        // The walk over b probes a == 3 in the index and reads only those documents (50 and
        // the next match, which ends the walk), not every document on the way.
        #expect(equal.documents <= 60, "\(equal) via \(equalPlan)")
        #expect(equal.indexEntries < 1_500, "\(equal) via \(equalPlan)")
        #expect(equalPlan.contains("probing"))

        // A rare value: its range read finishes first.
        let (rare, rarePlan) = try await countedRun(store, model, try items.filter("rare", .equal, true).order(by: "b").limit(to: 50))
        #expect(rare.documents <= 20, "\(rare) via \(rarePlan)")
        #expect(rarePlan.contains("range read"))

        // order by b desc limit 50, and its limitToLast twin.
        let (ordered, orderedPlan) = try await countedRun(store, model, try items.order(by: "b", descending: true).limit(to: 50))
        #expect(ordered.documents <= 51 && ordered.indexEntries <= 51, "\(ordered) via \(orderedPlan)")
        let (last, lastPlan) = try await countedRun(store, model, try items.order(by: "b").limit(toLast: 50))
        #expect(last.documents <= 51, "\(last) via \(lastPlan)")

        // A range on the sort key with a cursor.
        let (range, _) = try await countedRun(store, model, try items.filter("b", .greaterThan, 500_000).order(by: "b").start(after: [600_000]).limit(to: 20))
        #expect(range.documents <= 21)

        // Paging by name after a document: starts at the cursor, not at the collection's start.
        let (page, pagePlan) = try await countedRun(store, model, try items.order(by: .documentID).start(after: [.reference(try DocumentKey("items/item5000"))]).limit(to: 50))
        #expect(page.documents <= 51, "\(page) via \(pagePlan)")

        // Paging an index walk after (b, key).
        let anchor = model[try DocumentKey("items/item1234")]!
        let (walkPage, _) = try await countedRun(store, model, try items.order(by: "b").start(afterDocument: anchor).limit(to: 50))
        #expect(walkPage.documents <= 51)

        // The whole collection, unbounded, is a scan.
        let (all, allPlan) = try await countedRun(store, model, items)
        #expect(all.documents == 10_000)
        #expect(allPlan.contains("key-order scan"))
    }

    @Test func emptyAndZeroLimits() async throws {
        let server = TestServer()
        let store = try server.tenantStore("acme")
        let target = try DocModel.Query(collection: "items").order(by: "a").limit(to: 5).toTarget()
        #expect(try await store.query(target, limit: 5).documents.isEmpty)
        #expect(try await store.query(target, limit: 0).documents.isEmpty)
        // With a matching document, a zero limit still returns nothing; a positive one finds it.
        let key = try DocumentKey("items/one")
        var model: [DocumentKey: Document] = [:]
        try await store.commitNext([DocumentWrite(key: key, document: Document(key: key, data: ObjectValue(["a": .integer(1)]), version: .none))],
                                   batch: 1, model: &model)
        let stored = try #require(model[key])
        #expect(try await store.query(target, limit: 0).documents.isEmpty)
        #expect(try await store.query(target, limit: 5).documents == [stored])
    }
}

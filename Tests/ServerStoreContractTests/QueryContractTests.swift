import DocModel
import DocServer
import DocTestSupport
import Testing

/// Server queries on every store agree with the full scan (`Target.matches`, sort, limit) —
/// the same random collections and queries as the planner's own property test, here through
/// each store's `query(_:limit:)` (its reader, its index rows, its snapshot), after commits
/// that create, replace, tombstone and hard-delete documents, and after reopening the store.
@Suite struct QueryContractTests {
    static let cases: [(StoreKind, UInt64)] = StoreKind.allCases.flatMap { kind in (0..<6 as Range<UInt64>).map { (kind, $0) } }

    /// Commits `count` random batches (``RandomQueryData/batch(over:version:deletePercent:)``),
    /// numbered on from `batch`, and applies them to `model`.
    static func commitRandomBatches(_ count: Int, to tenant: any TenantStore, data: inout RandomQueryData,
                                    model: inout [DocumentKey: Document], batch: inout Int) async throws {
        for _ in 0..<count {
            let version = try await tenant.state().lastVersion.microseconds + 1
            let writes = data.batch(over: model, version: C.v(version))
            batch += 1
            _ = try await tenant.commit(CommitRequest(outcome: C.outcome("c", batch, version: version),
                                                      writes: writes.map { DocumentWrite(key: $0.key, document: $0.value) }))
            for (key, document) in writes { model[key] = document }
        }
    }

    /// Commits one batch that sets the documents `contents` (by key) at a version above the
    /// tenant's last, and applies it to `model`.
    static func commitDocuments(_ contents: [(DocumentKey, ObjectValue)], to tenant: any TenantStore,
                                model: inout [DocumentKey: Document], batch: inout Int) async throws {
        let version = try await tenant.state().lastVersion.microseconds + 1
        let documents = contents.map { Document(key: $0.0, data: $0.1, version: C.v(version)) }
        batch += 1
        _ = try await tenant.commit(CommitRequest(outcome: C.outcome("c", batch, version: version),
                                                  writes: documents.map { DocumentWrite(key: $0.key, document: $0) }))
        for document in documents { model[document.key] = document }
    }

    @Test(arguments: cases)
    func queriesAgreeWithTheFullScan(_ kind: StoreKind, seed: UInt64) async throws {
        try await Self.randomQueries(kind, seed: seed, declaring: nil)
    }

    /// Composite indexes declared on a store that already holds documents (built when it is
    /// reopened), then kept by later commits: queries they serve (and others) agree with the
    /// full scan on every store, before and after another reopening.
    @Test(arguments: cases)
    func compositeIndexQueriesAgreeWithTheFullScan(_ kind: StoreKind, seed: UInt64) async throws {
        try await Self.randomQueries(kind, seed: 1_000 + seed, declaring: RandomQueryData.compositeIndexes)
    }

    /// Three rounds of random commits, each followed by 50 random queries checked against the
    /// full scan; the store is reopened before the last round's queries. With `indexes`, it is
    /// reopened after the first round's commits declaring them, and four queries in five are
    /// ones they may serve (``RandomQueryData/compositeIndexQuery(documents:)``).
    static func randomQueries(_ kind: StoreKind, seed: UInt64, declaring indexes: [CompositeIndex]?) async throws {
        let fixture = try await StoreFixture.make(kind)
        var tenant = try await fixture.tenant("acme")
        var data = RandomQueryData(seed: seed)
        var model: [DocumentKey: Document] = [:]
        var batch = 0
        var checked = 0
        for round in 0..<3 {
            try await Self.commitRandomBatches(round == 0 ? 40 : 15, to: tenant, data: &data, model: &model, batch: &batch)
            if round == 0, let indexes { tenant = try await fixture.reopen(compositeIndexes: indexes).tenant(TenantID("acme")) }
            if round == 2 { tenant = try await fixture.reopen().tenant(TenantID("acme")) }
            for i in 0..<50 {
                let query = indexes != nil && i % 5 != 0
                    ? data.compositeIndexQuery(documents: Array(model.values)) : data.query(cursorsFrom: Array(model.values))
                guard let target = try? query.toTarget() else { continue }
                let limit = data.pick([target.limit, target.limit.map { $0 + 3 }, nil])
                let read = try await tenant.query(target, limit: limit)
                #expect(read.documents == fullScan(model.values, target, limit: limit),
                        "\(kind) seed \(seed): \(target) limit \(limit.map(String.init) ?? "nil")")
                checked += 1
            }
        }
        #expect(checked > 100)
        await fixture.tearDown()
    }

    /// `referencedAttachments(among:)` (the store's reference rows, kept by each commit) names
    /// exactly the attachments the live stored documents refer to, through random commits
    /// that add, replace and hard-delete documents, tombstones that still refer to theirs,
    /// and after reopening.
    @Test(arguments: StoreKind.allCases)
    func attachmentReferencesFollowTheDocuments(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        var tenant = try await fixture.tenant("acme")
        var data = RandomQueryData(seed: 23)
        var model: [DocumentKey: Document] = [:]
        var batch = 0
        var seen = Set<AttachmentID>()
        var (referencedChecks, unreferencedChecks, tombstoneOnlyChecks) = (0, 0, 0)
        for round in 0..<8 {
            try await Self.commitRandomBatches(10, to: tenant, data: &data, model: &model, batch: &batch)
            // The random data has no tombstone referring to an attachment: `refs/r` (round r)
            // refers to its own, and is a tombstone still holding it in odd rounds (revived
            // in the next), so some attachments are held only by tombstones.
            var fields: [String: Value] = ["photo": .attachment(AttachmentID(digest: [UInt8](repeating: UInt8(round / 2), count: 32)))]
            if round % 2 == 1 { fields[tombstoneField] = .integer(1) }
            try await Self.commitDocuments([(try DocumentKey("refs/r\(round / 2)"), ObjectValue(fields))], to: tenant,
                                           model: &model, batch: &batch)
            if round == 7 { tenant = try await fixture.reopen().tenant(TenantID("acme")) }
            for document in model.values { document.forEachAttachment { seen.insert($0) } }
            var live = Set<AttachmentID>()
            for document in model.values where !document.isTombstone { document.forEachAttachment { live.insert($0) } }
            let unknown = AttachmentID(digest: [UInt8](repeating: 0xEE, count: 32))
            #expect(try await tenant.referencedAttachments(among: Array(seen) + [unknown]) == live, "\(kind) round \(round)")
            var inTombstones = Set<AttachmentID>()
            for document in model.values where document.isTombstone { document.forEachAttachment { inTombstones.insert($0) } }
            referencedChecks += live.count
            unreferencedChecks += seen.subtracting(live).count
            tombstoneOnlyChecks += inTombstones.subtracting(live).count
        }
        // The data exercised every answer: referenced, not (any more), only by tombstones.
        #expect(referencedChecks > 0 && unreferencedChecks > 0 && tombstoneOnlyChecks > 0,
                "\(referencedChecks) / \(unreferencedChecks) / \(tombstoneOnlyChecks)")
        #expect(try await fixture.tenant("other").referencedAttachments(among: Array(seen)).isEmpty)
        await fixture.tearDown()
    }

    /// `aggregate(_:_:)` (the store's fold, `QueryFold`) agrees with folding the full scan's
    /// answer, with and without limits, before and after reopening.
    @Test(arguments: StoreKind.allCases)
    func aggregationsAgreeWithTheFullScan(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        var tenant = try await fixture.tenant("acme")
        var data = RandomQueryData(seed: 11)
        var model: [DocumentKey: Document] = [:]
        var batch = 0
        let fields = [try AggregateField.count(), try AggregateField.sum("a", alias: "sa"), try AggregateField.average("b", alias: "ab"),
                      try AggregateField.sum("m.x", alias: "sx")]
        /// Equal results, NaN included (the data has NaN among its doubles).
        func same(_ x: [String: Value], _ y: [String: Value]) -> Bool {
            x.keys.sorted() == y.keys.sorted() && x.allSatisfy { key, value in
                if case .double(let a) = value, case .double(let b)? = y[key], a.isNaN, b.isNaN { return true }
                return value == y[key]
            }
        }
        var checked = 0
        for round in 0..<2 {
            try await Self.commitRandomBatches(40, to: tenant, data: &data, model: &model, batch: &batch)
            if round == 1 { tenant = try await fixture.reopen().tenant(TenantID("acme")) }
            for i in 0..<40 {
                guard let limited = try? data.query(cursorsFrom: Array(model.values)).toTarget() else { continue }
                let target = i % 3 == 0 ? limited : limited.withoutLimit
                var expected = AggregateAccumulator(fields)
                for document in fullScan(model.values, target, limit: target.limit) { expected.add(document.data) }
                let read = try await tenant.aggregate(target, fields)
                #expect(same(read.result, expected.result), "\(kind): \(target): \(read.result) against \(expected.result)")
                #expect(read.version == (try await tenant.state().lastVersion))
                checked += 1
            }
        }
        #expect(checked > 50)
        await fixture.tearDown()
    }

    /// `count()` alone over whole collections (counted by key, less the tombstones' index
    /// entries and markers) agrees with the full scan, with and without tombstones, before and
    /// after reopening.
    @Test(arguments: StoreKind.allCases)
    func collectionCountsAgreeWithTheFullScan(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        var tenant = try await fixture.tenant("acme")
        var data = RandomQueryData(seed: 31)
        var model: [DocumentKey: Document] = [:]
        var batch = 0
        let count = [try AggregateField.count()]
        for round in 0..<3 {
            try await Self.commitRandomBatches(30, to: tenant, data: &data, model: &model, batch: &batch)
            // A tombstone whose `deletedAt` is too large for the index (a marker, no entry), and
            // a document whose `deletedAt` is null (not a tombstone).
            try await Self.commitDocuments([
                (try DocumentKey("items/large-tombstone-\(round)"), ObjectValue([tombstoneField: .string(String(repeating: "d", count: 2_000))])),
                (try DocumentKey("items/null-deleted-\(round)"), ObjectValue([tombstoneField: .null])),
            ], to: tenant, model: &model, batch: &batch)
            if round == 2 { tenant = try await fixture.reopen().tenant(TenantID("acme")) }
            let collections = Set(model.keys.map(\.collectionPath))
            #expect(collections.count > 1)
            for collection in collections {
                for includeDeleted in [false, true] {
                    let target = try DocModel.Query(collection: collection).includingDeleted(includeDeleted).toTarget()
                    let read = try await tenant.aggregate(target, count)
                    #expect(read.result == ["count": .integer(Int64(fullScan(model.values, target, limit: nil).count))],
                            "\(kind) round \(round): \(target)")
                }
            }
        }
        #expect(model.values.filter(\.isTombstone).count > 3)
        await fixture.tearDown()
    }

    /// `count()` alone with one or two point filters (`==`, `in`, `array-contains`: counted on
    /// one filter's index, the other probed, less the tombstones' entries there), or with
    /// comparisons on one field (counted over its value range), agrees with the full scan,
    /// with and
    /// without tombstones, for values too large for the index as well, before and after
    /// reopening; so does a fold of the same targets (`sum`), which reads the documents.
    @Test(arguments: StoreKind.allCases)
    func filteredCountsAgreeWithTheFullScan(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        var tenant = try await fixture.tenant("acme")
        var data = RandomQueryData(seed: 47)
        var model: [DocumentKey: Document] = [:]
        var batch = 0
        let count = [try AggregateField.count()]
        let fold = [try AggregateField.count(alias: "n"), try AggregateField.sum("zz", alias: "s")]
        var checked = 0
        for round in 0..<2 {
            try await Self.commitRandomBatches(40, to: tenant, data: &data, model: &model, batch: &batch)
            // An array holding the same small value as another document's, and a large one.
            try await Self.commitDocuments([
                (try DocumentKey("items/mixed-\(round)"), ObjectValue(["tags": .array([.integer(1), data.largeString()])])),
                // NaN (the lowest number, which `<` comparisons match), -infinity, and a
                // tombstone with a value comparisons and `==` find.
                (try DocumentKey("items/nan-\(round)"), ObjectValue(["a": .double(.nan), "b": .double(.nan)])),
                (try DocumentKey("items/low-\(round)"), ObjectValue(["a": .double(-.infinity)])),
                (try DocumentKey("items/gone-\(round)"), ObjectValue(["a": .integer(1), tombstoneField: .integer(5)])),
            ], to: tenant, model: &model, batch: &batch)
            if round == 1 { tenant = try await fixture.reopen().tenant(TenantID("acme")) }
            for collection in RandomQueryData.collections {
                for field in RandomQueryData.fields {
                    for _ in 0..<4 {
                        var query: DocModel.Query? = try DocModel.Query(collection: collection)
                        // One point filter, or two on different fields (the other probed); a
                        // combination the query refuses (two `array-contains`) is skipped.
                        for filtered in data.chance(50) ? [field] : [field, data.pick(RandomQueryData.fields.filter { $0 != field })] {
                            let path = try FieldPath(filtered)
                            switch Int.random(in: 0..<3, using: &data.rng) {
                            case 0: query = try? query?.filter(path, .equal, data.chance(15) ? data.largeString() : data.value(depth: 1))
                            case 1: query = try? query?.filter(path, .arrayContains, data.chance(15) ? data.largeString() : data.value(depth: 1))
                            default: query = try? query?.filter(path, .in, .array([data.value(depth: 1), data.value(depth: 1)]))
                            }
                        }
                        // Or comparisons on one field (counted over its value range).
                        if data.chance(40) {
                            let path = try FieldPath(field)
                            var ranged: DocModel.Query? = try DocModel.Query(collection: collection)
                            for _ in 0..<(data.chance(50) ? 1 : 2) {
                                let op = data.pick([FieldFilter.Operator.lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual])
                                ranged = try? ranged?.filter(path, op, data.chance(10) ? data.largeString() : data.value(depth: 1))
                            }
                            if data.chance(30) { ranged = try? ranged?.order(by: path, descending: true) }
                            if let ranged { query = ranged }
                        }
                        guard let query else { continue }
                        for includeDeleted in [false, true] {
                            guard let target = try? query.includingDeleted(includeDeleted).toTarget() else { continue }
                            let expected = Int64(fullScan(model.values, target, limit: nil).count)
                            let read = try await tenant.aggregate(target, count)
                            #expect(read.result == ["count": .integer(expected)], "\(kind) round \(round): \(target)")
                            let folded = try await tenant.aggregate(target, fold)
                            #expect(folded.result["n"] == .integer(expected), "\(kind) round \(round), fold: \(target)")
                            checked += 1
                        }
                    }
                }
            }
        }
        #expect(checked > 200)
        #expect(model.values.filter(\.isTombstone).count > 3)
        await fixture.tearDown()
    }

    /// `scan(after:limit:)` visits every stored document exactly once, tombstones included,
    /// page by page (documents of sub-collections too), before and after reopening.
    @Test(arguments: StoreKind.allCases)
    func scanVisitsEveryDocumentOnce(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        var tenant = try await fixture.tenant("acme")
        var data = RandomQueryData(seed: 7)
        var model: [DocumentKey: Document] = [:]
        for batch in 1...40 {
            let version = try await tenant.state().lastVersion.microseconds + 1
            let writes = data.batch(over: model, version: C.v(version))
            _ = try await tenant.commit(CommitRequest(outcome: C.outcome("c", batch, version: version),
                                                      writes: writes.map { DocumentWrite(key: $0.key, document: $0.value) }))
            for (key, document) in writes { model[key] = document }
        }
        let expected = model.compactMapValues { $0 }
        #expect(expected.values.contains { $0.isTombstone } || expected.count > 20, "the data must be worth scanning")
        for round in 0..<2 {
            if round == 1 { tenant = try await fixture.reopen().tenant(TenantID("acme")) }
            var seen: [DocumentKey: Document] = [:]
            var after: DocumentKey?
            var pages = 0
            while true {
                let page = try await tenant.scan(after: after, limit: 7)
                pages += 1
                for document in page {
                    #expect(seen.updateValue(document, forKey: document.key) == nil, "\(kind): \(document.key) scanned twice")
                }
                guard page.count == 7, let last = page.last else { break }
                after = last.key
                #expect(pages < 1_000, "\(kind): the scan does not end")
                if pages >= 1_000 { break }
            }
            #expect(seen == expected, "\(kind) round \(round): \(seen.count) scanned, \(expected.count) stored")
        }
        // Another tenant's documents are not part of the scan.
        let other = try await fixture.tenant("globex")
        #expect(try await other.scan(after: nil, limit: 100).isEmpty)
        await fixture.tearDown()
    }
}

import DocModel
import DocServer
import DocServerPostgres
import Foundation

/// `server-query` / `server-query-postgres`: a server store holding `documents` documents in
/// `items` (app-like data, ``sampleDocument(_:version:)``: `category` has 10 values, `score`
/// 100,000), committed straight into the store in batches of 1,000. Each sample is one bounded
/// query as the server runs it for a listen target (`TenantStore.query`):
/// `where category == cN order by score desc limit 50`, N cycling over the categories.
///
/// The store declares the composite index (`category` ascending, `score` descending) that
/// serves the query before the documents arrive (as `cache-query` declares its own on the
/// client, and as Firestore requires for this query): the query reads 50 index entries and
/// 50 documents.
///
/// Twenty untimed queries (each category twice) warm the store up first.
///
/// Peer (`full-scan`): the same answer the way the store answered before it had indexes —
/// every document of the collection read, matched, sorted, cut to 50 — a few samples. Every
/// peer answer must equal the indexed one, or the scenario fails.
///
/// `DOCBENCH_SERVER_DOCUMENTS` overrides the document count (for a quick run).
func serverQuery(queries: Int, store kind: BenchStore) async throws -> Result {
    let documents = try environmentCount("DOCBENCH_SERVER_DOCUMENTS", default: 1_000_000, minimum: 1)
    let directory = temporaryDirectory("server-query")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let index = try CompositeIndex(collectionGroup: "items", fields: [.init("category"), .init("score", .descending)])
    let store = try await openServerStore(kind, directory: directory, compositeIndexes: [index])
    let tenant = try await store.tenant(TenantID("bench"))
    try await load(documents, into: tenant)

    func target(_ i: Int) throws -> Target {
        try DocModel.Query(collection: "items")
            .filter("category", .equal, .string("c\(i % 10)"))
            .order(by: FieldPath("score"), descending: true)
            .limit(to: 50)
            .toTarget()
    }
    // Untimed warm-up, one query per category: the first queries after the bulk load meet
    // the store still compacting it and cold caches.
    for i in 0..<20 { _ = try await tenant.query(try target(i), limit: 50) }
    let clock = ContinuousClock()
    var samples: [Double] = []
    var answers: [Int: [DocumentKey]] = [:]
    for i in 0..<queries {
        let query = try target(i)
        var read: QueryRead?
        let elapsed = try await clock.measure { read = try await tenant.query(query, limit: 50) }
        guard let read, read.documents.count == 50 else {
            throw DocError(.internal, "server-query: the query returned \(read?.documents.count ?? -1) documents, expected 50")
        }
        if i < 10 { answers[i] = read.documents.map(\.key) }
        samples.append(micros(elapsed))
    }
    // The peer: a full scan of the collection, then match, sort and cut.
    let everything = try DocModel.Query(collection: "items").toTarget()
    var peer: [Double] = []
    for i in 0..<3 {
        let query = try target(i)
        var keys: [DocumentKey] = []
        let elapsed = try await clock.measure {
            let all = try await tenant.query(everything, limit: nil).documents
            keys = all.filter(query.matches).sorted { query.compare($0, $1) < 0 }.prefix(50).map(\.key)
        }
        guard keys == answers[i] else {
            throw DocError(.internal, "server-query: the indexed answer for c\(i) differs from the full scan's")
        }
        peer.append(micros(elapsed))
    }
    await store.close()
    return Result(samples: samples, peer: "full-scan", peerSamples: peer)
}

/// `server-count` / `server-count-postgres`: the store of `server-query` (without its
/// composite index), `DOCBENCH_SERVER_DOCUMENTS` documents (default 200,000), every 100th a
/// tombstone. Each sample is `count()` of `where category == cN` as the server answers an
/// aggregation (`TenantStore.aggregate`), N cycling over the categories: a tenth of the
/// documents match. Ten untimed counts warm the store up first.
///
/// Peer (`fold`): the same count with a `sum(score)` beside it, which reads every matching
/// document (how every count was answered before it was counted on the index). Its counts
/// must equal the samples', or the scenario fails.
func serverCount(counts: Int, store kind: BenchStore) async throws -> Result {
    let documents = try environmentCount("DOCBENCH_SERVER_DOCUMENTS", default: 200_000, minimum: 1_000)
    let directory = temporaryDirectory("server-count")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let store = try await openServerStore(kind, directory: directory, compositeIndexes: [])
    let tenant = try await store.tenant(TenantID("bench"))
    try await load(documents, into: tenant, tombstoneEvery: 100)

    func target(_ i: Int) throws -> Target {
        try DocModel.Query(collection: "items").filter("category", .equal, .string("c\(i % 10)")).toTarget()
    }
    let count = [try AggregateField.count()]
    let fold = [try AggregateField.count(), try AggregateField.sum("score", alias: "total")]
    for i in 0..<10 { _ = try await tenant.aggregate(try target(i), count) }
    let clock = ContinuousClock()
    var samples: [Double] = []
    var answers: [Int: Value] = [:]
    for i in 0..<counts {
        let query = try target(i)
        var read: AggregateRead?
        let elapsed = try await clock.measure { read = try await tenant.aggregate(query, count) }
        answers[i % 10] = read?.result["count"]
        samples.append(micros(elapsed))
    }
    var peer: [Double] = []
    for i in 0..<3 {
        let query = try target(i)
        var read: AggregateRead?
        let elapsed = try await clock.measure { read = try await tenant.aggregate(query, fold) }
        guard let counted = answers[i], read?.result["count"] == counted else {
            throw DocError(.internal, "server-count: the fold counted \(String(describing: read?.result["count"])) for c\(i), the index \(String(describing: answers[i]))")
        }
        peer.append(micros(elapsed))
    }
    await store.close()
    return Result(samples: samples, peer: "fold", peerSamples: peer)
}

/// A server store of `kind` in `directory` (the embedded one) with `compositeIndexes`.
private func openServerStore(_ kind: BenchStore, directory: String, compositeIndexes: [CompositeIndex]) async throws -> any ServerStore {
    switch kind {
    case .leveldb:
        return try LevelDBServerStore.open(directory: directory, options: .init(syncWrites: false, compositeIndexes: compositeIndexes))
    case .postgres(let url):
        // A peer may read the whole collection in one statement: more than the default 10 s.
        return try await PostgresServerStore.connect(url: url, options: .init(operationTimeout: .seconds(600), compositeIndexes: compositeIndexes))
    }
}

/// Commits `count` sample documents into `tenant` in batches of 1,000 (one version each);
/// every `tombstoneEvery`-th one a tombstone when given.
private func load(_ count: Int, into tenant: any TenantStore, tombstoneEvery: Int? = nil) async throws {
    var version = try await tenant.state().lastVersion.microseconds
    var start = 0
    var batch = 0
    while start < count {
        version += 1
        let writes = (start..<min(start + 1_000, count)).map { i in
            var document = sampleDocument(i, version: version)
            if let every = tombstoneEvery, i % every == 0 { document.data.fields[tombstoneField] = .integer(Int64(version)) }
            return DocumentWrite(key: document.key, document: document)
        }
        let outcome = BatchOutcome(
            batch: BatchKey(clientID: "loader", batchID: batch), uid: "loader", digest: 0, recordedAt: version,
            result: .committed(version: SnapshotVersion(microseconds: version), results: []))
        _ = try await tenant.commit(CommitRequest(outcome: outcome, writes: writes))
        start += writes.count
        batch += 1
    }
}

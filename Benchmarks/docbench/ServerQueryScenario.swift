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
    let store: any ServerStore
    switch kind {
    case .leveldb:
        store = try LevelDBServerStore.open(directory: directory, options: .init(syncWrites: false, compositeIndexes: [index]))
    case .postgres(let url):
        // The peer reads the whole collection in one statement: more than the default 10 s.
        store = try await PostgresServerStore.connect(url: url, options: .init(operationTimeout: .seconds(600), compositeIndexes: [index]))
    }
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

/// Commits `count` sample documents into `tenant` in batches of 1,000 (one version each).
private func load(_ count: Int, into tenant: any TenantStore) async throws {
    var version = try await tenant.state().lastVersion.microseconds
    var start = 0
    var batch = 0
    while start < count {
        version += 1
        let writes = (start..<min(start + 1_000, count)).map { i in
            let document = sampleDocument(i, version: version)
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

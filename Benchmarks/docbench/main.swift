// docbench: doccache's benchmarks. `swift run -c release docbench SCENARIO [--n N]`,
// `docbench list`. One JSON object per line (docs/contracts.md, "Benchmark output"):
// {"scenario":…,"n":…,"unit":"us","median":…,"p99":…,"peer":…,"peerMedian":…,"ratio":…}
import DocCache
import DocModel
import Foundation
import LevelDB

struct Scenario {
    let name: String
    let summary: String
    let defaultN: Int
    let run: @Sendable (Int) async throws -> Result
}

struct Result: Sendable {
    var samples: [Double]        // microseconds
    var peer: String?
    var peerSamples: [Double]?
    /// Single figures a scenario also reports, each as a line of its own after the scenario's.
    var figures: [Figure] = []
    /// The unit of `samples` (and of the peer's).
    var unit = "us"
}

/// One measured value in another unit than µs (e.g. a throughput), printed as its own line
/// with `median` = the value and `p99` and the peer fields `null`.
struct Figure: Sendable {
    var scenario: String
    var unit: String
    var value: Double
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    let rank = Int((p * Double(sorted.count - 1)).rounded())
    return sorted[min(max(rank, 0), sorted.count - 1)]
}

func json(_ x: Double) -> String { x.isFinite ? String(format: "%.2f", x) : "null" }

func report(_ name: String, n: Int, _ result: Result) {
    let s = result.samples.sorted()
    let median = percentile(s, 0.5), p99 = percentile(s, 0.99)
    var line = "{\"scenario\":\"\(name)\",\"n\":\(n),\"unit\":\"\(result.unit)\",\"median\":\(json(median)),\"p99\":\(json(p99)),"
    if let peer = result.peer, let peerSamples = result.peerSamples {
        let peerMedian = percentile(peerSamples.sorted(), 0.5)
        line += "\"peer\":\"\(peer)\",\"peerMedian\":\(json(peerMedian)),\"ratio\":\(json(median / peerMedian))}"
    } else {
        line += "\"peer\":null,\"peerMedian\":null,\"ratio\":null}"
    }
    print(line)
}

func report(_ figure: Figure, n: Int) {
    print("{\"scenario\":\"\(figure.scenario)\",\"n\":\(n),\"unit\":\"\(figure.unit)\",\"median\":\(json(figure.value)),"
          + "\"p99\":null,\"peer\":null,\"peerMedian\":null,\"ratio\":null}")
}

func micros(_ d: Duration) -> Double {
    Double(d.components.seconds) * 1e6 + Double(d.components.attoseconds) / 1e12
}

func temporaryDirectory(_ label: String) -> String {
    let path = NSTemporaryDirectory() + "docbench-\(label)-\(UUID().uuidString)"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// A document like an app's: a few strings, numbers, a timestamp, a small map.
func sampleData(_ i: Int) -> [String: FieldValue] {
    [
        "title": .value(.string("Item number \(i)")),
        "category": .value(.string("c\(i % 10)")),
        "score": .value(.integer(Int64((i * 7919) % 100_000))),
        "price": .value(.double(Double(i % 1000) / 10)),
        "tags": .value(.array(["a", "b", .string("t\(i % 7)")])),
        "owner": .map(["id": .value(.string("u\(i % 100)")), "name": "Someone"]),
    ]
}

func sampleDocument(_ i: Int, version: Int64) -> Document {
    var data = ObjectValue()
    for (k, v) in sampleData(i) {
        if case .value(let value) = v { data.fields[k] = value }
        if case .map(let m) = v {
            var inner: [String: Value] = [:]
            for (mk, mv) in m { if case .value(let value) = mv { inner[mk] = value } }
            data.fields[k] = .map(inner)
        }
    }
    let key = try! DocumentKey("items/item\(String(format: "%07d", i))")
    return Document(key: key, data: data, version: SnapshotVersion(microseconds: version))
}

/// A store whose cache holds `count` server documents in `items` (and optionally pending writes).
func populatedStore(_ directory: String, count: Int, pendingWrites: Int = 0, indexes: [CompositeIndex] = []) async throws -> DocumentStore {
    let store = try await DocumentStore.open(directory: directory, tenant: "bench", user: "u")
    try await store.setIndexConfiguration(indexes)
    var version: Int64 = 1_000_000
    var i = 0
    while i < count {
        let chunk = (i..<min(i + 1000, count)).map { sampleDocument($0, version: version) }
        try await store.core.loadRemoteDocuments(chunk, version: SnapshotVersion(microseconds: version))
        version += 1
        i += chunk.count
    }
    let items = try store.collection("items")
    for j in 0..<pendingWrites {
        try await items.document("item\(String(format: "%07d", j * 97 % max(count, 1)))").setData(["edited": .value(.integer(Int64(j)))], merge: true)
    }
    return store
}

let scenarios: [Scenario] = [
    Scenario(name: "local-write", summary: "setData accepted locally (durable) vs a raw LevelDB put of the same bytes", defaultN: 10_000) { n in
        let dir = temporaryDirectory("local-write")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try await DocumentStore.open(directory: dir, tenant: "bench", user: "u")
        let items = try store.collection("items")
        var samples: [Double] = []
        samples.reserveCapacity(n)
        let clock = ContinuousClock()
        for i in 0..<n {
            let ref = try items.document("d\(i)")
            let data = sampleData(i)
            let elapsed = try await clock.measure { _ = try await ref.setData(data) }
            samples.append(micros(elapsed))
        }
        await store.close()
        // Peer: raw LevelDB puts of the same encoded documents, in the same run.
        let peerDir = temporaryDirectory("leveldb-put")
        defer { try? FileManager.default.removeItem(atPath: peerDir) }
        let db = try Database.open(path: peerDir)
        var peer: [Double] = []
        peer.reserveCapacity(n)
        for i in 0..<n {
            let bytes = sampleDocument(i, version: 1).binaryEncoded()
            let key = Array("items/d\(i)".utf8)
            let elapsed = try clock.measure { try db.put(key, bytes) }
            peer.append(micros(elapsed))
        }
        db.close()
        return Result(samples: samples, peer: "leveldb-put", peerSamples: peer)
    },
    Scenario(name: "write-to-listener", summary: "setData to the listener callback, same process", defaultN: 2_000) { n in
        let dir = temporaryDirectory("write-to-listener")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try await DocumentStore.open(directory: dir, tenant: "bench", user: "u")
        let ref = try store.document("items/watched")
        let arrivals = AsyncStream<ContinuousClock.Instant>.makeStream()
        let registration = try await ref.addSnapshotListener { _ in arrivals.continuation.yield(.now) }
        var iterator = arrivals.stream.makeAsyncIterator()
        _ = await iterator.next()   // the initial snapshot
        var samples: [Double] = []
        for i in 0..<n {
            let start = ContinuousClock.now
            try await ref.setData(["n": .value(.integer(Int64(i)))])
            guard let arrived = await iterator.next() else { break }
            samples.append(micros(start.duration(to: arrived)))
        }
        registration.remove()
        await store.close()
        return Result(samples: samples, peer: nil, peerSamples: nil)
    },
    Scenario(name: "cache-query", summary: "bounded query (filter + orderBy + limit 50) over 100,000 cached documents (or DOCBENCH_CACHE_DOCUMENTS)", defaultN: 200) { n in
        let dir = temporaryDirectory("cache-query")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // The index the query needs, declared before the data arrives (as the GRDB peer's
        // schema declares its own).
        let store = try await populatedStore(dir, count: try cacheDocumentCount(), indexes: [try categoryScoreIndex()])
        let clock = ContinuousClock()
        var samples: [Double] = []
        for i in 0..<n {
            let query = try store.collection("items").whereField("category", isEqualTo: .string("c\(i % 10)"))
                .order(by: "score", descending: true).limit(to: 50)
            var count = 0
            let elapsed = try await clock.measure { count = try await query.getDocuments(source: .cache).count }
            precondition(count == 50, "cache-query returned \(count) documents")
            samples.append(micros(elapsed))
        }
        await store.close()
        return Result(samples: samples, peer: nil, peerSamples: nil)
    },
    Scenario(name: "cache-equality", summary: "bounded query (== filter, document-id order, limit 50, no declared index) over 100,000 cached documents (or DOCBENCH_CACHE_DOCUMENTS) + 1,000 pending writes", defaultN: 200) { n in
        let dir = temporaryDirectory("cache-equality")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try await populatedStore(dir, count: try cacheDocumentCount(), pendingWrites: 1_000)
        // The pending writes' overlays indexed, as the store does a second after a burst.
        try await store.core.indexOverlaysNow()
        let clock = ContinuousClock()
        var samples: [Double] = []
        for i in 0..<n {
            let query = try store.collection("items").whereField("category", isEqualTo: .string("c\(i % 10)")).limit(to: 50)
            var count = 0
            let elapsed = try await clock.measure { count = try await query.getDocuments(source: .cache).count }
            precondition(count == 50, "cache-equality returned \(count) documents")
            samples.append(micros(elapsed))
        }
        await store.close()
        return Result(samples: samples, peer: nil, peerSamples: nil)
    },
    Scenario(name: "cache-count", summary: "count() from the cache of an == filter matching a tenth of 100,000 cached documents (or DOCBENCH_CACHE_DOCUMENTS) + 1,000 pending writes", defaultN: 20) { n in
        let dir = temporaryDirectory("cache-count")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let documents = try cacheDocumentCount()
        let store = try await populatedStore(dir, count: documents, pendingWrites: 1_000)
        try await store.core.indexOverlaysNow()
        let clock = ContinuousClock()
        var samples: [Double] = []
        for i in 0..<n {
            let query = try store.collection("items").whereField("category", isEqualTo: .string("c\(i % 10)"))
            var count: Int64 = 0
            let elapsed = try await clock.measure { count = try await query.count(source: .cache) }
            precondition(count == Int64(documents / 10), "cache-count counted \(count) documents")
            samples.append(micros(elapsed))
        }
        await store.close()
        return Result(samples: samples, peer: nil, peerSamples: nil)
    },
    Scenario(name: "cold-open", summary: "open a store of 100,000 documents (or DOCBENCH_CACHE_DOCUMENTS) + 1,000 pending writes, first snapshot of a bounded query", defaultN: 10) { n in
        let dir = temporaryDirectory("cold-open")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let seeded = try await populatedStore(dir, count: try cacheDocumentCount(), pendingWrites: 1_000)
        // The state a session longer than the seeding leaves: the pending writes' overlays
        // indexed (the store does it a second after a burst of writes), and LevelDB's background
        // compactions done. (A session that closes first abandons a running compaction, and
        // the next open starts it again.)
        try await seeded.core.indexOverlaysNow()
        try await seeded.core.compactStorage()
        await seeded.close()
        var samples: [Double] = []
        for _ in 0..<n {
            let start = ContinuousClock.now
            let store = try await DocumentStore.open(directory: dir, tenant: "bench", user: "u")
            let first = AsyncStream<Int>.makeStream()
            let registration = try await store.collection("items").order(by: "score").limit(to: 50)
                .addSnapshotListener { result in if case .success(let s) = result { first.continuation.yield(s.count) } }
            var iterator = first.stream.makeAsyncIterator()
            let count = await iterator.next()
            samples.append(micros(start.duration(to: .now)))
            precondition(count == 50, "cold-open first snapshot had \(count ?? -1) documents")
            registration.remove()
            await store.close()
        }
        return Result(samples: samples, peer: nil, peerSamples: nil)
    },
    Scenario(name: "cache-rss", summary: "resident memory (MB) of a fresh process with 100,000 cached documents (or DOCBENCH_CACHE_DOCUMENTS) and 10 bounded listeners; n = runs", defaultN: 3) { n in
        try await cacheRSS(runs: n)
    },
    Scenario(name: "fanout", summary: "1,000 WebSocket listeners on one document: commit to the last notification, loopback", defaultN: 50) { n in
        try await fanout(commits: n)
    },
    Scenario(name: "sync-offline-10k", summary: "10,000 offline writes: enableNetwork to all acknowledged, loopback server; n = runs", defaultN: 3) { n in
        try await syncOffline(writes: 10_000, runs: n)
    },
    Scenario(name: "fanout-postgres", summary: "fanout on the PostgreSQL store (throwaway cluster, fsync on)", defaultN: 50) { n in
        try await fanout(commits: n, store: try await .newPostgresDatabase())
    },
    Scenario(name: "fanout-2", summary: "1,000 listeners on instance B, commits through instance A, one PostgreSQL database", defaultN: 50) { n in
        try await fanout(commits: n, store: try await .newPostgresDatabase(), instances: 2)
    },
    Scenario(name: "sync-offline-10k-postgres", summary: "sync-offline-10k on the PostgreSQL store (fsync on); n = runs", defaultN: 3) { n in
        try await syncOffline(writes: 10_000, runs: n) { try await .newPostgresDatabase() }
    },
    Scenario(name: "server-query", summary: "bounded server query (== filter, orderBy, limit 50) over 1,000,000 documents, embedded store; peer: the full scan", defaultN: 200) { n in
        try await serverQuery(queries: n, store: .leveldb)
    },
    Scenario(name: "server-query-postgres", summary: "server-query on the PostgreSQL store; peer: the full scan", defaultN: 200) { n in
        try await serverQuery(queries: n, store: try await .newPostgresDatabase())
    },
    Scenario(name: "server-count", summary: "count() with an == filter (a tenth of 200,000 documents, or DOCBENCH_SERVER_DOCUMENTS, 1 % tombstones), embedded store; peer: the fold", defaultN: 50) { n in
        try await serverCount(counts: n, store: .leveldb)
    },
    Scenario(name: "server-count-postgres", summary: "server-count on the PostgreSQL store; peer: the fold", defaultN: 50) { n in
        try await serverCount(counts: n, store: try await .newPostgresDatabase())
    },
    Scenario(name: "attachment-upload", summary: "n × 1 MiB attachments added offline, uploaded by the store to a loopback server; peer: a plain HTTP PUT of each", defaultN: 100) { n in
        try await attachmentUpload(count: n)
    },
    Scenario(name: "attachment-upload-postgres", summary: "attachment-upload with the server and the attachments in a PostgreSQL database (PostgresBlobStore, fsync on)", defaultN: 100) { n in
        try await attachmentUpload(count: n, store: try await .newPostgresDatabase())
    },
    Scenario(name: "requests", summary: "transfer requests from 10 concurrent clients: submit to applied, and throughput (requests-throughput)", defaultN: 1_000) { n in
        try await requests(transfers: n)
    },
]

let arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first, command != "--help", command != "-h" else {
    print("usage: docbench SCENARIO [--n N] | docbench list | docbench all [--n N]")
    exit(arguments.isEmpty ? 2 : 0)
}
var n: Int?
if let i = arguments.firstIndex(of: "--n"), i + 1 < arguments.count {
    guard let value = Int(arguments[i + 1]), value > 0 else {
        FileHandle.standardError.write("docbench: --n needs a positive integer\n".data(using: .utf8)!)
        exit(2)
    }
    n = value
}
if command == "cache-rss-child", arguments.count == 2 {
    // The child process of `cache-rss` (not a scenario).
    do {
        let directory = arguments[1]
        try await Task.detached { try await cacheRSSChild(directory: directory) }.value
        exit(0)
    } catch {
        FileHandle.standardError.write("docbench: cache-rss-child failed: \(error)\n".data(using: .utf8)!)
        exit(1)
    }
}
if command == "list" {
    for s in scenarios { print("\(s.name)\t\(s.summary) (default n \(s.defaultN))") }
    exit(0)
}
let selected = command == "all" ? scenarios : scenarios.filter { $0.name == command }
guard !selected.isEmpty else {
    FileHandle.standardError.write("docbench: unknown scenario \(command); docbench list names them\n".data(using: .utf8)!)
    exit(2)
}
for scenario in selected {
    let count = n ?? scenario.defaultN
    do {
        // Off the main actor: top-level code runs on it, and hopping between the main thread
        // and the store's executor on every call would measure thread wake-ups, not the store.
        let run = scenario.run
        let result = try await Task.detached { try await run(count) }.value
        report(scenario.name, n: count, result)
        for figure in result.figures { report(figure, n: count) }
    } catch {
        FileHandle.standardError.write("docbench: \(scenario.name) failed: \(error)\n".data(using: .utf8)!)
        exit(1)
    }
}

// grdb-peer: the GRDB/SQLite peer of docbench's client scenarios (issue 22).
//
//   grdb-peer SCENARIO [--n N]     SCENARIO: local-write | write-to-listener | cache-query | cold-open
//
// What a developer hand-writing an offline store on SQLite with GRDB would do: a `documents`
// table (the document as a JSON text column) and an `outbox` table of pending writes, both
// written in one transaction per write; expression indexes for the query shapes; a
// `ValueObservation` as the listener. Same data, counts and default n as docbench
// (Benchmarks/docbench/main.swift); same JSON line, with `"peer": null` (this is the peer).
// See docs/performance.md, "The GRDB peer".
import Dispatch
import Foundation
import GRDB

// MARK: - Output (docbench's format)

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    let rank = Int((p * Double(sorted.count - 1)).rounded())
    return sorted[min(max(rank, 0), sorted.count - 1)]
}

func json(_ x: Double) -> String { x.isFinite ? String(format: "%.2f", x) : "null" }

func report(_ name: String, n: Int, _ samples: [Double]) {
    let s = samples.sorted()
    print("{\"scenario\":\"\(name)\",\"n\":\(n),\"unit\":\"us\",\"median\":\(json(percentile(s, 0.5))),"
          + "\"p99\":\(json(percentile(s, 0.99))),\"peer\":null,\"peerMedian\":null,\"ratio\":null}")
}

func micros(_ d: Duration) -> Double {
    Double(d.components.seconds) * 1e6 + Double(d.components.attoseconds) / 1e12
}

func temporaryDirectory(_ label: String) -> String {
    let path = NSTemporaryDirectory() + "grdb-peer-\(label)-\(UUID().uuidString)"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

// MARK: - Documents (docbench's sampleData, as a Codable model)

struct Owner: Codable { var id: String; var name: String }

struct Item: Codable {
    var title: String
    var category: String
    var score: Int
    var price: Double
    var tags: [String]
    var owner: Owner
    var edited: Int?
}

func sampleItem(_ i: Int) -> Item {
    Item(title: "Item number \(i)", category: "c\(i % 10)", score: (i * 7919) % 100_000,
         price: Double(i % 1000) / 10, tags: ["a", "b", "t\(i % 7)"],
         owner: Owner(id: "u\(i % 100)", name: "Someone"))
}

func itemPath(_ i: Int) -> String { "items/item" + String(format: "%07d", i) }

// MARK: - The store

/// The schema, as an app would ship it: a migrator run at every open.
func migrator() -> DatabaseMigrator {
    var migrator = DatabaseMigrator()
    migrator.registerMigration("v1") { db in
        try db.execute(sql: """
            CREATE TABLE documents (
                path       TEXT PRIMARY KEY NOT NULL,   -- "collection/id"
                collection TEXT NOT NULL,
                data       TEXT NOT NULL,               -- the document, JSON
                updatedAt  INTEGER NOT NULL,            -- server version (µs) or local write time
                pending    INTEGER NOT NULL DEFAULT 0   -- 1 while an outbox row holds a write to it
            );
            -- cache-query: WHERE collection = ? AND category = ? ORDER BY score DESC LIMIT 50
            CREATE INDEX documents_category_score
                ON documents(collection, json_extract(data, '$.category'), json_extract(data, '$.score'));
            -- cold-open: WHERE collection = ? ORDER BY score LIMIT 50
            CREATE INDEX documents_score
                ON documents(collection, json_extract(data, '$.score'));
            CREATE TABLE outbox (
                id   INTEGER PRIMARY KEY,               -- upload order
                path TEXT NOT NULL,
                op   TEXT NOT NULL,                     -- set | merge | delete
                data TEXT                               -- JSON
            );
            """)
    }
    return migrator
}

/// A DatabasePool: WAL mode, and GRDB sets `synchronous = NORMAL` with it (checked below):
/// a commit is appended to the WAL with write(2) and survives a crash of the process, not of
/// the machine, as doccache's default writes (docs/persistence.md, "Durability").
func openStore(_ directory: String) throws -> DatabasePool {
    let pool = try DatabasePool(path: directory + "/store.sqlite", configuration: Configuration())
    try migrator().migrate(pool)
    return pool
}

func checkPragmas(_ pool: DatabasePool) throws {
    // synchronous is per connection: the writer's is the one that matters.
    let (mode, sync) = try pool.writeWithoutTransaction { db in
        (try String.fetchOne(db, sql: "PRAGMA journal_mode"), try Int.fetchOne(db, sql: "PRAGMA synchronous"))
    }
    precondition(mode == "wal" && sync == 1, "expected WAL + synchronous NORMAL, got \(mode ?? "?") \(sync ?? -1)")
}

let documentsUpsert = """
    INSERT INTO documents(path, collection, data, updatedAt, pending) VALUES (?, ?, ?, ?, 1)
    ON CONFLICT(path) DO UPDATE SET data = excluded.data, updatedAt = excluded.updatedAt, pending = 1
    """
let outboxInsert = "INSERT INTO outbox(path, op, data) VALUES (?, ?, ?)"

/// A local `set`: the document and its outbox row, in one transaction.
func localSet(_ db: Database, path: String, collection: String, json: String, now: Int64) throws {
    try db.cachedStatement(sql: documentsUpsert).execute(arguments: [path, collection, json, now])
    try db.cachedStatement(sql: outboxInsert).execute(arguments: [path, "set", json])
}

func nowMicros() -> Int64 { Int64(Date().timeIntervalSince1970 * 1e6) }

/// `count` server documents in `items` (1,000 per transaction, as docbench loads them), then
/// `pendingWrites` local merges `{"edited": j}`, each with its outbox row in one transaction.
func populate(_ pool: DatabasePool, count: Int, pendingWrites: Int = 0) throws {
    let encoder = JSONEncoder()
    var version: Int64 = 1_000_000
    var i = 0
    while i < count {
        let end = min(i + 1000, count)
        try pool.write { db in
            let insert = try db.cachedStatement(sql:
                "INSERT INTO documents(path, collection, data, updatedAt) VALUES (?, 'items', ?, ?)")
            for j in i..<end {
                let json = String(decoding: try encoder.encode(sampleItem(j)), as: UTF8.self)
                try insert.execute(arguments: [itemPath(j), json, version])
            }
        }
        version += 1
        i = end
    }
    for j in 0..<pendingWrites {
        let path = itemPath(j * 97 % max(count, 1))
        try pool.write { db in
            try db.cachedStatement(sql: """
                UPDATE documents SET data = json_set(data, '$.edited', ?), updatedAt = ?, pending = 1 WHERE path = ?
                """).execute(arguments: [j, nowMicros(), path])
            try db.cachedStatement(sql: outboxInsert).execute(arguments: [path, "merge", "{\"edited\":\(j)}"])
        }
    }
}

/// Fails unless SQLite answers `sql` from an index, without a sort.
func checkPlan(_ pool: DatabasePool, _ sql: String, _ arguments: StatementArguments) throws {
    let plan = try pool.read { db in
        try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments).map { $0["detail"] as String? ?? "" }
    }
    precondition(plan.contains { $0.contains("USING INDEX") } && !plan.contains { $0.contains("TEMP B-TREE") },
                 "query not served by an index: \(plan)")
}

// MARK: - Scenarios

let cacheQuerySQL = """
    SELECT path, data FROM documents
    WHERE collection = ? AND json_extract(data, '$.category') = ?
    ORDER BY json_extract(data, '$.score') DESC LIMIT 50
    """
let coldOpenSQL = """
    SELECT path, data FROM documents
    WHERE collection = ?
    ORDER BY json_extract(data, '$.score') LIMIT 50
    """

/// A query result as the app would use it: the rows decoded into the model.
func fetchItems(_ db: Database, _ sql: String, _ arguments: StatementArguments, _ decoder: JSONDecoder) throws -> [(String, Item)] {
    try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
        (row["path"], try decoder.decode(Item.self, from: (row["data"] as String).data(using: .utf8)!))
    }
}

/// What the listener callback saw, handed to the benchmark thread.
final class Arrivals: @unchecked Sendable {
    let semaphore = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var seen: [(value: Int, at: ContinuousClock.Instant)] = []

    func record(_ value: Int, at instant: ContinuousClock.Instant = .now) {
        lock.withLock { seen.append((value, instant)) }
        semaphore.signal()
    }

    /// Waits for the next callback.
    func next() -> (value: Int, at: ContinuousClock.Instant) {
        semaphore.wait()
        return lock.withLock { seen.removeFirst() }
    }
}

struct Counter: Codable { var n: Int }

let scenarios: [(name: String, defaultN: Int, run: (Int) throws -> [Double])] = [
    ("local-write", 10_000, { n in
        let dir = temporaryDirectory("local-write")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let pool = try openStore(dir)
        try checkPragmas(pool)
        let encoder = JSONEncoder()
        let clock = ContinuousClock()
        var samples: [Double] = []
        samples.reserveCapacity(n)
        for i in 0..<n {
            let path = "items/d\(i)"
            let item = sampleItem(i)
            let elapsed = try clock.measure {
                let json = String(decoding: try encoder.encode(item), as: UTF8.self)
                try pool.write { db in try localSet(db, path: path, collection: "items", json: json, now: nowMicros()) }
            }
            samples.append(micros(elapsed))
        }
        try pool.close()
        return samples
    }),
    ("write-to-listener", 2_000, { n in
        let dir = temporaryDirectory("write-to-listener")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let pool = try openStore(dir)
        try checkPragmas(pool)
        let encoder = JSONEncoder()
        let arrivals = Arrivals()
        let queue = DispatchQueue(label: "grdb-peer.listener")
        let observation = ValueObservation.tracking { db in
            try String.fetchOne(db, sql: "SELECT data FROM documents WHERE path = ?", arguments: ["items/watched"])
        }.removeDuplicates()
        let cancellable = observation.start(in: pool, scheduling: .async(onQueue: queue), onError: { error in
            fatalError("observation failed: \(error)")
        }, onChange: { data in
            let decoded = data.flatMap { try? JSONDecoder().decode(Counter.self, from: $0.data(using: .utf8)!) }
            arrivals.record(decoded?.n ?? -1)
        })
        _ = arrivals.next()   // the initial value (no document yet)
        var samples: [Double] = []
        samples.reserveCapacity(n)
        var stale = 0
        for i in 0..<n {
            let start = ContinuousClock.now
            let json = String(decoding: try encoder.encode(Counter(n: i)), as: UTF8.self)
            try pool.write { db in try localSet(db, path: "items/watched", collection: "items", json: json, now: nowMicros()) }
            var arrival = arrivals.next()
            while arrival.value != i {
                precondition(arrival.value < i, "listener saw \(arrival.value), expected \(i)")
                stale += 1
                arrival = arrivals.next()
            }
            samples.append(micros(start.duration(to: arrival.at)))
        }
        cancellable.cancel()
        if stale > 0 {
            FileHandle.standardError.write("grdb-peer: write-to-listener: \(stale) extra callbacks with an earlier value\n".data(using: .utf8)!)
        }
        try pool.close()
        return samples
    }),
    ("cache-query", 200, { n in
        let dir = temporaryDirectory("cache-query")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let pool = try openStore(dir)
        try checkPragmas(pool)
        try populate(pool, count: 100_000)
        try checkPlan(pool, cacheQuerySQL, ["items", "c0"])
        let decoder = JSONDecoder()
        let clock = ContinuousClock()
        var samples: [Double] = []
        for i in 0..<n {
            var count = 0
            let elapsed = try clock.measure {
                count = try pool.read { db in try fetchItems(db, cacheQuerySQL, ["items", "c\(i % 10)"], decoder) }.count
            }
            precondition(count == 50, "cache-query returned \(count) documents")
            samples.append(micros(elapsed))
        }
        try pool.close()
        return samples
    }),
    ("cold-open", 10, { n in
        let dir = temporaryDirectory("cold-open")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let seeded = try openStore(dir)
            try populate(seeded, count: 100_000, pendingWrites: 1_000)
            let outbox = try seeded.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM outbox") }
            precondition(outbox == 1_000, "outbox has \(outbox ?? -1) rows")
            try checkPlan(seeded, coldOpenSQL, ["items"])
            try seeded.close()
        }
        let queue = DispatchQueue(label: "grdb-peer.listener")
        var samples: [Double] = []
        for _ in 0..<n {
            let start = ContinuousClock.now
            let pool = try openStore(dir)
            let arrivals = Arrivals()
            let decoder = JSONDecoder()
            let cancellable = ValueObservation.tracking { db in try fetchItems(db, coldOpenSQL, ["items"], decoder) }
                .start(in: pool, scheduling: .async(onQueue: queue), onError: { error in
                    fatalError("observation failed: \(error)")
                }, onChange: { items in
                    arrivals.record(items.count)
                })
            let first = arrivals.next()
            samples.append(micros(start.duration(to: .now)))
            precondition(first.value == 50, "cold-open first value had \(first.value) documents")
            cancellable.cancel()
            try pool.close()
        }
        return samples
    }),
]

// MARK: - Command line

let arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first, command != "--help", command != "-h" else {
    print("usage: grdb-peer SCENARIO [--n N] | grdb-peer list")
    exit(arguments.isEmpty ? 2 : 0)
}
if command == "list" {
    for s in scenarios { print("\(s.name)\t(default n \(s.defaultN))") }
    exit(0)
}
var n: Int?
if let i = arguments.firstIndex(of: "--n"), i + 1 < arguments.count {
    guard let value = Int(arguments[i + 1]), value > 0 else {
        FileHandle.standardError.write("grdb-peer: --n needs a positive integer\n".data(using: .utf8)!)
        exit(2)
    }
    n = value
}
guard let scenario = scenarios.first(where: { $0.name == command }) else {
    FileHandle.standardError.write("grdb-peer: unknown scenario \(command); grdb-peer list names them\n".data(using: .utf8)!)
    exit(2)
}
let count = n ?? scenario.defaultN
do {
    report(scenario.name, n: count, try scenario.run(count))
} catch {
    FileHandle.standardError.write("grdb-peer: \(scenario.name) failed: \(error)\n".data(using: .utf8)!)
    exit(1)
}

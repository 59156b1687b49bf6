import Foundation
import Testing
@testable import DocCache
import DocModel
import LevelDB
import DocTestSupport

/// Helpers of the persistence tests: temporary stores, documents, keys. Namespaced so they
/// cannot clash with helpers of other test files of this target.
enum PersistenceFixtures {
    /// Runs `body` with the path of a not yet existing store directory inside a fresh
    /// temporary directory, and removes everything afterwards.
    static func withDirectory<R>(_ body: (String) throws -> R) throws -> R {
        let parent = FileManager.default.temporaryDirectory
            .appendingPathComponent("doccache-persistence-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: parent) }
        return try body(parent.appendingPathComponent("tenant/user", isDirectory: true).path)
    }

    /// Opens a fresh store in a temporary directory, runs `body`, closes and removes it.
    static func withStore<R>(_ body: (Persistence, String) throws -> R) throws -> R {
        try withDirectory { directory in
            let persistence = try Persistence.open(directory: directory)
            defer { persistence.close() }
            return try body(persistence, directory)
        }
    }

    static func key(_ path: String) -> DocumentKey {
        try! DocumentKey(path)
    }

    static func path(_ path: String) -> ResourcePath {
        try! ResourcePath(path)
    }

    static func field(_ path: String) -> FieldPath {
        try! FieldPath(path)
    }

    /// A found document.
    static func document(_ path: String, _ fields: [String: Value] = [:], version: Int64 = 1) -> MaybeDocument {
        .document(Document(key: key(path), data: ObjectValue(fields), version: SnapshotVersion(microseconds: version)))
    }

    static func version(_ microseconds: Int64) -> SnapshotVersion {
        SnapshotVersion(microseconds: microseconds)
    }

    static func time(_ seconds: Int64, _ nanos: Int32 = 0) -> Timestamp {
        try! Timestamp(seconds: seconds, nanos: nanos)
    }

    /// Stores `documents` in one transaction, all at `readTime`.
    static func addDocuments(_ documents: [MaybeDocument], readTime: Int64 = 1, to persistence: Persistence) throws {
        try persistence.run("add documents") { txn throws(DocError) in
            for d in documents { try persistence.remoteDocuments.add(d, readTime: version(readTime), in: txn) }
        }
    }

    /// Every key of a table, as the store has it committed.
    static func keys(of table: KeySchema.Table, in persistence: Persistence) throws -> [[UInt8]] {
        try persistence.run("list keys") { txn throws(DocError) in
            txn.scan(prefix: table.prefix).map(\.key)
        }
    }

    /// The bytes of a string.
    static func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }
}

/// SplitMix64, seeded, for the persistence property tests (reproducible from the seed).
struct PersistenceRNG: RandomNumberGenerator {
    private var base: SplitMix64

    init(seed: UInt64) { base = SplitMix64(seed: seed) }

    mutating func next() -> UInt64 { base.next() }

    mutating func int(_ range: Range<Int>) -> Int { Int.random(in: range, using: &self) }
    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }
    mutating func pick<T>(_ items: [T]) -> T { items[int(0..<items.count)] }

    static let strings = ["", "a", "b", "ab", "é", "e\u{301}", "\u{0}", "z\u{FFFF}", "日本", "🙂", "a.b", "`q`"]
    static let fieldNames = ["a", "b", "c", "x.y", "name", "`odd`", "é", "__name__x"]

    /// A random scalar or small nested value (every type, with edge cases).
    mutating func value(depth: Int = 0) -> Value {
        switch int(0..<13) {
        case 0: return .null
        case 1: return .boolean(chance(0.5))
        case 2: return .integer(pick([Int64.min, -1, 0, 1, 2, 42, 1 << 53 + 1, .max]))
        case 3: return .double(pick([Double.nan, -.infinity, -1.5, -0.0, 0.0, 0.5, 1.0, 2.5, .infinity, 1e300]))
        case 4: return .timestamp(try! Timestamp(seconds: Int64(int(-100..<100)), nanos: Int32(int(0..<1_000_000_000))))
        case 5: return .string(pick(Self.strings))
        case 6: return .bytes(pick([[], [0], [0xFF], [1, 2, 3]]))
        case 7: return .reference(PersistenceFixtures.key(pick(["a/b", "a/c", "a/b/c/d"])))
        case 8: return .geoPoint(try! GeoPoint(latitude: pick([-90, 0, 12.5, 90]), longitude: pick([-180, 0, 7.25])))
        case 9 where depth < 2:
            return .array((0..<int(0..<3)).map { _ in
                var v = value(depth: depth + 1)
                if case .array = v { v = .integer(7) }
                return v
            })
        case 10 where depth < 2:
            var m: [String: Value] = [:]
            for _ in 0..<int(0..<3) { m[pick(Self.strings.filter { !$0.isEmpty })] = value(depth: depth + 1) }
            return .map(m)
        case 11: return .pendingServerTimestamp(localWriteTime: PersistenceFixtures.time(5), previous: chance(0.5) ? .integer(1) : nil)
        default: return .string(pick(Self.strings))
        }
    }

    mutating func fieldPath() -> FieldPath {
        FieldPath(unchecked: (0..<int(1..<3)).map { _ in pick(Self.fieldNames) })
    }

    mutating func documentKey() -> DocumentKey {
        PersistenceFixtures.key(pick(["rooms/a", "rooms/b", "rooms/a/msgs/1", "users/é", "x/🙂"]))
    }
}

extension RemoteDocumentCache {
    /// Stores `document` over what is stored for its key, read first (the store's callers pass
    /// what they have read already).
    func add(_ document: MaybeDocument, readTime: SnapshotVersion, in txn: PersistenceTransaction) throws(DocError) {
        add(document, readTime: readTime, replacing: try entry(for: document.key, in: txn), in: txn)
    }
}

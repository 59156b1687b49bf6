import Foundation
import LevelDB

/// Runs `body` with the path of a fresh, not yet existing directory inside a new temporary
/// directory, and removes everything afterwards.
func withTemporaryPath<R>(_ body: (String) async throws -> R) async throws -> R {
    let parent = FileManager.default.temporaryDirectory
        .appendingPathComponent("doccache-leveldb-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: parent) }
    return try await body(parent.appendingPathComponent("db", isDirectory: true).path)
}

/// Opens a fresh database in a temporary directory, runs `body`, closes and removes it.
func withTemporaryDatabase<R>(
    options: Options = Options(),
    _ body: (Database, String) async throws -> R
) async throws -> R {
    try await withTemporaryPath { path in
        let database = try Database.open(path: path, options: options)
        defer { database.close() }
        return try await body(database, path)
    }
}

/// The UTF-8 bytes of a string.
func bytes(_ string: String) -> [UInt8] {
    Array(string.utf8)
}

/// The keys of a list of entries, as strings.
func keyStrings(_ entries: [Entry]) -> [String] {
    entries.map { String(decoding: $0.key, as: UTF8.self) }
}

extension Database {
    /// Puts each key with its own name as value.
    func putKeys(_ keys: [[UInt8]]) throws {
        var batch = WriteBatch()
        for key in keys { batch.put(key, key) }
        try write(batch)
    }

    func putKeys(_ keys: [String]) throws {
        try putKeys(keys.map(bytes))
    }
}

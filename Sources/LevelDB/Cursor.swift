import CLevelDB
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A position in a ``Database``'s keys, over a LevelDB iterator: seek, step forward and back,
/// read the key and value under it.
///
/// ```swift
/// let cursor = try db.cursor()
/// try cursor.seek(to: Array("b".utf8))
/// while cursor.isValid {
///     print(try cursor.key(), try cursor.value())
///     try cursor.next()
/// }
/// ```
///
/// A new cursor is not positioned. It reads the database as it was when the cursor was made
/// (or as of ``ReadOptions/snapshot``): later writes are invisible to it. Every move checks
/// LevelDB's iterator status, so a read error (e.g. corruption) is thrown by the move that
/// met it.
///
/// Not `Sendable`: a LevelDB iterator must not be used by two threads at once. The cursor
/// keeps its database object alive and destroys its iterator when it goes away. If the
/// database is closed while the cursor exists, `close` destroys the iterator; from then on
/// ``isValid`` is `false` and every other call throws ``LevelDBError/Code/closed``.
public final class Cursor {
    /// The database the cursor reads.
    public let database: Database
    private let resource: NativeResource
    /// Kept so that a snapshot in the options lives as long as the cursor.
    private let options: ReadOptions

    init(database: Database, resource: NativeResource, options: ReadOptions) {
        self.database = database
        self.resource = resource
        self.options = options
    }

    deinit {
        database.core.destroyIterator(resource)
    }

    /// Whether the cursor is at an entry. `false` before the first seek, after moving past
    /// either end, after an error, and once the database is closed.
    public var isValid: Bool {
        (try? withIterator { leveldb_iter_valid($0) != 0 }) ?? false
    }

    /// Moves to the first key; invalid if the database is empty.
    public func seekToFirst() throws(LevelDBError) {
        try move { leveldb_iter_seek_to_first($0) }
    }

    /// Moves to the last key; invalid if the database is empty.
    public func seekToLast() throws(LevelDBError) {
        try move { leveldb_iter_seek_to_last($0) }
    }

    /// Moves to the first key at or after `key`; invalid if there is none.
    public func seek(to key: [UInt8]) throws(LevelDBError) {
        try move { iterator in
            key.withCBytes { leveldb_iter_seek(iterator, $0, $1) }
        }
    }

    /// Moves to the next key; invalid after the last.
    /// - Throws: `.invalidArgument` if the cursor is not at an entry.
    public func next() throws(LevelDBError) {
        try move(requiringValid: true) { leveldb_iter_next($0) }
    }

    /// Moves to the previous key; invalid before the first.
    /// - Throws: `.invalidArgument` if the cursor is not at an entry.
    public func previous() throws(LevelDBError) {
        try move(requiringValid: true) { leveldb_iter_prev($0) }
    }

    /// The key at the cursor.
    /// - Throws: `.invalidArgument` if the cursor is not at an entry.
    public func key() throws(LevelDBError) -> [UInt8] {
        try withValidIterator { iterator in
            var length = 0
            guard let key = leveldb_iter_key(iterator, &length) else { return [] }
            return copyBytes(key, count: length)
        }
    }

    /// The value at the cursor.
    /// - Throws: `.invalidArgument` if the cursor is not at an entry.
    public func value() throws(LevelDBError) -> [UInt8] {
        try withValidIterator { iterator in
            var length = 0
            guard let value = leveldb_iter_value(iterator, &length) else { return [] }
            return copyBytes(value, count: length)
        }
    }

    /// The entry at the cursor, or `nil` if it is not at one.
    public func entry() throws(LevelDBError) -> Entry? {
        try withIterator { iterator in
            guard leveldb_iter_valid(iterator) != 0 else { return nil }
            var keyLength = 0
            var valueLength = 0
            let key = leveldb_iter_key(iterator, &keyLength).map { copyBytes($0, count: keyLength) }
            let value = leveldb_iter_value(iterator, &valueLength).map { copyBytes($0, count: valueLength) }
            return Entry(key: key ?? [], value: value ?? [])
        }
    }

    /// Counts the keys from the cursor's position up to `end` (not included; `nil`: to the
    /// last key), leaving the cursor after them. Copies no key and no value, so counting a
    /// range costs LevelDB's iteration only.
    public func countKeys(before end: [UInt8]?) throws(LevelDBError) -> Int {
        try withIterator { iterator throws(LevelDBError) in
            var count = 0
            while leveldb_iter_valid(iterator) != 0 {
                if let end {
                    var length = 0
                    guard let key = leveldb_iter_key(iterator, &length) else { break }
                    let before = end.withUnsafeBytes { limit -> Bool in
                        let shared = min(length, limit.count)
                        let order = shared == 0 ? 0 : memcmp(key, limit.baseAddress!, shared)
                        return order < 0 || (order == 0 && length < limit.count)
                    }
                    guard before else { break }
                }
                count += 1
                leveldb_iter_next(iterator)
            }
            try checkStatus(iterator)
            return count
        }
    }

    /// Throws the error LevelDB's iterator has met, if any (`leveldb_iter_get_error`). The
    /// moves already check it; this is for callers that want to check explicitly.
    public func checkError() throws(LevelDBError) {
        try withIterator { iterator throws(LevelDBError) in try checkStatus(iterator) }
    }

    // MARK: Internals

    private func withIterator<R>(_ body: (OpaquePointer) throws(LevelDBError) -> R) throws(LevelDBError) -> R {
        try database.core.withHandle { _ throws(LevelDBError) in
            // The database's read lock is held: `close` cannot destroy the iterator meanwhile.
            guard let iterator = resource.pointer else {
                throw LevelDBError.closed("the cursor's database has been closed", path: database.path)
            }
            return try body(iterator)
        }
    }

    private func withValidIterator<R>(_ body: (OpaquePointer) throws(LevelDBError) -> R) throws(LevelDBError) -> R {
        try withIterator { iterator throws(LevelDBError) in
            guard leveldb_iter_valid(iterator) != 0 else { throw notPositioned }
            return try body(iterator)
        }
    }

    private func move(requiringValid: Bool = false, _ body: (OpaquePointer) -> Void) throws(LevelDBError) {
        try withIterator { iterator throws(LevelDBError) in
            if requiringValid && leveldb_iter_valid(iterator) == 0 { throw notPositioned }
            body(iterator)
            try checkStatus(iterator)
        }
    }

    private func checkStatus(_ iterator: OpaquePointer) throws(LevelDBError) {
        try callLevelDB(path: database.path) { error in leveldb_iter_get_error(iterator, error) }
    }

    private var notPositioned: LevelDBError {
        LevelDBError(.invalidArgument, "the cursor is not positioned at an entry", path: database.path)
    }
}

import CLevelDB

/// An open LevelDB database: a sorted map from byte-string keys to byte-string values, stored
/// in a directory.
///
/// ```swift
/// let db = try Database.open(path: "/tmp/example")
/// try db.put("greeting", "hello")
/// let value = try db.get("greeting")          // Array("hello".utf8)
/// for entry in try db.entries(withPrefix: Array("user/".utf8)) { … }
/// db.close()
/// ```
///
/// Keys are ordered bytewise (`memcmp`, a shorter key before its extensions). Every failure is
/// a thrown ``LevelDBError``; a call on a closed database throws ``LevelDBError/Code/closed``.
///
/// ## Thread safety
/// A `Database` is `Sendable`: any number of threads or tasks may call it at once. LevelDB's
/// handle is thread-safe, so calls run concurrently (none waits for another, apart from
/// LevelDB's own internal write queue). Internally each call holds a readers-writer lock in
/// *read* mode for its duration, and ``close()`` takes it in *write* mode: `close` therefore
/// waits for the calls already running, and calls that start after `close` began throw
/// `.closed` without waiting. `close` never frees the handle under a running call.
///
/// ``Cursor``s are not `Sendable` (a LevelDB iterator is not thread-safe); keep each on one
/// task. ``Snapshot``s are `Sendable`. Both keep their database object alive. If the database
/// is closed while some exist, `close` destroys their C objects first; afterwards using them
/// throws `.closed`.
///
/// Only one `Database` may have a given directory open at a time, in this process or any
/// other: a second ``open(path:options:)`` fails with ``LevelDBError/Code/locked``.
public final class Database: Sendable {
    /// The directory of the database, as given to ``open(path:options:)``.
    public let path: String
    let core: DatabaseCore

    private init(core: DatabaseCore) {
        self.core = core
        self.path = core.path
    }

    // MARK: Opening, closing, destroying, repairing

    /// Opens (and by default creates) the database in the directory at `path`.
    ///
    /// - Throws: ``LevelDBError`` — `.locked` if it is open elsewhere, `.notFound` if it is
    ///   missing and `createIfMissing` is `false`, `.alreadyExists` if it exists and
    ///   `errorIfExists` is `true`, `.invalidArgument` for bad options, `.ioError`,
    ///   `.corruption`.
    public static func open(path: String, options: Options = Options()) throws(LevelDBError) -> Database {
        let nativeOptions = try NativeOptions(options, path: path)
        if options.reuseIntactLog, WriteAheadLog.canReuseFiles(in: path, maximumBytes: Options.maximumReusedLogBytes) {
            nativeOptions.reuseLogs()
        }
        let handle = try callLevelDB(path: path) { error in
            leveldb_open(nativeOptions.pointer, path, error)
        }
        guard let handle else {
            throw LevelDBError(.unknown, "leveldb_open returned NULL without an error", path: path)
        }
        return Database(core: DatabaseCore(path: path, handle: handle, nativeOptions: nativeOptions))
    }

    /// Closes the database, releasing its files, lock, cache and memory.
    ///
    /// Waits for the calls in flight to finish; then destroys the iterators of live cursors and
    /// releases live snapshots (using them afterwards throws `.closed`). Idempotent. After it
    /// returns, every call on this object throws ``LevelDBError/Code/closed`` and the directory
    /// can be opened again. A database that is not closed explicitly closes when its last
    /// reference (including those held by cursors and snapshots) goes away.
    public func close() {
        core.close()
    }

    /// Whether ``close()`` has been called.
    public var isClosed: Bool { core.isClosed }

    /// Deletes the database at `path` and its directory contents. The database must not be
    /// open. Succeeds if there is nothing to delete.
    public static func destroy(path: String, options: Options = Options()) throws(LevelDBError) {
        let nativeOptions = try NativeOptions(options, path: path)
        try withExtendedLifetime(nativeOptions) { () throws(LevelDBError) in
            try callLevelDB(path: path) { error in
                leveldb_destroy_db(nativeOptions.pointer, path, error)
            }
        }
    }

    /// Tries to recover as much data as possible from a damaged database at `path` (some data
    /// may be lost). The database must not be open.
    public static func repair(path: String, options: Options = Options()) throws(LevelDBError) {
        let nativeOptions = try NativeOptions(options, path: path)
        try withExtendedLifetime(nativeOptions) { () throws(LevelDBError) in
            try callLevelDB(path: path) { error in
                leveldb_repair_db(nativeOptions.pointer, path, error)
            }
        }
    }

    // MARK: Reading and writing single keys

    /// The value stored under `key`, or `nil` if there is none. An empty value is `[]`, not
    /// `nil`.
    public func get(_ key: [UInt8], options: ReadOptions = ReadOptions()) throws(LevelDBError) -> [UInt8]? {
        try withReadOptions(options) { handle, readOptions throws(LevelDBError) in
            var length = 0
            let value = try key.withCBytes { keyPointer, keyLength in
                Result { () throws(LevelDBError) in
                    try callLevelDB(path: path) { error in
                        leveldb_get(handle, readOptions, keyPointer, keyLength, &length, error)
                    }
                }
            }.get()
            // NULL: no such key. Non-NULL (even with length 0, LevelDB copies the value with
            // malloc, which returns a unique pointer for 0 bytes): a value, to be freed.
            guard let value else { return nil }
            return takeBytes(value, count: length)
        }
    }

    /// Stores `value` under `key`, replacing any previous value.
    public func put(_ key: [UInt8], _ value: [UInt8], options: WriteOptions = WriteOptions()) throws(LevelDBError) {
        try withWriteOptions(options) { handle, writeOptions throws(LevelDBError) in
            try key.withCBytes { keyPointer, keyLength in
                value.withCBytes { valuePointer, valueLength in
                    Result { () throws(LevelDBError) in
                        try callLevelDB(path: path) { error in
                            leveldb_put(handle, writeOptions, keyPointer, keyLength, valuePointer, valueLength, error)
                        }
                    }
                }
            }.get()
        }
    }

    /// Removes `key` and its value. Removing a missing key is not an error.
    public func delete(_ key: [UInt8], options: WriteOptions = WriteOptions()) throws(LevelDBError) {
        try withWriteOptions(options) { handle, writeOptions throws(LevelDBError) in
            try key.withCBytes { keyPointer, keyLength in
                Result { () throws(LevelDBError) in
                    try callLevelDB(path: path) { error in
                        leveldb_delete(handle, writeOptions, keyPointer, keyLength, error)
                    }
                }
            }.get()
        }
    }

    /// Applies every operation of `batch` atomically, in order: readers and a reopened database
    /// see all of them or none.
    public func write(_ batch: WriteBatch, options: WriteOptions = WriteOptions()) throws(LevelDBError) {
        var native = NativeWriteBatch()
        batch.append(to: &native)
        try write(native, options: options)
    }

    // MARK: Snapshots and iteration

    /// Takes a snapshot of the current state, for consistent reads through
    /// ``ReadOptions/snapshot``. Release it when done (it is released when the object goes
    /// away): a live snapshot keeps LevelDB from discarding the old data it can see.
    public func snapshot() throws(LevelDBError) -> Snapshot {
        let resource = try core.withHandle { handle throws(LevelDBError) in
            guard let snapshot = leveldb_create_snapshot(handle) else {
                throw LevelDBError(.unknown, "leveldb_create_snapshot returned NULL", path: path)
            }
            let resource = NativeResource(.snapshot, snapshot)
            core.register(resource)
            return resource
        }
        return Snapshot(database: self, resource: resource)
    }

    /// A cursor over the whole database, not positioned: call one of its `seek` methods first.
    public func cursor(options: ReadOptions = ReadOptions()) throws(LevelDBError) -> Cursor {
        let resource = try withReadOptions(options) { handle, readOptions throws(LevelDBError) in
            guard let iterator = leveldb_create_iterator(handle, readOptions) else {
                throw LevelDBError(.unknown, "leveldb_create_iterator returned NULL", path: path)
            }
            let resource = NativeResource(.iterator, iterator)
            core.register(resource)
            return resource
        }
        return Cursor(database: self, resource: resource, options: options)
    }

    /// The entries whose keys are in `range`, in ascending key order (descending if `reverse`).
    ///
    /// The sequence is lazy: each iteration opens a new ``Cursor`` and reads as it goes. See
    /// ``Entries`` for how errors during iteration are reported.
    public func entries(
        in range: KeyRange = .all,
        reverse: Bool = false,
        options: ReadOptions = ReadOptions()
    ) throws(LevelDBError) -> Entries {
        try checkUsable(options)
        return Entries(database: self, range: range, reverse: reverse, options: options)
    }

    /// The entries whose keys start with `prefix`, in ascending key order (descending if
    /// `reverse`).
    public func entries(
        withPrefix prefix: [UInt8],
        reverse: Bool = false,
        options: ReadOptions = ReadOptions()
    ) throws(LevelDBError) -> Entries {
        try entries(in: .prefix(prefix), reverse: reverse, options: options)
    }

    // MARK: Maintenance and introspection

    /// The approximate number of bytes of file-system space used by each range of keys.
    ///
    /// Recent writes that are still only in the log and the memory table are not counted, so a
    /// freshly written range can measure 0 until it is flushed (``compact(from:to:)`` flushes).
    public func approximateSizes(of ranges: [KeyRange]) throws(LevelDBError) -> [UInt64] {
        guard !ranges.isEmpty else { return [] }
        guard let rangeCount = Int32(exactly: ranges.count) else {
            throw LevelDBError(.invalidArgument, "too many ranges: \(ranges.count)", path: path)
        }
        return try core.withHandle { handle throws(LevelDBError) in
            // LevelDB measures [start, limit). An unbounded upper end is the key just past the
            // last key; an inclusive one is the key just past the bound.
            var lastKeySuccessor: [UInt8]? = nil
            if ranges.contains(where: { $0.upperBound == nil }) {
                lastKeySuccessor = try lastKey(handle).map { $0 + [0] } ?? []
            }
            var starts: [[UInt8]] = []
            var limits: [[UInt8]] = []
            for range in ranges {
                let start = range.lowerBound ?? []
                let limit: [UInt8]
                switch range.upperBound {
                case nil: limit = lastKeySuccessor ?? []
                case .excluding(let key)?: limit = key
                case .including(let key)?: limit = key + [0]
                }
                starts.append(start)
                // An empty or inverted range measures 0.
                limits.append(limit.lexicographicallyPrecedes(start) ? start : limit)
            }
            var sizes = [UInt64](repeating: 0, count: ranges.count)
            withCByteArrays(starts) { startPointers, startLengths in
                withCByteArrays(limits) { limitPointers, limitLengths in
                    startPointers.map { Optional($0) }.withUnsafeBufferPointer { startPointers in
                        limitPointers.map { Optional($0) }.withUnsafeBufferPointer { limitPointers in
                            sizes.withUnsafeMutableBufferPointer { sizes in
                                leveldb_approximate_sizes(
                                    handle, rangeCount,
                                    startPointers.baseAddress, startLengths,
                                    limitPointers.baseAddress, limitLengths,
                                    sizes.baseAddress)
                            }
                        }
                    }
                }
            }
            return sizes
        }
    }

    /// The approximate number of bytes of file-system space used by the keys in
    /// [`start`, `limit`). See ``approximateSizes(of:)``.
    public func approximateSize(from start: [UInt8], to limit: [UInt8]) throws(LevelDBError) -> UInt64 {
        try approximateSizes(of: [KeyRange(from: start, upTo: limit)]).first ?? 0
    }

    /// Compacts the underlying storage for the keys in [`start`, `end`] (`nil`: from the first
    /// key / to the last key; both `nil`: the whole database). Deleted and overwritten data is
    /// discarded and the data is rewritten into the most compact form. Blocks until done.
    public func compact(from start: [UInt8]? = nil, to end: [UInt8]? = nil) throws(LevelDBError) {
        try core.withHandle { handle throws(LevelDBError) in
            func withOptionalKey(_ key: [UInt8]?, _ body: (UnsafePointer<CChar>?, Int) -> Void) {
                if let key { key.withCBytes { body($0, $1) } } else { body(nil, 0) }
            }
            withOptionalKey(start) { startPointer, startLength in
                withOptionalKey(end) { endPointer, endLength in
                    leveldb_compact_range(handle, startPointer, startLength, endPointer, endLength)
                }
            }
        }
    }

    /// The value of a LevelDB property, or `nil` if LevelDB does not know `name`.
    ///
    /// Known properties include `leveldb.stats`, `leveldb.sstables`,
    /// `leveldb.approximate-memory-usage` and `leveldb.num-files-at-level<N>`.
    public func property(_ name: String) throws(LevelDBError) -> String? {
        try core.withHandle { handle in
            guard let value = leveldb_property_value(handle, name) else { return nil }
            return takeString(value)
        }
    }

    // MARK: Internals

    /// Throws if `options` names a snapshot that cannot be used with this database.
    func checkUsable(_ options: ReadOptions) throws(LevelDBError) {
        if core.isClosed { throw core.closedError }
        guard let snapshot = options.snapshot else { return }
        guard snapshot.database === self else {
            throw LevelDBError(
                .invalidArgument, "the snapshot belongs to the database at \(snapshot.database.path)",
                path: path)
        }
        if snapshot.isReleased { throw snapshot.releasedError }
    }

    /// Runs `body` under the read lock with the handle and C read options for `options`.
    func withReadOptions<R>(
        _ options: ReadOptions,
        _ body: (_ handle: OpaquePointer, _ readOptions: OpaquePointer) throws(LevelDBError) -> R
    ) throws(LevelDBError) -> R {
        try checkUsable(options)
        return try core.withHandle { handle throws(LevelDBError) in
            // Under the read lock a snapshot cannot be released (that takes the write lock).
            var snapshotPointer: OpaquePointer? = nil
            if let snapshot = options.snapshot {
                guard let pointer = snapshot.resource.pointer else { throw snapshot.releasedError }
                snapshotPointer = pointer
            }
            return try withNativeReadOptions(options, snapshot: snapshotPointer, path: path) {
                readOptions throws(LevelDBError) in
                try body(handle, readOptions)
            }
        }
    }

    /// Runs `body` under the read lock with the handle and C write options for `options`.
    func withWriteOptions<R>(
        _ options: WriteOptions,
        _ body: (_ handle: OpaquePointer, _ writeOptions: OpaquePointer) throws(LevelDBError) -> R
    ) throws(LevelDBError) -> R {
        try core.withHandle { handle throws(LevelDBError) in
            try withNativeWriteOptions(options, path: path) { writeOptions throws(LevelDBError) in
                try body(handle, writeOptions)
            }
        }
    }

    /// The largest key, or `nil` if the database is empty. Call under the read lock.
    private func lastKey(_ handle: OpaquePointer) throws(LevelDBError) -> [UInt8]? {
        try withNativeReadOptions(ReadOptions(fillCache: false), snapshot: nil, path: path) {
            readOptions throws(LevelDBError) in
            guard let iterator = leveldb_create_iterator(handle, readOptions) else {
                throw LevelDBError(.unknown, "leveldb_create_iterator returned NULL", path: path)
            }
            defer { leveldb_iter_destroy(iterator) }
            leveldb_iter_seek_to_last(iterator)
            try callLevelDB(path: path) { error in leveldb_iter_get_error(iterator, error) }
            guard leveldb_iter_valid(iterator) != 0 else { return nil }
            var length = 0
            guard let key = leveldb_iter_key(iterator, &length) else { return nil }
            return copyBytes(key, count: length)
        }
    }
}

import CLevelDB
import CLevelDBExtras

/// The C objects behind ``Options``: a `leveldb_options_t` and, when asked for, the LRU block
/// cache and the Bloom filter policy it points to.
///
/// LevelDB keeps raw pointers to the cache and the filter policy for as long as the database is
/// open, so an instance must outlive the `leveldb_t` opened with it; ``DatabaseCore`` drops it
/// right after `leveldb_close`. Everything is destroyed in `deinit`.
final class NativeOptions {
    let pointer: OpaquePointer
    private let cache: OpaquePointer?
    private let filterPolicy: OpaquePointer?

    init(_ options: Options, path: String) throws(LevelDBError) {
        try Self.validate(options, path: path)
        guard let pointer = leveldb_options_create() else {
            throw LevelDBError(.unknown, "leveldb_options_create returned NULL", path: path)
        }
        self.pointer = pointer
        leveldb_options_set_create_if_missing(pointer, options.createIfMissing.cBool)
        leveldb_options_set_error_if_exists(pointer, options.errorIfExists.cBool)
        leveldb_options_set_paranoid_checks(pointer, options.paranoidChecks.cBool)
        if let size = options.writeBufferSize {
            leveldb_options_set_write_buffer_size(pointer, size)
        }
        if let count = options.maxOpenFiles {
            leveldb_options_set_max_open_files(pointer, Int32(count))
        }
        if let size = options.blockSize {
            leveldb_options_set_block_size(pointer, size)
        }
        switch options.compression {
        case .none: leveldb_options_set_compression(pointer, Int32(leveldb_no_compression))
        case .snappy: leveldb_options_set_compression(pointer, Int32(leveldb_snappy_compression))
        }

        var cache: OpaquePointer? = nil
        if let capacity = options.blockCacheSize {
            cache = leveldb_cache_create_lru(capacity)
            if let cache { leveldb_options_set_cache(pointer, cache) }
        }
        self.cache = cache

        var filterPolicy: OpaquePointer? = nil
        if let bits = options.bloomFilterBitsPerKey {
            filterPolicy = leveldb_filterpolicy_create_bloom(Int32(bits))
            if let filterPolicy { leveldb_options_set_filter_policy(pointer, filterPolicy) }
        }
        self.filterPolicy = filterPolicy

        if options.blockCacheSize != nil && cache == nil {
            throw LevelDBError(.unknown, "leveldb_cache_create_lru returned NULL", path: path)
        }
        if options.bloomFilterBitsPerKey != nil && filterPolicy == nil {
            throw LevelDBError(.unknown, "leveldb_filterpolicy_create_bloom returned NULL", path: path)
        }
    }

    /// Has the open append to the last log and manifest (``Options/reuseIntactLog``, when
    /// ``WriteAheadLog/canReuseFiles(in:maximumBytes:)`` allows it).
    func reuseLogs() {
        doccache_leveldb_options_set_reuse_logs(pointer, 1)
    }

    deinit {
        leveldb_options_destroy(pointer)
        if let filterPolicy { leveldb_filterpolicy_destroy(filterPolicy) }
        if let cache { leveldb_cache_destroy(cache) }
    }

    private static func validate(_ options: Options, path: String) throws(LevelDBError) {
        // The path goes to C as a NUL-terminated string.
        guard !path.isEmpty, !path.utf8.contains(0) else {
            throw LevelDBError(.invalidArgument, "the database path is empty or contains a NUL byte", path: path)
        }
        func check(_ value: Int?, _ name: String, minimum: Int, maximum: Int = Int.max)
            throws(LevelDBError)
        {
            guard let value else { return }
            guard value >= minimum, value <= maximum else {
                throw LevelDBError(
                    .invalidArgument,
                    "Options.\(name) must be between \(minimum) and \(maximum), got \(value)",
                    path: path)
            }
        }
        try check(options.blockCacheSize, "blockCacheSize", minimum: 0)
        try check(options.writeBufferSize, "writeBufferSize", minimum: 1)
        try check(options.maxOpenFiles, "maxOpenFiles", minimum: 1, maximum: Int(Int32.max))
        try check(options.blockSize, "blockSize", minimum: 1)
        try check(options.bloomFilterBitsPerKey, "bloomFilterBitsPerKey", minimum: 1, maximum: 1_000)
    }
}

/// Calls `body` with a `leveldb_readoptions_t` for `options`, reading through `snapshot` (a
/// `leveldb_snapshot_t`) when given. The C object lives only for the call.
func withNativeReadOptions<R>(
    _ options: ReadOptions,
    snapshot: OpaquePointer?,
    path: String,
    _ body: (OpaquePointer) throws(LevelDBError) -> R
) throws(LevelDBError) -> R {
    guard let native = leveldb_readoptions_create() else {
        throw LevelDBError(.unknown, "leveldb_readoptions_create returned NULL", path: path)
    }
    defer { leveldb_readoptions_destroy(native) }
    leveldb_readoptions_set_verify_checksums(native, options.verifyChecksums.cBool)
    leveldb_readoptions_set_fill_cache(native, options.fillCache.cBool)
    if let snapshot { leveldb_readoptions_set_snapshot(native, snapshot) }
    return try body(native)
}

/// Calls `body` with a `leveldb_writeoptions_t` for `options`. The C object lives only for
/// the call.
func withNativeWriteOptions<R>(
    _ options: WriteOptions,
    path: String,
    _ body: (OpaquePointer) throws(LevelDBError) -> R
) throws(LevelDBError) -> R {
    guard let native = leveldb_writeoptions_create() else {
        throw LevelDBError(.unknown, "leveldb_writeoptions_create returned NULL", path: path)
    }
    defer { leveldb_writeoptions_destroy(native) }
    leveldb_writeoptions_set_sync(native, options.sync.cBool)
    return try body(native)
}

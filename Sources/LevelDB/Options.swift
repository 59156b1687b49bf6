/// How a database is opened (LevelDB's `Options`).
///
/// Properties left `nil` keep LevelDB's own defaults. The values are checked when the database
/// is opened; a negative or out-of-range size is an ``LevelDBError/Code/invalidArgument``.
public struct Options: Sendable, Hashable {
    /// The block compression LevelDB applies to table files.
    public enum Compression: Sendable, Hashable {
        /// No compression.
        case none
        /// Snappy compression (LevelDB's default). If libleveldb was built without Snappy,
        /// LevelDB silently stores blocks uncompressed.
        case snappy
    }

    /// Create the database if it is missing. Default `true`.
    public var createIfMissing: Bool
    /// Fail with ``LevelDBError/Code/alreadyExists`` if the database already exists.
    /// Default `false`.
    public var errorIfExists: Bool
    /// Check data aggressively and stop at the first sign of corruption. Default `false`.
    public var paranoidChecks: Bool
    /// The capacity in bytes of an LRU cache of uncompressed blocks created for this database
    /// (and destroyed when it closes). `nil`: LevelDB's internal 8 MiB cache.
    public var blockCacheSize: Int?
    /// Bytes of writes buffered in memory before they are sorted into a table file.
    /// `nil`: LevelDB's default (4 MiB).
    public var writeBufferSize: Int?
    /// How many files LevelDB may keep open. `nil`: LevelDB's default (1000).
    public var maxOpenFiles: Int?
    /// Approximate size in bytes of uncompressed data per block. `nil`: LevelDB's default
    /// (4 KiB).
    public var blockSize: Int?
    /// Block compression. Default ``Compression/snappy``, as in LevelDB.
    public var compression: Compression
    /// Bits per key of a Bloom filter kept for each table, which saves disk reads for missing
    /// keys (10 is a good value). `nil`: no filter. A database must be reopened with the same
    /// filter setting to benefit from the filters already written.
    public var bloomFilterBitsPerKey: Int?
    /// Reuse the newest log file and the manifest on open when both are intact and at most
    /// ``maximumReusedLogBytes`` long: LevelDB then keeps the log's records in memory and
    /// appends to both, where it would otherwise write them to a level-0 table, start a new
    /// log and write a new manifest, with four `fdatasync`s. Intact means that every record's
    /// checksum verifies and the file ends where a record ends: a file torn by a killed
    /// process or a power loss is never appended to (for a log, LevelDB would drop the rest of
    /// its block, new records included, on the next open; for a manifest, the next open would
    /// fail); the database is then opened as without this option. Default `false` (LevelDB's `reuse_logs`, which the C API does not expose).
    public var reuseIntactLog: Bool

    /// The largest log or manifest ``reuseIntactLog`` reuses (64 KiB): every open replays the
    /// reused log and reads the manifest, so longer ones are written anew instead, once.
    public static let maximumReusedLogBytes = 64 * 1024

    /// Creates open options; every argument has LevelDB's default.
    public init(
        createIfMissing: Bool = true,
        errorIfExists: Bool = false,
        paranoidChecks: Bool = false,
        blockCacheSize: Int? = nil,
        writeBufferSize: Int? = nil,
        maxOpenFiles: Int? = nil,
        blockSize: Int? = nil,
        compression: Compression = .snappy,
        bloomFilterBitsPerKey: Int? = nil,
        reuseIntactLog: Bool = false
    ) {
        self.createIfMissing = createIfMissing
        self.errorIfExists = errorIfExists
        self.paranoidChecks = paranoidChecks
        self.blockCacheSize = blockCacheSize
        self.writeBufferSize = writeBufferSize
        self.maxOpenFiles = maxOpenFiles
        self.blockSize = blockSize
        self.compression = compression
        self.bloomFilterBitsPerKey = bloomFilterBitsPerKey
        self.reuseIntactLog = reuseIntactLog
    }
}

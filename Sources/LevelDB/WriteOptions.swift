/// Options for a write: ``Database/put(_:_:options:)``, ``Database/delete(_:options:)`` and
/// ``Database/write(_:options:)``.
public struct WriteOptions: Sendable, Hashable {
    /// Whether the write is flushed to stable storage (`fsync`) before the call returns.
    /// Default `false`.
    ///
    /// What survives what:
    /// - **Process crash** (including `SIGKILL`): every write that has *returned* survives,
    ///   whatever `sync` says. LevelDB appends each write to its log file with `write(2)`
    ///   before returning, and the operating system keeps that data in its page cache after
    ///   the process dies. This is the property this package claims and tests.
    /// - **Machine crash or power loss**: only writes made with `sync: true` (and everything
    ///   written before them) are guaranteed to survive; the most recent `sync: false` writes
    ///   may be lost. Nothing is claimed here beyond what LevelDB and the file system provide.
    ///
    /// A synchronous write costs a disk flush (milliseconds); batching several changes in one
    /// ``WriteBatch`` written with `sync: true` amortises it.
    public var sync: Bool

    /// Creates write options.
    public init(sync: Bool = false) {
        self.sync = sync
    }
}

/// Options for a read: ``Database/get(_:options:)``, cursors and entry sequences.
public struct ReadOptions: Sendable {
    /// Verify the checksums of all data read from disk. Default `false`.
    public var verifyChecksums: Bool
    /// Keep the blocks read in the block cache. Default `true`; set `false` for bulk scans
    /// that should not evict the working set.
    public var fillCache: Bool
    /// Read the database as it was when this snapshot was taken. `nil`: read the current
    /// state (an implicit snapshot taken at the start of the read or when the cursor is made).
    /// The snapshot must come from the database that is read.
    public var snapshot: Snapshot?

    /// Creates read options; every argument has LevelDB's default.
    public init(verifyChecksums: Bool = false, fillCache: Bool = true, snapshot: Snapshot? = nil) {
        self.verifyChecksums = verifyChecksums
        self.fillCache = fillCache
        self.snapshot = snapshot
    }
}

public import DocModel
internal import LevelDB

/// Restores a backup file (``LevelDBBackup``) into a new data directory for the embedded
/// store, all or nothing.
///
/// ```swift
/// let result = try LevelDBRestore.restore(file: "/backups/doccache.backup", into: "/var/lib/doccache-restored")
/// ```
///
/// 1. The target must be absent or an empty directory (nothing is changed otherwise).
/// 2. The whole file is read and checked (framing, count, SHA-256) before anything is created,
///    and its layout must be one this server opens.
/// 3. The records are written into a new directory beside the target
///    (`.NAME.restoring-XXXX`), in large write batches, the last one synced; the file's
///    checksum is checked again on this second read.
/// 4. That directory is renamed to the target. Any failure before removes it.
///
/// Every tenant gets a new incarnation, and its state records the previous one with the
/// backup's version (``TenantState/PreviousIncarnation``): clients' resume tokens up to the
/// backup's version resume, tokens from after it (commits the restore lost) get a `reset` —
/// even once new commits carry the restored store past their version.
public enum LevelDBRestore {
    /// A restore done.
    public struct Report: Sendable {
        /// The backup's header, records and size.
        public var summary: BackupSummary
        /// Every tenant's new identity.
        public var tenants: [TenantReincarnation]
    }

    /// Bytes of records per write batch.
    static let maxBatchBytes = 4 << 20

    /// Restores `file` into `directory`.
    ///
    /// - Throws: `failedPrecondition` when `directory` is not empty (or not a directory) or the
    ///   backup's layout is not one this server reads; the errors of
    ///   ``LevelDBBackup/verify(file:)`` for a missing, foreign, truncated or corrupt file;
    ///   file-system errors by what failed. Nothing is left behind on failure.
    public static func restore(file: String, into directory: String) throws(DocError) -> Report {
        try checkTarget(directory)
        let summary = try LevelDBBackup.verify(file: file)
        let layout = summary.header.layoutVersion
        let readable = LevelDBIndexMigration.fromVersions + [LevelDBServerStore.formatVersion]
        guard readable.contains(layout) else {
            throw DocError(.failedPrecondition,
                           "the backup \(file) has store layout \(layout); this server reads layouts \(readable.joined(separator: ", ")): restore it with the docctl that made it, or a newer one")
        }

        let parent = POSIXFile.parent(of: directory)
        try BackupFiles.makeDirectories(parent)
        let temporary = parent + "/." + BackupFiles.name(of: directory) + ".restoring-" + BackupFiles.randomHex()
        do {
            try BackupFiles.makeDirectories(temporary)
            let tenants = try write(file, into: temporary, expecting: summary)
            try checkTarget(directory)   // still empty: nothing appeared meanwhile
            try BackupFiles.rename(temporary, to: directory)
            BackupFiles.syncDirectory(parent)
            return Report(summary: summary, tenants: tenants)
        } catch {
            BackupFiles.removeTree(temporary)
            throw error
        }
    }

    /// The target must be absent or an empty directory.
    private static func checkTarget(_ directory: String) throws(DocError) {
        switch BackupFiles.kind(directory) {
        case .missing:
            return
        case .directory:
            let entries = try BackupFiles.entries(directory)
            guard entries.isEmpty else {
                throw DocError(.failedPrecondition,
                               "\(directory) is not empty (\(entries.count) entr\(entries.count == 1 ? "y" : "ies"), e.g. \(entries.sorted()[0])): restore into a new or empty directory; nothing was changed")
            }
        case .file, .other:
            throw DocError(.failedPrecondition, "\(directory) exists and is not a directory: restore into a new or empty directory")
        }
    }

    /// Writes the records of `file` into a new LevelDB database at `path`, giving every tenant
    /// a new incarnation; returns them.
    private static func write(_ file: String, into path: String, expecting summary: BackupSummary) throws(DocError) -> [TenantReincarnation] {
        var options = LevelDBServerStore.databaseOptions
        options.errorIfExists = true
        // Bulk loading: larger memtables, fewer table files.
        options.writeBufferSize = 32 << 20
        let database = try LevelDBServerStore.run { try Database.open(path: path, options: options) }
        defer { database.close() }

        var stateKeys: [[UInt8]: BackupHeader.Tenant] = [:]
        for tenant in summary.header.tenants { stateKeys[TenantKeys(tenant.tenant).state] = tenant }
        var reincarnated: [TenantReincarnation] = []

        let reader = try BackupReader(path: file)
        defer { reader.close() }
        var batch = WriteBatch()
        var batchBytes = 0
        while let (key, value) = try reader.next() {
            var value = value
            if let tenant = stateKeys.removeValue(forKey: key) {
                var state = try TenantState(record: value)
                guard state.lastVersion == tenant.lastVersion, state.incarnation == tenant.incarnation else {
                    throw DocError(.dataLoss, "the backup \(file) is inconsistent: the state of tenant \(tenant.tenant) does not match its header")
                }
                let previous = TenantState.PreviousIncarnation(incarnation: state.incarnation, validThrough: state.lastVersion)
                state.previousIncarnation = previous
                state.incarnation = TenantState.newIncarnation(other: state.incarnation)
                value = state.record
                reincarnated.append(TenantReincarnation(tenant: tenant.tenant, incarnation: state.incarnation, previous: previous))
            }
            batch.put(key, value)
            batchBytes += key.count + value.count
            if batchBytes >= maxBatchBytes {
                try LevelDBServerStore.run { try database.write(batch, options: WriteOptions(sync: false)) }
                batch = WriteBatch()
                batchBytes = 0
            }
        }
        guard reader.records == summary.records else {
            throw DocError(.dataLoss, "the backup \(file) changed while it was restored")
        }
        guard stateKeys.isEmpty else {
            throw DocError(.dataLoss, "the backup \(file) is inconsistent: its header names tenants without a state record (\(stateKeys.values.map(\.tenant.rawValue).sorted().joined(separator: ", ")))")
        }
        // The last batch is synced: LevelDB flushes its log, with every earlier batch in it.
        try LevelDBServerStore.run { try database.write(batch, options: WriteOptions(sync: true)) }
        return reincarnated.sorted { $0.tenant < $1.tenant }
    }
}

/// A tenant given a new incarnation by a restore: resume tokens of ``previous`` up to its
/// version still resume, every other token of the old incarnation gets a `reset`.
public struct TenantReincarnation: Sendable, Hashable {
    /// The tenant.
    public var tenant: TenantID
    /// Its new incarnation.
    public var incarnation: UInt64
    /// The incarnation it replaced and the version (the backup's) its tokens are valid through.
    public var previous: TenantState.PreviousIncarnation

    /// Records that `tenant` now has `incarnation`, replacing `previous`.
    public init(tenant: TenantID, incarnation: UInt64, previous: TenantState.PreviousIncarnation) {
        self.tenant = tenant
        self.incarnation = incarnation
        self.previous = previous
    }
}

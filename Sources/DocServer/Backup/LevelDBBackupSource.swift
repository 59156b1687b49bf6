internal import DocModel
internal import LevelDB

/// The bytes of a backup of one LevelDB database, read from one snapshot, a chunk at a time.
///
/// Consistency: every commit of the embedded store is one write batch (documents, change log,
/// outcome, tenant state), and a snapshot sees a batch whole or not at all, so every tenant in
/// the backup is exactly as of its last commit version in the snapshot — which the header
/// records, read from the same snapshot. Writes go on while the backup is read; the snapshot
/// keeps LevelDB from discarding what it sees until ``release()``.
///
/// Not `Sendable`: one task reads it (a LevelDB iterator is not thread-safe).
final class LevelDBBackupSource {
    let header: BackupHeader
    private let snapshot: Snapshot
    private let cursor: Cursor
    private var encoder: BackupEncoder
    private var done = false

    /// A snapshot of `database` now. The backup's time is read from `clock`.
    init(database: Database, clock: ServerClock = .system) throws(DocError) {
        let snapshot = try LevelDBServerStore.run { try database.snapshot() }
        do throws(DocError) {
            // A bulk read: do not evict the server's working set from the block cache.
            let read = ReadOptions(fillCache: false, snapshot: snapshot)
            var tenants: [BackupHeader.Tenant] = []
            for tenant in try LevelDBServerStore.tenantIDs(in: database, options: read) {
                guard let record = try LevelDBServerStore.run({ try database.get(TenantKeys(tenant).state, options: read) }) else {
                    throw DocError(.dataLoss, "the state of tenant \(tenant) is missing")
                }
                let state = try TenantState(record: record)
                tenants.append(BackupHeader.Tenant(tenant: tenant, lastVersion: state.lastVersion, incarnation: state.incarnation))
            }
            let layout = try LevelDBServerStore.run { try database.get(LevelDBServerStore.formatKey, options: read) }
                .map { String(decoding: $0, as: UTF8.self) } ?? LevelDBServerStore.formatVersion
            header = BackupHeader(layoutVersion: layout, createdAt: Timestamp(microseconds: clock.nowMicros()), tenants: tenants)
            let cursor = try LevelDBServerStore.run { try database.cursor(options: read) }
            try LevelDBServerStore.run { try cursor.seekToFirst() }
            self.cursor = cursor
        } catch {
            snapshot.release()
            throw error
        }
        self.snapshot = snapshot
        encoder = BackupEncoder(header: header)
    }

    /// Records written so far.
    var records: Int { encoder.records }
    /// Bytes produced so far.
    var bytes: Int64 { encoder.bytes }

    /// The next bytes of the backup (about `size` of them, more for a large value), or `nil`
    /// once the trailer was returned.
    func next(size: Int = 1 << 20) throws(DocError) -> [UInt8]? {
        if done { return encoder.pendingCount > 0 ? encoder.take() : nil }
        try LevelDBServerStore.run {
            while encoder.pendingCount < size {
                guard let entry = try cursor.entry() else {
                    try cursor.checkError()
                    encoder.finish()
                    done = true
                    release()
                    return
                }
                encoder.append(key: entry.key, value: entry.value)
                try cursor.next()
            }
        }
        return encoder.take()
    }

    /// The error record that ends a backup that failed part way (the reader refuses it).
    func failure(_ error: DocError) -> [UInt8] {
        encoder.fail(error.message)
        done = true
        release()
        return encoder.take()
    }

    /// Releases the snapshot (done by ``next(size:)`` at the end; idempotent).
    func release() {
        snapshot.release()
    }
}

internal import DocModel
internal import DocServer
internal import NIOCore
internal import PostgresNIO
internal import Synchronization

/// Appends to a partial upload in ``PostgresBlobStore``: each chunk is one statement that
/// inserts it as a part at the current end and advances the row's `received`, both only if
/// `received` is still that end, so a chunk is stored whole or not at all.
final class PostgresBlobWriter: BlobPartialWriter {
    private let store: PostgresBlobStore
    private let id: AttachmentID
    private let tenant: TenantID
    private let limit: Int64
    /// The bytes held, and whether ``close()`` was called.
    private let state: Mutex<(received: Int64, closed: Bool)>

    init(store: PostgresBlobStore, id: AttachmentID, tenant: TenantID, received: Int64, limit: Int64) {
        self.store = store
        self.id = id
        self.tenant = tenant
        self.limit = limit
        self.state = Mutex((received, false))
    }

    var received: Int64 { state.withLock { $0.received } }

    func write(_ chunk: ByteBuffer) async throws(DocError) {
        let (offset, closed) = state.withLock { $0 }
        guard !closed else {
            throw DocError(.failedPrecondition, "the upload writer is closed", at: BlobStoreError.at(id))
        }
        guard offset + Int64(chunk.readableBytes) <= limit else {
            throw BlobStoreError.pastTheDeclaredSize(adding: chunk.readableBytes, at: offset, limit: limit)
        }
        guard chunk.readableBytes > 0 else { return }
        let (name, key, count) = (tenant.rawValue, PostgresBlobStore.key(id), Int64(chunk.readableBytes))
        // Committed without waiting for the WAL flush (`synchronous_commit` off for this
        // statement's transaction): as a file's unsynced write, a crash of the database's
        // machine may lose the latest chunks, row and parts together, and the client goes on
        // from the `received` that was kept. Finishing commits synchronously, which flushes them.
        let rows = try await store.database.rows("store \(count) bytes of attachment \(id) of tenant \(tenant)", """
            WITH relaxed AS (
                SELECT set_config('synchronous_commit', 'off', TRUE)
            ), moved AS (
                UPDATE doccache_blobs SET received = received + \(count)
                WHERE tenant = \(name) AND id = \(key) AND NOT complete AND received = \(offset)
                RETURNING 1
            )
            INSERT INTO doccache_blob_parts (tenant, id, start, bytes)
            SELECT \(name), \(key), \(offset), \(chunk) FROM moved, relaxed
            RETURNING 1
            """)
        guard !rows.isEmpty else {
            throw DocError(.aborted, "the upload of \(id) no longer continues at offset \(offset): ask where it stands and go on "
                               + "from there", at: BlobStoreError.at(id))
        }
        state.withLock { $0.received = offset + count }
    }

    func close() async { state.withLock { $0.closed = true } }
}

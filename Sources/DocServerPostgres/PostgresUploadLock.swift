internal import DocModel
internal import DocServer
internal import NIOCore
internal import PostgresNIO
internal import Synchronization

/// ``PostgresBlobStore``'s upload lock: a row of `doccache_blob_locks` with a lease
/// (``PostgresBlobStore/leaseMicros``) that a task of the holder renews every third of it.
///
/// Taking it is one upsert that succeeds when there is no row, when the row's lease has run
/// out (its holder is gone), or when the row is this store's own (left by a release still in
/// flight: the store's registry already guarantees that it holds the id only once). Each
/// taking writes a new token, and the release deletes only the row with its token, so a late
/// release never removes a newer lock.
final class PostgresUploadLock: BlobUploadLock {
    private let store: PostgresBlobStore
    private let id: AttachmentID
    private let tenant: TenantID
    private let token: [UInt8]
    private let renewal: Mutex<Task<Void, Never>?>

    private init(store: PostgresBlobStore, id: AttachmentID, tenant: TenantID, token: [UInt8]) {
        self.store = store
        self.id = id
        self.tenant = tenant
        self.token = token
        self.renewal = Mutex(nil)
    }

    /// Takes the lock of `id`; `nil` when another holder's lease runs.
    static func take(_ id: AttachmentID, tenant: TenantID, store: PostgresBlobStore) async throws(DocError) -> PostgresUploadLock? {
        let token = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let now = store.clock.nowMicros()
        let (name, key, holder) = (tenant.rawValue, PostgresBlobStore.key(id), ByteBuffer(bytes: store.holder))
        let rows = try await store.database.rows("lock the upload of attachment \(id) of tenant \(tenant)", """
            INSERT INTO doccache_blob_locks (tenant, id, holder, token, expires_at)
            VALUES (\(name), \(key), \(holder), \(ByteBuffer(bytes: token)), \(now + store.leaseMicros))
            ON CONFLICT (tenant, id) DO UPDATE
                SET holder = EXCLUDED.holder, token = EXCLUDED.token, expires_at = EXCLUDED.expires_at
                WHERE doccache_blob_locks.expires_at <= \(now) OR doccache_blob_locks.holder = EXCLUDED.holder
            RETURNING 1
            """)
        guard !rows.isEmpty else { return nil }
        let lock = PostgresUploadLock(store: store, id: id, tenant: tenant, token: token)
        // The task holds what it needs, not the lock: a lock dropped without ``unlock()`` is
        // released by its deinit.
        lock.renewal.withLock { $0 = Task { await renew(id, tenant: tenant, token: token, store: store) } }
        return lock
    }

    /// Extends the lease every third of it until released (the task is cancelled).
    private static func renew(_ id: AttachmentID, tenant: TenantID, token: [UInt8], store: PostgresBlobStore) async {
        let interval = Duration.microseconds(store.leaseMicros / 3)
        while (try? await Task.sleep(for: interval)) != nil, !Task.isCancelled {
            let until = store.clock.nowMicros() + store.leaseMicros
            // A failed renewal is tried again at the next turn; meanwhile the parts' offset
            // check still keeps two writers from interleaving bytes.
            _ = try? await store.database.rows("renew the upload lock of attachment \(id)", """
                UPDATE doccache_blob_locks SET expires_at = \(until)
                WHERE tenant = \(tenant.rawValue) AND id = \(PostgresBlobStore.key(id)) AND token = \(ByteBuffer(bytes: token))
                """)
        }
    }

    func unlock() {
        guard stopRenewing() else { return }
        let (store, id, tenant, token) = (self.store, self.id, self.tenant, self.token)
        // The row goes in the background (unlock does not wait); until it is gone, another
        // instance finds the id locked, this one takes it over.
        Task { await Self.deleteRow(id, tenant: tenant, token: token, store: store) }
    }

    func release() async {
        guard stopRenewing() else { return }
        let (store, id, tenant, token) = (self.store, self.id, self.tenant, self.token)
        // A task of its own: the caller's cancellation (its client went away) must not cancel
        // the release, which would leave the id locked for the rest of the lease.
        await Task { await Self.deleteRow(id, tenant: tenant, token: token, store: store) }.value
    }

    /// Stops the renewal and frees the id in this process; `false` when already released.
    private func stopRenewing() -> Bool {
        guard let task = renewal.withLock({ task in defer { task = nil }; return task }) else { return false }
        task.cancel()
        store.registry.remove(id, tenant: tenant)
        return true
    }

    /// Deletes this taking's row (not a newer one). A failure leaves it to run out its lease.
    private static func deleteRow(_ id: AttachmentID, tenant: TenantID, token: [UInt8], store: PostgresBlobStore) async {
        _ = try? await store.database.rows("release the upload lock of attachment \(id)", """
            DELETE FROM doccache_blob_locks
            WHERE tenant = \(tenant.rawValue) AND id = \(PostgresBlobStore.key(id)) AND token = \(ByteBuffer(bytes: token))
            """)
    }

    deinit { unlock() }
}

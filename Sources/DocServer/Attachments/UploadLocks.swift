internal import DocModel
internal import Synchronization

/// The uploads in progress in this process, one per (tenant, id): a second upload of the same
/// attachment while one runs is refused (409) instead of interleaving bytes.
final class UploadLocks: Sendable {
    private struct Key: Hashable {
        let tenant: TenantID
        let id: AttachmentID
    }

    private let held = Mutex<Set<Key>>([])

    /// Takes the lock of `id` in `tenant`; `false` when another upload holds it.
    func tryLock(_ id: AttachmentID, tenant: TenantID) -> Bool {
        held.withLock { $0.insert(Key(tenant: tenant, id: id)).inserted }
    }

    /// Releases the lock taken by ``tryLock(_:tenant:)``.
    func unlock(_ id: AttachmentID, tenant: TenantID) {
        _ = held.withLock { $0.remove(Key(tenant: tenant, id: id)) }
    }
}

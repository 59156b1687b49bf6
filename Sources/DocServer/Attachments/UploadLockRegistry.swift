package import DocModel
internal import Synchronization

/// The upload locks one blob store instance holds, by tenant and id: the part of a lock that
/// lives in the process, checked before the storage's own (a file lock, a lease row), so a
/// second lock of the same id from this process is refused without asking the storage.
package final class UploadLockRegistry: Sendable {
    private struct Key: Hashable {
        let tenant: TenantID
        let id: AttachmentID
    }

    private let held = Mutex<Set<Key>>([])

    package init() {}

    /// Notes `id` as held; `false` when it already is.
    package func insert(_ id: AttachmentID, tenant: TenantID) -> Bool {
        held.withLock { $0.insert(Key(tenant: tenant, id: id)).inserted }
    }

    package func remove(_ id: AttachmentID, tenant: TenantID) {
        _ = held.withLock { $0.remove(Key(tenant: tenant, id: id)) }
    }

    /// Notes `id` as held, then takes the storage's lock with `take`: `nil` at once when this
    /// process holds it already, and the note goes again when `take` gets no lock or fails
    /// (the lock `take` returns removes it when released).
    package func lock<Lock>(_ id: AttachmentID, tenant: TenantID, _ take: () async throws(DocError) -> Lock?)
        async throws(DocError) -> Lock? {
        guard insert(id, tenant: tenant) else { return nil }
        do throws(DocError) {
            let lock = try await take()
            if lock == nil { remove(id, tenant: tenant) }
            return lock
        } catch {
            remove(id, tenant: tenant)
            throw error
        }
    }
}

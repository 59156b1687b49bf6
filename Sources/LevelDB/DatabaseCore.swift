import CLevelDB
import Synchronization

/// A C object created from an open database that must be destroyed before the database is
/// closed: a cursor's `leveldb_iterator_t` or a snapshot's `leveldb_snapshot_t`.
///
/// `@unchecked Sendable`: ``pointer`` is guarded by the owning ``DatabaseCore``'s lock. It is
/// read under the read lock; a snapshot's pointer is cleared only under the write lock; an
/// iterator's pointer is cleared either under the write lock (by `close`) or under the read
/// lock by the cursor that owns it — cursors are not `Sendable`, so only one thread at a time
/// uses a given iterator.
final class NativeResource: @unchecked Sendable {
    enum Kind { case iterator, snapshot }

    let kind: Kind
    var pointer: OpaquePointer?

    init(_ kind: Kind, _ pointer: OpaquePointer) {
        self.kind = kind
        self.pointer = pointer
    }
}

/// The state behind a ``Database``: the `leveldb_t` handle, the C options it was opened with,
/// and the cursors and snapshots made from it.
///
/// Locking: every call into LevelDB holds ``lock`` in read mode for its whole duration
/// (LevelDB's handle is thread-safe, so reads and writes run concurrently). `close` takes it in
/// write mode, so it waits for the calls in flight and no call can start while it runs; it then
/// destroys the live iterators, releases the live snapshots, closes the handle and frees the
/// options, cache and filter policy. Before waiting, `close` raises ``closing`` so that new
/// calls fail fast with `.closed` instead of queueing behind it (which also keeps a steady
/// stream of readers from starving it on platforms whose lock prefers readers). Releasing a
/// snapshot also takes the write lock, so that no read is using it meanwhile.
///
/// No code path takes the lock while already holding it (the lock is not reentrant); in
/// particular no `Snapshot` may be deallocated inside a `withHandle` body, which is why the
/// `Snapshot` object is made only after the lock is released.
///
/// `@unchecked Sendable`: ``handle`` and ``nativeOptions`` are written only under the write
/// lock and read only under the read lock; ``resources`` is a `Mutex` (needed because several
/// readers may register resources at once); ``closing`` is atomic.
final class DatabaseCore: @unchecked Sendable {
    let path: String
    private let lock = ReadWriteLock()
    private let closing = Atomic<Bool>(false)
    private var handle: OpaquePointer?
    private var nativeOptions: NativeOptions?
    private let resources = Mutex<[ObjectIdentifier: NativeResource]>([:])

    init(path: String, handle: OpaquePointer, nativeOptions: NativeOptions) {
        self.path = path
        self.handle = handle
        self.nativeOptions = nativeOptions
    }

    deinit {
        close()
    }

    /// Whether ``close()`` has been called (it may still be waiting for calls in flight).
    var isClosed: Bool { closing.load(ordering: .acquiring) }

    var closedError: LevelDBError {
        .closed("the database has been closed", path: path)
    }

    /// Runs `body` with the open handle while holding the read lock.
    /// Throws `.closed` if the database is closed or closing.
    func withHandle<R>(_ body: (OpaquePointer) throws(LevelDBError) -> R) throws(LevelDBError) -> R {
        if closing.load(ordering: .acquiring) { throw closedError }
        lock.lockRead()
        defer { lock.unlock() }
        guard let handle else { throw closedError }
        return try body(handle)
    }

    /// Runs `body` with the open handle while holding the write lock; `nil` if closed.
    private func withExclusiveHandle<R>(_ body: (OpaquePointer) -> R) -> R? {
        lock.lockWrite()
        defer { lock.unlock() }
        guard let handle else { return nil }
        return body(handle)
    }

    /// Records a resource so that `close` can destroy it. Call within ``withHandle(_:)``.
    func register(_ resource: NativeResource) {
        resources.withLock { $0[ObjectIdentifier(resource)] = resource }
    }

    /// Destroys a cursor's iterator now (the cursor ends). No-op if `close` already did.
    func destroyIterator(_ resource: NativeResource) {
        lock.lockRead()
        defer { lock.unlock() }
        guard handle != nil, let iterator = resource.pointer else { return }
        leveldb_iter_destroy(iterator)
        resource.pointer = nil
        resources.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(resource)) }
    }

    /// Releases a snapshot now. Takes the write lock so that no read is using it.
    /// No-op if already released (explicitly or by `close`).
    func releaseSnapshot(_ resource: NativeResource) {
        _ = withExclusiveHandle { handle in
            guard let snapshot = resource.pointer else { return }
            leveldb_release_snapshot(handle, snapshot)
            resource.pointer = nil
            resources.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(resource)) }
        }
    }

    /// Closes the database: waits for the calls in flight, destroys live iterators, releases
    /// live snapshots, closes the handle and frees the options. Idempotent; when it returns the
    /// database is closed (a concurrent second call waits for the first).
    func close() {
        closing.store(true, ordering: .releasing)
        lock.lockWrite()
        defer { lock.unlock() }
        guard let handle else { return }
        let live = resources.withLock { resources in
            let live = Array(resources.values)
            resources.removeAll()
            return live
        }
        for resource in live {
            guard let pointer = resource.pointer else { continue }
            switch resource.kind {
            case .iterator: leveldb_iter_destroy(pointer)
            case .snapshot: leveldb_release_snapshot(handle, pointer)
            }
            resource.pointer = nil
        }
        leveldb_close(handle)
        self.handle = nil
        // After leveldb_close: LevelDB used the cache and filter policy until now.
        nativeOptions = nil
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A readers-writer lock over `pthread_rwlock_t`: many readers at once, or one writer.
///
/// Not reentrant: a thread holding the lock must not take it again (in either mode).
///
/// On Linux the lock prefers writers (glibc's default prefers readers, which lets a steady
/// stream of readers starve a writer forever): once a writer waits, new readers queue behind
/// it. This is what makes the no-reentrancy rule strict.
///
/// `@unchecked Sendable`: the lock lives at a stable heap address allocated here and is only
/// used through the pthread functions, which are thread-safe.
final class ReadWriteLock: @unchecked Sendable {
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    init() {
        lock = .allocate(capacity: 1)
        lock.initialize(to: pthread_rwlock_t())
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        defer { pthread_rwlockattr_destroy(&attributes) }
        #if canImport(Glibc)
        pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        #endif
        let status = pthread_rwlock_init(lock, &attributes)
        precondition(status == 0, "pthread_rwlock_init failed: \(status)")
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deinitialize(count: 1)
        lock.deallocate()
    }

    func lockRead() {
        let status = pthread_rwlock_rdlock(lock)
        precondition(status == 0, "pthread_rwlock_rdlock failed: \(status)")
    }

    func lockWrite() {
        let status = pthread_rwlock_wrlock(lock)
        precondition(status == 0, "pthread_rwlock_wrlock failed: \(status)")
    }

    func unlock() {
        let status = pthread_rwlock_unlock(lock)
        precondition(status == 0, "pthread_rwlock_unlock failed: \(status)")
    }
}

#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif
internal import DocModel
internal import Synchronization

/// ``FileBlobStore``'s upload lock: an exclusive `flock` on a lock file beside the partial
/// upload (`<tenant>/partial/<id>.lock`, ``FileBlobLayout/partialLockPath(_:tenant:)``), so
/// it holds against every process sharing the root; the store's ``UploadLockRegistry`` holds
/// the ids locked in this process (on network file systems `flock` may be emulated with
/// per-process locks, which a second lock from the same process would not see).
///
/// The holder removes the lock file before it closes it. A process that opened the file
/// before it was removed and then gets the lock finds that its file is no longer the one at
/// the path, and tries again on the new one; so two holders never hold two different files
/// of the same path.
final class FileUploadLock: BlobUploadLock {
    private let state: Mutex<Int32?>
    private let path: String
    private let release: @Sendable () -> Void

    private init(fd: Int32, path: String, release: @escaping @Sendable () -> Void) {
        state = Mutex(fd)
        self.path = path
        self.release = release
    }

    /// Takes the file lock of `id`; `nil` when another process holds it. `release` runs when
    /// the lock is released (the store's ``UploadLockRegistry`` entry goes). Blocks (run it
    /// through ``BlockingIO``).
    static func take(_ id: AttachmentID, tenant: TenantID, layout: FileBlobLayout,
                     release: @escaping @Sendable () -> Void) throws(DocError) -> FileUploadLock? {
        try BlobFile.makeDirectories(layout.partialDirectory(tenant))
        let path = layout.partialLockPath(id, tenant: tenant)
        while true {
            let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw BlobFile.failure("open the upload lock", path) }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
                let code = errno
                _ = close(fd)
                if code == EWOULDBLOCK { return nil }
                throw BlobFile.failure("lock", path, errno: code)
            }
            let current: Bool
            do throws(DocError) {
                current = try isCurrent(fd, path)
            } catch {
                _ = close(fd)
                throw error
            }
            if current { return FileUploadLock(fd: fd, path: path, release: release) }
            // Its holder removed it meanwhile: lock the file now at the path.
            _ = close(fd)
        }
    }

    /// Whether the open file `fd` is still the file at `path`.
    private static func isCurrent(_ fd: Int32, _ path: String) throws(DocError) -> Bool {
        var open = stat()
        var named = stat()
        guard fstat(fd, &open) == 0 else { throw BlobFile.failure("read the upload lock", path) }
        guard stat(path, &named) == 0 else {
            if errno == ENOENT { return false }
            throw BlobFile.failure("read the upload lock", path)
        }
        return open.st_dev == named.st_dev && open.st_ino == named.st_ino
    }

    func unlock() {
        guard let fd = state.withLock({ fd in defer { fd = nil }; return fd }) else { return }
        // Removed while still locked: whoever opens the path next makes a new file.
        _ = unlink(path)
        _ = close(fd)
        release()
    }

    deinit { unlock() }
}

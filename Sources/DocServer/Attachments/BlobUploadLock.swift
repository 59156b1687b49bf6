/// The exclusive right to write one attachment's upload, taken with
/// ``BlobStore/lockUpload(_:tenant:)``: the upload endpoint holds it while bytes arrive and
/// while it finishes the upload; the attachment collector holds it while it deletes the
/// attachment, so it never deletes an upload that is running.
///
/// The lock is released by ``unlock()``, and by the storage when the process that holds it
/// ends: a killed server leaves no lock behind (``FileBlobStore``: at once; a store whose
/// locks are leases in a database: when the lease runs out).
public protocol BlobUploadLock: Sendable {
    /// Releases the lock. Idempotent. Must not wait long: a store whose release is remote
    /// starts it and returns (for `defer` and `deinit`).
    func unlock()

    /// Releases the lock and returns once the storage has it free for every other user. The
    /// default calls ``unlock()``.
    func release() async
}

extension BlobUploadLock {
    /// The default: calls ``unlock()`` and returns, for a store whose release is not remote.
    public func release() async { unlock() }

    /// Runs `body` under the lock, then releases it (``release()``, awaited) whatever `body`
    /// did, before its result or error goes on: the next taker, on any server sharing the
    /// store, finds the id free.
    package func holding<T, Failure: Error>(_ body: () async throws(Failure) -> T) async throws(Failure) -> T {
        let result: Result<T, Failure>
        do throws(Failure) {
            result = .success(try await body())
        } catch {
            result = .failure(error)
        }
        await release()
        return try result.get()
    }
}

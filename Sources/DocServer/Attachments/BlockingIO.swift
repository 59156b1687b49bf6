internal import Dispatch
internal import DocModel

/// Runs blocking file system calls (writes, `fsync`, hashing a file) on a Dispatch queue, off
/// Swift's cooperative thread pool, so a slow disk never stalls the tasks serving sockets.
enum BlockingIO {
    private static let queue = DispatchQueue(label: "doccache.attachments.io", qos: .utility, attributes: .concurrent)

    /// The result of `body`, run on the I/O queue.
    static func run<T: Sendable>(_ body: @escaping @Sendable () throws(DocError) -> T) async throws(DocError) -> T {
        let result: Result<T, DocError> = await withCheckedContinuation { continuation in
            queue.async {
                continuation.resume(returning: Result { () throws(DocError) -> T in try body() })
            }
        }
        return try result.get()
    }
}

internal import Synchronization

/// An open file of ``FileBlobStore`` (a reader's or a writer's), closed exactly once: by
/// ``close()`` or, if nobody did, when it is released.
final class BlobDescriptor: Sendable {
    let fd: Int32
    let path: String
    private let closed = Atomic<Bool>(false)

    init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { close() }

    var isClosed: Bool { closed.load(ordering: .acquiring) }

    /// Closes the file; later calls do nothing.
    func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        POSIXFile.close(fd)
    }
}

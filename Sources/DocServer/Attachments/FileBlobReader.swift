#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif
internal import DocModel
internal import NIOCore
internal import Synchronization

/// Reads a complete attachment's file (``FileBlobStore``) in chunks with `pread`, off the
/// cooperative pool.
final class FileBlobReader: BlobReader {
    let metadata: AttachmentMetadata
    private let fd: Int32
    private let path: String
    private let state: Mutex<(position: Int64, closed: Bool)>

    init(fd: Int32, path: String, metadata: AttachmentMetadata, position: Int64) {
        self.fd = fd
        self.path = path
        self.metadata = metadata
        self.state = Mutex((position, false))
    }

    deinit {
        if !state.withLock({ $0.closed }) { _ = Self.closeDescriptor(fd) }
    }

    func next(maxBytes: Int) async throws(DocError) -> ByteBuffer? {
        let (position, closed) = state.withLock { ($0.position, $0.closed) }
        guard !closed else { throw DocError(.failedPrecondition, "the attachment reader is closed", at: path) }
        let remaining = metadata.size - position
        guard remaining > 0 else { return nil }
        let count = Int(min(Int64(max(maxBytes, 1)), remaining))
        let fd = self.fd, path = self.path
        let chunk = try await BlockingIO.run { () throws(DocError) in
            try BlobFile.read(fd, at: position, count: count, path: path)
        }
        guard chunk.readableBytes > 0 else {
            throw DocError(.dataLoss, "attachment \(metadata.id) ends at byte \(position), its metadata says "
                               + "\(metadata.size)", at: path)
        }
        state.withLock { $0.position = position + Int64(chunk.readableBytes) }
        return chunk
    }

    func close() async {
        let wasOpen = state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        if wasOpen { _ = Self.closeDescriptor(fd) }
    }

    private static func closeDescriptor(_ fd: Int32) -> Int32 {
        #if canImport(Glibc)
        Glibc.close(fd)
        #elseif canImport(Musl)
        Musl.close(fd)
        #else
        Darwin.close(fd)
        #endif
    }
}

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

/// Appends to a partial upload's file (``FileBlobStore``). Each chunk is written with
/// `pwrite` at the current end, off the cooperative pool.
final class FileBlobWriter: BlobPartialWriter {
    private let fd: Int32
    private let path: String
    private let limit: Int64
    private let state: Mutex<(received: Int64, closed: Bool)>

    init(fd: Int32, path: String, received: Int64, limit: Int64) {
        self.fd = fd
        self.path = path
        self.limit = limit
        self.state = Mutex((received, false))
    }

    deinit {
        if !state.withLock({ $0.closed }) { _ = Self.closeDescriptor(fd) }
    }

    var received: Int64 { state.withLock { $0.received } }

    func write(_ chunk: ByteBuffer) async throws(DocError) {
        let (offset, closed) = state.withLock { ($0.received, $0.closed) }
        guard !closed else { throw DocError(.failedPrecondition, "the upload writer is closed", at: path) }
        guard offset + Int64(chunk.readableBytes) <= limit else {
            throw DocError(.outOfRange, "\(chunk.readableBytes) more bytes at offset \(offset) go past the declared "
                               + "size of \(limit) bytes", at: "upload")
        }
        guard chunk.readableBytes > 0 else { return }
        let fd = self.fd, path = self.path
        do {
            try await BlockingIO.run { () throws(DocError) in try BlobFile.write(chunk, to: fd, at: offset, path: path) }
            state.withLock { $0.received = offset + Int64(chunk.readableBytes) }
        } catch {
            // A failed write may have written part of the chunk: those bytes are right, count them.
            if let size = try? BlobFile.size(fd: fd, path: path) { state.withLock { $0.received = size } }
            throw error
        }
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

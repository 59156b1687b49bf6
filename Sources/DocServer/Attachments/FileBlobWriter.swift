internal import DocModel
internal import NIOCore
internal import Synchronization

/// Appends to a partial upload's file (``FileBlobStore``). Each chunk is written with
/// `pwrite` at the current end, off the cooperative pool.
final class FileBlobWriter: BlobPartialWriter {
    private let file: BlobDescriptor
    private let limit: Int64
    private let state: Mutex<Int64>

    init(fd: Int32, path: String, received: Int64, limit: Int64) {
        self.file = BlobDescriptor(fd: fd, path: path)
        self.limit = limit
        self.state = Mutex(received)
    }

    var received: Int64 { state.withLock { $0 } }

    func write(_ chunk: ByteBuffer) async throws(DocError) {
        guard !file.isClosed else { throw DocError(.failedPrecondition, "the upload writer is closed", at: file.path) }
        let offset = received
        guard offset + Int64(chunk.readableBytes) <= limit else {
            throw BlobStoreError.pastTheDeclaredSize(adding: chunk.readableBytes, at: offset, limit: limit)
        }
        guard chunk.readableBytes > 0 else { return }
        let file = self.file
        do {
            try await BlockingIO.run { () throws(DocError) in try BlobFile.write(chunk, to: file.fd, at: offset, path: file.path) }
            state.withLock { $0 = offset + Int64(chunk.readableBytes) }
        } catch {
            // A failed write may have written part of the chunk: those bytes are right, count them.
            if let size = try? BlobFile.size(fd: file.fd, path: file.path) { state.withLock { $0 = size } }
            throw error
        }
    }

    func close() async { file.close() }
}

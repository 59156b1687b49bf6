internal import DocModel
internal import NIOCore
internal import Synchronization

/// Reads a complete attachment's file (``FileBlobStore``) in chunks with `pread`, off the
/// cooperative pool.
final class FileBlobReader: BlobReader {
    let metadata: AttachmentMetadata
    private let file: BlobDescriptor
    private let position: Mutex<Int64>

    init(fd: Int32, path: String, metadata: AttachmentMetadata, position: Int64) {
        self.file = BlobDescriptor(fd: fd, path: path)
        self.metadata = metadata
        self.position = Mutex(position)
    }

    func next(maxBytes: Int) async throws(DocError) -> ByteBuffer? {
        guard !file.isClosed else { throw DocError(.failedPrecondition, "the attachment reader is closed", at: file.path) }
        let position = self.position.withLock { $0 }
        let remaining = metadata.size - position
        guard remaining > 0 else { return nil }
        let count = Int(min(Int64(max(maxBytes, 1)), remaining))
        let file = self.file
        let chunk = try await BlockingIO.run { () throws(DocError) in
            try BlobFile.read(file.fd, at: position, count: count, path: file.path)
        }
        guard chunk.readableBytes > 0 else {
            throw DocError(.dataLoss, "attachment \(metadata.id) ends at byte \(position), its metadata says "
                               + "\(metadata.size)", at: file.path)
        }
        self.position.withLock { $0 = position + Int64(chunk.readableBytes) }
        return chunk
    }

    func close() async { file.close() }
}

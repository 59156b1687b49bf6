internal import DocModel
internal import DocServer
internal import NIOCore
internal import Synchronization

/// Reads a complete attachment of ``PostgresBlobStore`` in chunks: a few parts per
/// statement, handed out in pieces of at most the size asked for.
final class PostgresBlobReader: BlobReader {
    let metadata: AttachmentMetadata
    private let store: PostgresBlobStore
    private let tenant: TenantID

    private struct State {
        var position: Int64
        /// Parts read and not yet handed out, in order; the first may be partly handed out.
        var pending: [(start: Int64, bytes: ByteBuffer)] = []
        var closed = false
    }
    private let state: Mutex<State>

    init(store: PostgresBlobStore, tenant: TenantID, metadata: AttachmentMetadata, position: Int64) {
        self.store = store
        self.tenant = tenant
        self.metadata = metadata
        self.state = Mutex(State(position: position))
    }

    func next(maxBytes: Int) async throws(DocError) -> ByteBuffer? {
        let (position, closed, buffered) = state.withLock { ($0.position, $0.closed, !$0.pending.isEmpty) }
        guard !closed else { throw DocError(.failedPrecondition, "the attachment reader is closed", at: BlobStoreError.at(metadata.id)) }
        guard position < metadata.size else { return nil }
        if !buffered {
            var parts = try await store.parts(of: metadata.id, tenant: tenant, startingAt: position)
            if parts.first?.0 != position, let holding = try await store.part(of: metadata.id, tenant: tenant, holding: position) {
                parts.insert(holding, at: 0)
            }
            guard let first = parts.first, first.0 <= position, first.0 + Int64(first.1.readableBytes) > position else {
                throw DocError(.dataLoss, "attachment \(metadata.id) has no stored bytes at \(position) of its \(metadata.size)",
                               at: BlobStoreError.at(metadata.id))
            }
            state.withLock { $0.pending = parts.map { (start: $0.0, bytes: $0.1) } }
        }
        return state.withLock { state -> ByteBuffer? in
            var part = state.pending.removeFirst()
            // Skip what lies before the position (the first part read may start before it).
            part.bytes.moveReaderIndex(forwardBy: Int(state.position - part.start))
            let count = min(max(maxBytes, 1), part.bytes.readableBytes)
            let chunk = part.bytes.readSlice(length: count)
            state.position += Int64(count)
            if part.bytes.readableBytes > 0 {
                state.pending.insert((start: state.position, bytes: part.bytes), at: 0)
            } else if let next = state.pending.first, next.start != state.position {
                // A gap: read again from the position, which reports it.
                state.pending = []
            }
            return chunk
        }
    }

    func close() async { state.withLock { $0.closed = true; $0.pending = [] } }
}

import DocModel
import Synchronization

/// Uploads one attachment: asks the server how much it already has, then sends the rest in
/// chunks, each from the offset the server confirmed, so a cut connection resumes where the
/// server's bytes end. An attachment that fits in one chunk, on its first attempt, is sent
/// without asking first (one round trip less): the server answers a `PUT` for bytes it already
/// has complete without storing them, and refuses one at the wrong offset (409, then the
/// uploader asks and goes on from the server's offset). After a failed attempt it always asks
/// first, so a retry never sends again what the server kept.
struct AttachmentUploader: Sendable {
    let files: AttachmentFiles
    let transport: any AttachmentTransport
    let token: @Sendable () async throws -> String
    /// Set when the store closes: the upload ends before its next request.
    let stop: UploadStop
    /// Bytes per `PUT`.
    static let chunkBytes = 4 << 20

    /// Uploads `record`'s file; `progress` gets the bytes the server holds after each chunk.
    ///
    /// - Parameter retrying: an earlier attempt of this attachment failed (the server may hold
    ///   part of it): ask before sending.
    func upload(_ record: AttachmentRecord, retrying: Bool,
                progress: @Sendable (Int64) async -> Void) async throws(DocError) {
        let bearer = try await Self.bearer(from: token, for: "the upload")
        var status: AttachmentUploadStatus?
        if retrying || record.size > Int64(Self.chunkBytes) {
            status = try await transport.uploadStatus(of: record.id, token: bearer)
        }
        var conflicts = 0
        while status?.complete != true {
            try stop.check()
            let offset = status?.received ?? 0
            await progress(offset)
            let chunk = try files.read(record.id, offset: offset, count: Self.chunkBytes)
            guard !chunk.isEmpty || offset >= record.size else {
                throw DocError(.dataLoss, "the file of attachment \(record.id) is shorter than its \(record.size) bytes")
            }
            do {
                status = try await transport.upload(record.id, contentType: record.contentType, size: record.size,
                                                    offset: offset, chunk: chunk, token: bearer)
            } catch where error.code == .aborted && conflicts < 3 {
                // The server holds another offset (an earlier attempt went on after the cut):
                // ask again and go on from there.
                conflicts += 1
                status = try await transport.uploadStatus(of: record.id, token: bearer)
            }
        }
        await progress(record.size)
    }
}

/// Tells a running upload to end before its next request. The store sets it when it closes
/// instead of cancelling the upload's task: cancelling a task that awaits
/// `URLSession.data(for:)` while its request completes deadlocks (or crashes) in Linux's
/// swift-corelibs-foundation (issue 5412, fixed after Swift 6.3.1), so a request on its way
/// is left to finish and its answer is ignored.
final class UploadStop: Sendable {
    private let stopped = Mutex(false)

    func set() { stopped.withLock { $0 = true } }

    func check() throws(DocError) {
        if stopped.withLock({ $0 }) { throw DocError(.cancelled, "the store stopped; the upload goes on when it is opened again") }
    }
}

extension AttachmentUploader {
    /// A token from the store's token source; its failure is `unauthenticated` unless it threw
    /// a `DocError` (as for the streams' connections).
    static func bearer(from token: @Sendable () async throws -> String, for what: String) async throws(DocError) -> String {
        do {
            return try await token()
        } catch let error as DocError {
            throw error
        } catch {
            throw DocError(.unauthenticated, "no token for \(what): \(error)")
        }
    }
}

import DocModel

/// Downloads one attachment into the store's folder: ranges of it, appended to a partial file
/// (a download cut off goes on from the bytes already there), then checked against the id and
/// moved into place.
struct AttachmentDownloader: Sendable {
    let files: AttachmentFiles
    let transport: any AttachmentTransport
    let token: @Sendable () async throws -> String

    /// Downloads `id`; answers its size and content type.
    func download(_ id: AttachmentID) async throws(DocError) -> (size: Int64, contentType: String) {
        let bearer = try await AttachmentUploader.bearer(from: token, for: "the download")
        var offset = files.partialSize(of: id)
        var total: Int64 = .max
        var contentType = "application/octet-stream"
        while offset < total {
            let chunk = try await transport.download(id, from: offset, maxBytes: AttachmentUploader.chunkBytes, token: bearer)
            total = chunk.total
            contentType = chunk.contentType
            guard !chunk.bytes.isEmpty else { break }
            try files.appendDownload(chunk.bytes, to: id)
            offset += Int64(chunk.bytes.count)
        }
        try files.finishDownload(of: id)
        return (offset, contentType)
    }
}

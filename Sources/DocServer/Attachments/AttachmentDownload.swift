internal import DocModel
internal import Hummingbird
internal import NIOCore

extension AttachmentEndpoints {
    /// `GET /attachments/{id}`: 200 with the bytes (streamed in chunks), or 206 for
    /// `Range: bytes=…`; 404 unless complete; 403 denied; 416 a range past the end.
    ///
    /// Headers: `Content-Type` (as uploaded), `Content-Length`, `X-Content-SHA256`,
    /// `Accept-Ranges: bytes`, `ETag` (the id, quoted) and, for 206, `Content-Range`.
    func download(_ request: Request, context: some Hummingbird.RequestContext) async throws(AttachmentHTTPError) -> Response {
        let settings = try settings()
        let store = settings.store
        let id = try attachmentID(context)
        let caller = try await authenticate(request)
        let tenant = caller.tenant
        guard let metadata = try await storeCall({ () async throws(DocError) in try await store.metadata(id, tenant: tenant) }) else {
            throw AttachmentHTTPError(.notFound, .notFound, "attachment \(id) not found")
        }
        try await authorize(.download, caller, AttachmentObject(metadata))

        var headers: HTTPFields = [
            .contentType: metadata.contentType,
            .contentSHA256: metadata.sha256,
            .acceptRanges: "bytes",
            .eTag: "\"\(metadata.id.hex)\"",
        ]
        let first: Int64
        let count: Int64
        let status: HTTPResponse.Status
        switch ByteRange(header: request.headers[.range], size: metadata.size) {
        case .whole:
            (first, count, status) = (0, metadata.size, .ok)
        case .bytes(let from, let last):
            (first, count, status) = (from, last - from + 1, .partialContent)
            headers[.contentRange] = "bytes \(from)-\(last)/\(metadata.size)"
        case .unsatisfiable:
            var response = AttachmentHTTPError(
                .rangeNotSatisfiable, .outOfRange,
                "the range \(request.headers[.range] ?? "") starts past the end of attachment \(id) (\(metadata.size) bytes)"
            ).response
            response.headers[.contentRange] = "bytes */\(metadata.size)"
            return response
        }

        let reader = try await storeCall { () async throws(DocError) in try await store.openRead(id, tenant: tenant, from: first) }
        let chunkBytes = settings.downloadChunkBytes
        let logger = self.logger
        let body = ResponseBody(contentLength: Int(count)) { writer in
            var remaining = count
            do {
                while remaining > 0 {
                    guard let chunk = try await reader.next(maxBytes: Int(min(Int64(chunkBytes), remaining))) else {
                        throw DocError(.dataLoss, "attachment \(id) ended \(remaining) bytes early")
                    }
                    remaining -= Int64(chunk.readableBytes)
                    try await writer.write(chunk)
                }
                try await writer.finish(nil)
            } catch {
                await reader.close()
                logger.debug("attachment download ended early", metadata: ["attachment": "\(id)", "error": "\(error)"])
                throw error
            }
            await reader.close()
        }
        return Response(status: status, headers: headers, body: body)
    }
}

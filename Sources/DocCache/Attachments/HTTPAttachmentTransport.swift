import DocModel
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// ``AttachmentTransport`` over the server's HTTP endpoints (`GET /attachments/{id}/upload`,
/// `PUT /attachments/{id}` with `Upload-Offset` and `Upload-Length`, `GET /attachments/{id}`
/// with `Range`), through `URLSession`.
///
/// Every request asks for its own connection (`Connection: close`): on Linux, when a reused
/// keep-alive connection is lost under a `PUT`, FoundationNetworking's libcurl sends the request
/// again on a new connection with its head but none of its body, and the upload stalls until
/// the request times out (tests: AttachmentProxyTests). A fresh connection per request (a
/// loopback or LAN connect per chunk of up to 4 MiB) avoids the reuse.
package struct HTTPAttachmentTransport: AttachmentTransport {
    /// `http(s)://host:port`.
    package let baseURL: String
    private let session: URLSession

    package init(baseURL: String) {
        self.baseURL = baseURL
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 60
        session = URLSession(configuration: configuration)
    }

    package func uploadStatus(of id: AttachmentID, token: String) async throws(DocError) -> AttachmentUploadStatus? {
        var request = try self.request(id, suffix: "/upload", token: token)
        request.httpMethod = "GET"
        let (body, response) = try await send(request)
        if response.statusCode == 404 { return nil }
        try Self.check(response, body, id)
        return try Self.status(body, id)
    }

    package func upload(_ id: AttachmentID, contentType: String, size: Int64, offset: Int64, chunk: [UInt8],
                        token: String) async throws(DocError) -> AttachmentUploadStatus {
        var request = try self.request(id, suffix: "", token: token)
        request.httpMethod = "PUT"
        request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        request.setValue(String(size), forHTTPHeaderField: "Upload-Length")
        request.setValue(String(offset), forHTTPHeaderField: "Upload-Offset")
        request.httpBody = Data(chunk)
        let (body, response) = try await send(request)
        try Self.check(response, body, id)
        return try Self.status(body, id)
    }

    package func download(_ id: AttachmentID, from offset: Int64, maxBytes: Int, token: String) async throws(DocError) -> AttachmentDownloadChunk {
        var request = try self.request(id, suffix: "", token: token)
        request.httpMethod = "GET"
        request.setValue("bytes=\(offset)-\(offset + Int64(maxBytes) - 1)", forHTTPHeaderField: "Range")
        let (body, response) = try await send(request)
        try Self.check(response, body, id)
        let total: Int64
        if let range = response.value(forHTTPHeaderField: "Content-Range"), let slash = range.lastIndex(of: "/"),
           let size = Int64(range[range.index(after: slash)...]) {
            total = size
        } else {
            total = Int64(body.count)
        }
        return AttachmentDownloadChunk(bytes: [UInt8](body), total: total,
                                       contentType: response.value(forHTTPHeaderField: "Content-Type") ?? "application/octet-stream")
    }

    // MARK: - HTTP

    private func request(_ id: AttachmentID, suffix: String, token: String) throws(DocError) -> URLRequest {
        guard let url = URL(string: "\(baseURL)/attachments/\(id.hex)\(suffix)") else {
            throw DocError(.invalidArgument, "bad server URL \(baseURL)")
        }
        var request = URLRequest(url: url)
        request.setValue("Bearer " + token, forHTTPHeaderField: "Authorization")
        request.setValue("close", forHTTPHeaderField: "Connection")
        return request
    }

    private func send(_ request: URLRequest) async throws(DocError) -> (Data, HTTPURLResponse) {
        do {
            let (data, response) = try await session.data(for: request)
            guard let http = response as? HTTPURLResponse else {
                throw DocError(.unavailable, "\(request.url?.absoluteString ?? baseURL) did not answer over HTTP")
            }
            return (data, http)
        } catch let error as DocError {
            throw error
        } catch {
            throw DocError(.unavailable, "\(request.httpMethod ?? "GET") \(request.url?.absoluteString ?? baseURL) failed: \(error.localizedDescription)")
        }
    }

    /// Turns an error answer into the server's `DocError` (its JSON `error` object).
    private static func check(_ response: HTTPURLResponse, _ body: Data, _ id: AttachmentID) throws(DocError) {
        guard !(200..<300).contains(response.statusCode) else { return }
        let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
        let error = object?["error"] as? [String: Any]
        let message = error?["message"] as? String ?? "HTTP \(response.statusCode)"
        let code = (error?["code"] as? String).flatMap(DocError.Code.init(name:)) ?? Self.code(forStatus: response.statusCode)
        throw DocError(code, message, at: "attachment \(id)")
    }

    private static func code(forStatus status: Int) -> DocError.Code {
        switch status {
        case 400, 413, 422: return .invalidArgument
        case 401: return .unauthenticated
        case 403: return .permissionDenied
        case 404: return .notFound
        case 409: return .aborted
        case 429, 502, 503, 504: return .unavailable
        default: return .internal
        }
    }

    private static func status(_ body: Data, _ id: AttachmentID) throws(DocError) -> AttachmentUploadStatus {
        guard let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any],
              let received = (object["received"] as? NSNumber)?.int64Value, received >= 0
        else { throw DocError(.internal, "the server's answer about attachment \(id) is not the expected JSON") }
        return AttachmentUploadStatus(received: received, complete: object["complete"] as? Bool ?? false)
    }
}

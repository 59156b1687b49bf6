#if canImport(FoundationEssentials)
internal import FoundationEssentials
#else
internal import Foundation
#endif
internal import DocModel
internal import Hummingbird
internal import NIOCore

/// The JSON bodies of the attachment endpoints (keys sorted, no whitespace).
enum AttachmentJSON {
    /// The state of an upload: `{"complete","contentType","id","received","sha256"?,"size"}`;
    /// `sha256` only once complete.
    struct UploadState: Encodable {
        var id: String
        var size: Int64
        var received: Int64
        var complete: Bool
        var contentType: String
        var sha256: String?

        init(_ metadata: AttachmentMetadata) {
            id = metadata.id.hex
            size = metadata.size
            received = metadata.size
            complete = true
            contentType = metadata.contentType
            sha256 = metadata.sha256
        }

        init(_ partial: PartialUpload) {
            self.init(id: partial.id, declaration: partial.declaration, received: partial.received)
        }

        init(id: AttachmentID, declaration: UploadDeclaration, received: Int64) {
            self.id = id.hex
            size = declaration.size
            self.received = received
            complete = false
            contentType = declaration.contentType
            sha256 = nil
        }
    }

    /// `{"error":{"code":"permissionDenied","message":"…"},"received":N?}`.
    struct Failure: Encodable {
        struct Detail: Encodable {
            var code: String
            var message: String
        }
        var error: Detail
        var received: Int64?
    }

    /// A JSON response.
    static func response(_ status: HTTPResponse.Status, _ body: some Encodable) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(body)) ?? Data("{}".utf8)
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

internal import DocModel
internal import Hummingbird

extension AttachmentEndpoints {
    /// `GET /attachments/{id}/upload`: 200 with the upload's state (complete or partial), 404
    /// when nothing is known of the id. Allowed to whoever may upload the attachment.
    func uploadState(_ request: Request, context: some Hummingbird.RequestContext) async throws(AttachmentHTTPError) -> Response {
        let store = try settings().store
        let id = try attachmentID(context)
        let caller = try await authenticate(request)
        if let metadata = try await storeCall({ () async throws(DocError) in try await store.metadata(id, tenant: caller.tenant) }) {
            try await authorize(.upload, caller, AttachmentObject(metadata))
            return AttachmentJSON.response(.ok, AttachmentJSON.UploadState(metadata))
        }
        if let partial = try await storeCall({ () async throws(DocError) in try await store.partial(id, tenant: caller.tenant) }) {
            let object = AttachmentObject(id: id, size: partial.declaration.size, contentType: partial.declaration.contentType)
            try await authorize(.upload, caller, object)
            return AttachmentJSON.response(.ok, AttachmentJSON.UploadState(partial))
        }
        throw AttachmentHTTPError(.notFound, .notFound, "no upload of attachment \(id) is known: start one with PUT at Upload-Offset 0")
    }
}

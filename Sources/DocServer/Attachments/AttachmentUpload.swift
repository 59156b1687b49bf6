internal import DocModel
internal import Hummingbird
internal import NIOCore

extension AttachmentEndpoints {
    /// `PUT /attachments/{id}`: appends the body at `Upload-Offset` to the upload of `id` and,
    /// once all `Upload-Length` bytes are there, verifies their SHA-256 against the id.
    ///
    /// 200 already complete (the body is not stored) or a chunk stored (`complete: false`);
    /// 201 completed now; 400 bad headers or a body past `Upload-Length`; 403 denied; 409
    /// `aborted`: wrong offset (with `received`) or another upload of the id running; 413 too large;
    /// 422 the bytes do not hash to the id (the upload is discarded).
    func upload(_ request: Request, context: some Hummingbird.RequestContext) async throws(AttachmentHTTPError) -> Response {
        let settings = try settings()
        let store = settings.store
        let id = try attachmentID(context)
        let caller = try await authenticate(request)
        let tenant = caller.tenant
        let headers = try UploadHeaders(request.headers, id: id, maxSize: store.maxSize)
        try await authorize(.upload, caller, AttachmentObject(id: id, size: headers.length, contentType: headers.contentType))

        if let metadata = try await storeCall({ () async throws(DocError) in try await store.metadata(id, tenant: tenant) }) {
            return AttachmentJSON.response(.ok, AttachmentJSON.UploadState(metadata))
        }
        let lock = try await storeCall { () async throws(DocError) in try await store.lockUpload(id, tenant: tenant) }
        guard let lock else {
            throw AttachmentHTTPError(.conflict, .aborted,
                                      "another upload of attachment \(id) is in progress; ask GET /attachments/\(id)/upload "
                                          + "and continue when it has ended")
        }
        // Released before the answer leaves, so the client's next request finds the id free
        // on any server sharing the store.
        return try await lock.holding { () async throws(AttachmentHTTPError) -> Response in
            try await upload(request, id: id, tenant: tenant, headers: headers, settings: settings)
        }
    }

    /// The part of ``upload(_:context:)`` that runs under the attachment's upload lock.
    private func upload(_ request: Request, id: AttachmentID, tenant: TenantID, headers: UploadHeaders,
                        settings: AttachmentSettings) async throws(AttachmentHTTPError) -> Response {
        let store = settings.store
        // Completed by the upload that held the lock just before.
        if let metadata = try await storeCall({ () async throws(DocError) in try await store.metadata(id, tenant: tenant) }) {
            return AttachmentJSON.response(.ok, AttachmentJSON.UploadState(metadata))
        }

        let declaration = UploadDeclaration(size: headers.length, contentType: headers.contentType)
        var received: Int64 = 0
        if let partial = try await storeCall({ () async throws(DocError) in try await store.partial(id, tenant: tenant) }) {
            if partial.declaration.size == headers.length {
                received = partial.received
            } else {
                // No upload runs (this one holds the lock) and the id fixes the size, so one of the
                // two declarations is wrong: the idle partial gives way and the upload restarts at
                // 0. If this declaration is the wrong one, its hash check fails in turn.
                try await storeCall { () async throws(DocError) in try await store.discardPartial(id, tenant: tenant) }
            }
        }
        // `aborted`: the client's idea of the upload is stale; it asks again and continues.
        guard headers.offset == received else {
            throw AttachmentHTTPError(.conflict, .aborted,
                                      "the server has \(received) bytes of attachment \(id): send Upload-Offset \(received)",
                                      received: received)
        }

        let writer = try await storeCall { () async throws(DocError) in
            try await store.openPartial(id, tenant: tenant, declaration: declaration, at: received)
        }
        let outcome = await receiveBody(request.body, into: writer, length: headers.length, gathering: settings.uploadWriteBytes)
        await writer.close()
        let held = writer.received
        switch outcome {
        case .ended:
            break
        case .tooLong:
            throw AttachmentHTTPError(.badRequest, .invalidArgument,
                                      "the body goes past Upload-Length \(headers.length): the bytes beyond it were "
                                          + "dropped", received: held)
        case .interrupted(let error):
            logger.debug("attachment upload interrupted", metadata: [
                "attachment": "\(id)", "tenant": "\(tenant)", "received": "\(held)", "error": "\(error)",
            ])
            throw AttachmentHTTPError(.badRequest, .cancelled,
                                      "the request body ended early; the server has \(held) bytes", received: held)
        case .storeFailed(let error):
            throw AttachmentHTTPError(store: error)
        }

        guard held == headers.length else {
            return AttachmentJSON.response(.ok, AttachmentJSON.UploadState(id: id, declaration: declaration, received: held))
        }
        do {
            let metadata = try await store.finishPartial(id, tenant: tenant)
            logger.debug("attachment stored", metadata: ["attachment": "\(id)", "tenant": "\(tenant)", "size": "\(metadata.size)"])
            return AttachmentJSON.response(.created, AttachmentJSON.UploadState(metadata))
        } catch where error.code == .invalidArgument {
            throw AttachmentHTTPError(.unprocessableContent, error)
        } catch {
            throw AttachmentHTTPError(store: error)
        }
    }

    /// How reading an upload's body ended.
    enum BodyOutcome {
        /// The body ended cleanly; every byte was stored.
        case ended
        /// The body had bytes past `Upload-Length`; those up to it were stored.
        case tooLong
        /// The connection failed mid-body (cut, reset); what arrived before was stored.
        case interrupted(any Error)
        /// The store could not write.
        case storeFailed(DocError)
    }

    /// Streams `body` into `writer` as it arrives, up to `length` bytes in all: the chunks are
    /// gathered into writes of about `gathering` bytes (never the whole body in memory), and
    /// what is gathered is written when the body ends, goes past `length` or is cut.
    func receiveBody(_ body: RequestBody, into writer: any BlobPartialWriter, length: Int64, gathering: Int) async -> BodyOutcome {
        var iterator = body.makeAsyncIterator()
        var gathered = ByteBuffer()
        /// Writes what is gathered; the store's error, if any.
        func flush() async -> DocError? {
            guard gathered.readableBytes > 0 else { return nil }
            let bytes = gathered
            gathered = ByteBuffer()
            do {
                try await writer.write(bytes)
                return nil
            } catch {
                return error
            }
        }
        while true {
            let next: ByteBuffer?
            do {
                next = try await iterator.next()
            } catch {
                if let failure = await flush() { return .storeFailed(failure) }
                return .interrupted(error)
            }
            guard var chunk = next else {
                if let failure = await flush() { return .storeFailed(failure) }
                return .ended
            }
            let room = length - writer.received - Int64(gathered.readableBytes)
            var tooLong = false
            if Int64(chunk.readableBytes) > room {
                chunk = chunk.getSlice(at: chunk.readerIndex, length: Int(room)) ?? ByteBuffer()
                tooLong = true
            }
            if gathered.readableBytes == 0 && chunk.readableBytes >= gathering {
                gathered = chunk
            } else {
                gathered.writeBuffer(&chunk)
            }
            if tooLong || gathered.readableBytes >= gathering {
                if let failure = await flush() { return .storeFailed(failure) }
            }
            if tooLong { return .tooLong }
        }
    }
}

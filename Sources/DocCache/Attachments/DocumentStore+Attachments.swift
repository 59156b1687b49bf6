public import DocModel

extension DocumentStore {
    /// The store's attachments: files (photos, PDFs) that documents refer to.
    ///
    /// ```swift
    /// let photo = try await store.attachments.add(file: "/tmp/id-front.jpg", contentType: "image/jpeg")
    /// try await store.document("kyc/f1").setData(["idFront": .attachment(photo.id)])
    /// ```
    ///
    /// `add` copies the file into the store's directory and records it durably before it
    /// returns. The store uploads attachments oldest first whenever the server can be reached
    /// (resuming a cut upload where the server's bytes end), and holds back every write that
    /// refers to one until it is uploaded, keeping the queue's order: the server never holds a
    /// document whose attachments are missing. See docs/attachments.md.
    public var attachments: Attachments { Attachments(core: core) }

    /// The attachments of a store (``DocumentStore/attachments``).
    public struct Attachments: Sendable {
        let core: ClientCore

        /// Adds the file at `path` (copied; the original may be deleted afterwards).
        ///
        /// - Returns: the attachment, `localOnly` (or `uploaded` when the same bytes were added
        ///   or downloaded before).
        /// - Throws: `notFound` (no such file), `permissionDenied` (unreadable),
        ///   `invalidArgument` (a directory, an empty file, over
        ///   ``StoreSettings/maxAttachmentBytes``, a bad content type),
        ///   `failedPrecondition` (the store is closed). Nothing is stored on failure.
        public func add(file path: String, contentType: String) async throws(DocError) -> Attachment {
            try Self.validate(contentType: contentType)
            let (id, size) = try core.attachmentFiles.importFile(path, maxBytes: core.settings.maxAttachmentBytes)
            return try await core.recordAddedAttachment(id, size: size, contentType: contentType)
        }

        /// Adds `bytes` as an attachment. Same as ``add(file:contentType:)``.
        public func add(bytes: [UInt8], contentType: String) async throws(DocError) -> Attachment {
            try Self.validate(contentType: contentType)
            let (id, size) = try core.attachmentFiles.importBytes(bytes, maxBytes: core.settings.maxAttachmentBytes)
            return try await core.recordAddedAttachment(id, size: size, contentType: contentType)
        }

        /// Every attachment on this device, oldest first.
        public func all() async -> [Attachment] { await core.attachments() }

        /// One attachment (`nil`: not on this device).
        public func attachment(_ id: AttachmentID) async -> Attachment? { await core.attachment(id) }

        /// Every attachment now and after every change (added, progress, uploaded, failed,
        /// removed), for an "uploads" screen. Ends when the store closes.
        public func updates() -> AsyncStream<[Attachment]> {
            let core = self.core
            return core.attachmentChanges.rereading { await core.attachments() }
        }

        /// One attachment now and after every change of it (`nil` once it is removed).
        public func updates(of id: AttachmentID) -> AsyncStream<Attachment?> {
            let core = self.core
            return core.attachmentChanges.rereading { .some(await core.attachment(id)) }
        }

        /// Uploads a failed attachment again (writes that wait for it are sent once it is up).
        ///
        /// - Throws: `notFound` for an unknown id, `failedPrecondition` when it has not failed.
        public func retry(_ id: AttachmentID) async throws(DocError) { try await core.retryAttachment(id) }

        /// Removes an attachment from this device: a downloaded copy, an uploaded one, or a
        /// failed one (writes that refer to a failed one are then sent, and the server refuses
        /// them: they become failed writes).
        ///
        /// - Throws: `notFound` for an unknown id, `failedPrecondition` while it waits to be
        ///   uploaded.
        public func remove(_ id: AttachmentID) async throws(DocError) { try await core.removeAttachment(id) }

        /// The local file of an attachment, downloading it first if it is not on this device
        /// (another device added it). Downloads are cached and answered offline afterwards,
        /// until the cache's size limit (``StoreSettings/attachmentCacheSizeBytes``) deletes
        /// the least recently used: the path stays valid until then.
        ///
        /// - Throws: `unavailable` when it is not cached and the server cannot be reached,
        ///   `notFound` / `permissionDenied` from the server, `dataLoss` when the downloaded
        ///   bytes do not match the id.
        public func file(_ id: AttachmentID) async throws(DocError) -> String {
            if let path = try await core.cachedAttachmentPath(id) { return path }
            let (size, contentType) = try await core.downloader().download(id)
            try await core.recordDownloadedAttachment(id, size: size, contentType: contentType)
            return core.attachmentFiles.path(of: id)
        }

        /// The bytes of an attachment; see ``file(_:)``.
        public func bytes(_ id: AttachmentID) async throws(DocError) -> [UInt8] {
            _ = try await file(id)
            // The recorded size, not this device's limit: a download may be larger than it.
            guard let size = await core.attachment(id)?.size else { throw ClientCore.unknownAttachment(id) }
            return try core.attachmentFiles.read(id, offset: 0, count: Int(size))
        }

        /// A content type is `type/subtype` (parameters allowed), printable ASCII, at most 255
        /// characters.
        static func validate(contentType: String) throws(DocError) {
            let utf8 = contentType.utf8
            guard !contentType.isEmpty, utf8.count <= 255, contentType.contains("/"),
                  utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }),
                  !contentType.hasPrefix("/"), !contentType.hasSuffix("/")
            else {
                throw DocError(.invalidArgument,
                    "'\(contentType)' is not a content type: give a MIME type such as image/jpeg or application/pdf")
            }
        }
    }
}

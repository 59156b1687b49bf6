package import DocModel

extension ClientCore {
    // MARK: - Adding and reading

    /// Records an attachment whose file `files` just made durable under its id: the record is
    /// written with a sync, so both survive a crash once this returns.
    package func recordAddedAttachment(_ id: AttachmentID, size: Int64, contentType: String) throws(DocError) -> Attachment {
        try checkOpen()
        let now = Timestamp.now
        if let existing = attachmentRecords[id] {
            // The same bytes again (added, or downloaded, before): one attachment, as it is.
            return attachment(existing)
        }
        let record = AttachmentRecord(id: id, size: size, contentType: contentType, createdAt: now, origin: .local,
                                      progress: .localOnly, lastUsedAt: now)
        try localStore.putAttachment(record, sync: true)
        attachmentRecords[id] = record
        attachmentChanges.yield(())
        startNextUpload()
        return attachment(record)
    }

    /// Every attachment of the store, oldest first.
    package func attachments() -> [Attachment] {
        attachmentRecords.values.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }.map(attachment)
    }

    /// One attachment (`nil`: not on this device).
    package func attachment(_ id: AttachmentID) -> Attachment? { attachmentRecords[id].map(attachment) }

    private func attachment(_ record: AttachmentRecord) -> Attachment {
        let state: Attachment.State
        switch record.progress {
        case .uploaded: state = .uploaded
        case .failed(let error): state = .failed(error)
        case .localOnly:
            if let sent = uploadProgress[record.id] {
                state = .uploading(sent: sent, total: record.size)
            } else {
                state = .localOnly
            }
        }
        return Attachment(id: record.id, size: record.size, contentType: record.contentType, createdAt: record.createdAt, state: state)
    }

    /// The file of a cached attachment (`nil`: not cached), noting the use for the cache's
    /// least-recently-used order.
    package func cachedAttachmentPath(_ id: AttachmentID) throws(DocError) -> String? {
        guard attachmentRecords[id] != nil, attachmentFiles.exists(id) else { return nil }
        try noteAttachmentUse(id)
        return attachmentFiles.path(of: id)
    }

    /// A downloader to the server (`unavailable` while it cannot be reached).
    func downloader() throws(DocError) -> AttachmentDownloader {
        try checkOpen()
        guard let network, let transport = network.attachments, canUseNetwork else {
            throw DocError(.unavailable, "the attachment is not on this device and the server cannot be reached now")
        }
        return AttachmentDownloader(files: attachmentFiles, transport: transport, token: network.token)
    }

    /// Records a downloaded attachment (a cache entry).
    package func recordDownloadedAttachment(_ id: AttachmentID, size: Int64, contentType: String) throws(DocError) {
        try checkOpen()
        guard attachmentRecords[id] == nil else { return }
        let now = Timestamp.now
        let record = AttachmentRecord(id: id, size: size, contentType: contentType, createdAt: now, origin: .downloaded,
                                      progress: .uploaded, lastUsedAt: now)
        try localStore.putAttachment(record)
        attachmentRecords[id] = record
        attachmentChanges.yield(())
        try trimAttachmentCache(keeping: id)
    }

    // MARK: - Retry and remove

    /// Uploads a failed attachment again.
    package func retryAttachment(_ id: AttachmentID) throws(DocError) {
        try checkOpen()
        guard var record = attachmentRecords[id] else { throw Self.unknownAttachment(id) }
        guard case .failed = record.progress else {
            throw DocError(.failedPrecondition, "attachment \(id) has not failed (it is \(attachment(record).state.name))")
        }
        record.progress = .localOnly
        try localStore.putAttachment(record)
        attachmentRecords[id] = record
        attachmentChanges.yield(())
        uploadBackoff.reset()
        startNextUpload()
    }

    /// Removes an attachment from the device. Refused while it is on its way (not uploaded and
    /// not failed); a failed one may be removed: writes that refer to it are then sent and the
    /// server refuses them (they become failed writes).
    package func removeAttachment(_ id: AttachmentID) throws(DocError) {
        try checkOpen()
        guard let record = attachmentRecords[id] else { throw Self.unknownAttachment(id) }
        if case .localOnly = record.progress {
            throw DocError(.failedPrecondition,
                "attachment \(id) is not uploaded yet; it can be removed once it is uploaded or has failed")
        }
        try localStore.removeAttachment(id)
        attachmentRecords[id] = nil
        attachmentFiles.remove(id)
        attachmentChanges.yield(())
        remoteStore.fillWritePipeline()
    }

    static func unknownAttachment(_ id: AttachmentID) -> DocError {
        DocError(.notFound, "no attachment \(id) on this device")
    }

    // MARK: - Ordering

    /// Why an attachment holds `batch` back: one of this device's that is not uploaded (or
    /// failed), or one the server is asked about (BatchBlocker). `nil`: none does.
    func attachmentWait(of batch: MutationBatch) -> PendingWrite.WaitReason? {
        guard let (id, hold) = blocker.blockingAttachment(of: batch) else { return nil }
        switch hold {
        case .beingChecked: return .attachmentBeingChecked(id)
        case .notUploaded:
            if case .failed(let error)? = attachmentRecords[id]?.progress { return .attachmentFailed(id, error) }
            return .attachmentNotUploaded(id)
        }
    }

    // MARK: - Uploads

    /// Starts the next transfer to the server, unless one runs, a retry is scheduled, or the
    /// server cannot be reached: first the checks of attachments that queued batches wait for
    /// (``BatchBlocker``), then the upload of the oldest attachment that is not on the server.
    package func startNextUpload() {
        guard !isClosed, storageFailure == nil, uploadTask == nil, !uploadBackoff.isPending, canUseNetwork,
              let network, let transport = network.attachments else { return }
        if !blocker.toCheck.isEmpty {
            startChecks(blocker.toCheck.sorted(), transport: transport, token: network.token)
            return
        }
        let next = attachmentRecords.values
            .filter { if case .localOnly = $0.progress { return true } else { return false } }
            .min { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
        guard let record = next else { return }
        let uploader = AttachmentUploader(files: attachmentFiles, transport: transport, token: network.token, stop: uploadStop)
        let retrying = interruptedUploads.contains(record.id)
        uploadTask = Task { [weak self] in
            let result: Result<Void, DocError>
            do throws(DocError) {
                try await uploader.upload(record, retrying: retrying) { [weak self] sent in
                    await self?.uploadProgressed(record.id, sent)
                }
                result = .success(())
            } catch {
                result = .failure(error)
            }
            await self?.uploadFinished(record.id, result)
        }
    }

    private func uploadProgressed(_ id: AttachmentID, _ sent: Int64) {
        guard !isClosed, uploadProgress[id] != sent else { return }
        uploadProgress[id] = sent
        attachmentChanges.yield(())
    }

    private func uploadFinished(_ id: AttachmentID, _ result: Result<Void, DocError>) {
        uploadTask = nil
        uploadProgress[id] = nil
        guard !isClosed, storageFailure == nil, var record = attachmentRecords[id] else { return }
        switch result {
        case .success:
            interruptedUploads.remove(id)
            record.progress = .uploaded
            blocker.settled(id)
            uploadBackoff.reset()
        case .failure(let error) where !error.code.isTransient:
            logger.warning("an attachment upload failed for good", metadata: [
                "attachment": "\(id)", "code": "\(error.code)", "error": "\(error.message)",
            ])
            record.progress = .failed(error)
        case .failure(let error):
            interruptedUploads.insert(id)
            logger.info("an attachment upload was interrupted; retrying with backoff", metadata: [
                "attachment": "\(id)", "code": "\(error.code)", "error": "\(error.message)",
            ])
            // Transient (the server is unreachable, busy, or the token was refused): try again later.
            attachmentChanges.yield(())
            uploadBackoff.backoffAndRun { [weak self] in self?.assumeIsolated { $0.startNextUpload() } }
            return
        }
        do {
            try localStore.putAttachment(record)
            attachmentRecords[id] = record
                // An uploaded file may now be deleted to keep the cache in its size.
            try trimAttachmentCache(keeping: nil)
        } catch {
            storageFailed(error, while: "recording the upload of attachment \(id)")
            return
        }
        attachmentChanges.yield(())
        remoteStore.fillWritePipeline()
        startNextUpload()
    }
}

extension AttachmentRecord {
    /// An attachment this device must upload that the server does not have yet (still to
    /// upload, or failed).
    var isWaitingForUpload: Bool {
        guard origin == .local else { return false }
        if case .uploaded = progress { return false }
        return true
    }
}

import DocModel

/// What the server said of one attachment a queued batch waits for.
enum AttachmentCheckResult: Sendable {
    /// The server holds it complete.
    case held
    /// The server holds nothing, or part of it (`received` bytes).
    case missing(received: Int64)
    /// The server will not say (its rules, say): the batches are sent and the server decides.
    case refused(DocError)
}

extension ClientCore {
    // MARK: - Checking attachments with the server

    /// Asks the server, one after the other, whether it still holds `ids` (see
    /// ``BatchBlocker`` for why). Runs as the store's transfer (`uploadTask`): checks and
    /// uploads never overlap. A transient failure (unreachable, busy, the token refused) ends
    /// the round: the attachments not answered are asked again after the uploads' backoff.
    func startChecks(_ ids: [AttachmentID], transport: any AttachmentTransport,
                     token: @escaping @Sendable () async throws -> String) {
        let stop = uploadStop
        uploadTask = Task { [weak self] in
            var results: [(AttachmentID, AttachmentCheckResult)] = []
            var interruption: DocError?
            do throws(DocError) {
                let bearer = try await AttachmentUploader.bearer(from: token, for: "checking attachments")
                for id in ids {
                    try stop.check()
                    do throws(DocError) {
                        let status = try await transport.uploadStatus(of: id, token: bearer)
                        results.append((id, status?.complete == true ? .held : .missing(received: status?.received ?? 0)))
                    } catch where !error.code.isTransient {
                        results.append((id, .refused(error)))
                    }
                }
            } catch {
                interruption = error
            }
            await self?.checksFinished(results, interruption: interruption)
        }
    }

    private func checksFinished(_ results: [(AttachmentID, AttachmentCheckResult)], interruption: DocError?) {
        uploadTask = nil
        guard !isClosed, storageFailure == nil else { return }
        for (id, result) in results {
            switch result {
            case .held:
                blocker.settled(id)
            case .missing(let received):
                do {
                    try uploadAgain(id, received: received)
                } catch {
                    storageFailed(error, while: "recording that attachment \(id) is to be uploaded again")
                    return
                }
            case .refused(let error):
                logger.warning("the server did not say whether it holds an attachment; sending the writes that refer to it",
                               metadata: ["attachment": "\(id)", "code": "\(error.code)", "error": "\(error.message)"])
                blocker.settled(id)
            }
        }
        if let interruption {
            logger.info("attachments could not be checked with the server; retrying with backoff", metadata: [
                "code": "\(interruption.code)", "error": "\(interruption.message)",
            ])
            uploadBackoff.backoffAndRun { [weak self] in self?.assumeIsolated { $0.startNextUpload() } }
        } else {
            uploadBackoff.reset()
        }
        remoteStore.fillWritePipeline()
        startNextUpload()
    }

    /// Marks `id`, which the server no longer holds, to be uploaded again from this device's
    /// file; without the file nothing can be done (the writes that refer to it are sent, and
    /// the server refuses them: they are kept as failed writes).
    private func uploadAgain(_ id: AttachmentID, received: Int64) throws(DocError) {
        guard var record = attachmentRecords[id], attachmentFiles.exists(id) else {
            logger.warning("an attachment is neither on the server nor on this device; the writes that refer to it will fail",
                           metadata: ["attachment": "\(id)"])
            blocker.settled(id)
            return
        }
        logger.notice("an attachment is no longer on the server; uploading it again", metadata: ["attachment": "\(id)"])
        record.progress = .localOnly
        record.origin = .local
        try localStore.putAttachment(record, sync: true)
        if received > 0 { interruptedUploads.insert(id) }
        blocker.checkedMissing(id)
        attachmentRecords[id] = record
        attachmentChanges.yield(())
    }

    /// After the server refused `batch` with `failedPrecondition` (a document may refer to an
    /// attachment it does not hold, as when it deleted one after its grace period): checks the
    /// attachments of the batch this device holds, so a missing one is uploaded again and a
    /// retry of the failed write can succeed.
    func checkAttachments(ofRejected batch: MutationBatch, _ error: DocError) {
        guard error.code == .failedPrecondition else { return }
        for id in batch.attachmentReferences {
            guard let record = attachmentRecords[id], record.progress == .uploaded, attachmentFiles.exists(id) else { continue }
            blocker.check(id)
        }
        startNextUpload()
    }
}

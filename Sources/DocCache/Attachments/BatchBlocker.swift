import DocModel

/// Answers the write queue's question "may this batch be sent?" for the remote store: not
/// while it refers to an attachment of this device that is not uploaded, nor to one whose
/// presence on the server must be confirmed first. It keeps its own copy of what it needs
/// from the attachments' records (the client core refreshes it after every change), so it
/// needs no hop to the core: the remote store asks while the core is still being created.
///
/// Why confirm: the server deletes an attachment no live document refers to once its grace
/// period has passed (docs/attachments.md, "References and collection"). A write that waited
/// longer than that after its attachment was uploaded (the device went offline, or an earlier
/// write of the queue waits for the user) would be refused; so would a write that refers to an
/// attachment downloaded long ago, which the documents referring to it then have let go of.
/// So before a batch that refers to an attachment this device has known to be on the server
/// for long (uploaded from here, or downloaded) is sent, the store asks the server whether it
/// still holds it, and uploads it again from the device's file if not.
final class BatchBlocker {
    /// Why a batch is held back.
    enum Hold: Equatable {
        /// The attachment is not uploaded (still to upload, or failed).
        case notUploaded
        /// The server is asked whether it still holds the attachment.
        case beingChecked
    }

    /// This device's attachments that the server does not have yet.
    private(set) var waiting: Set<AttachmentID> = []
    /// Since when each attachment on the server is known to be there: when it was added to
    /// this device (uploaded from here), or downloaded.
    private var onServerSince: [AttachmentID: Timestamp] = [:]
    /// When the server last said it holds an attachment (in this process).
    private var confirmedAt: [AttachmentID: ContinuousClock.Instant] = [:]
    /// Attachments to ask the server about before the batches that refer to them are sent.
    private(set) var toCheck: Set<AttachmentID> = []
    /// An attachment known to be on the server for longer than this is confirmed before a
    /// batch that refers to it is sent (``StoreSettings/attachmentConfirmationAge``).
    private let confirmationAge: Duration
    /// How long a confirmation stands: the age, and at least a minute (so a confirmation is
    /// not stale by the time the batch is read again).
    private var confirmationLifetime: Duration { max(confirmationAge, .seconds(60)) }
    /// Called when an attachment joins ``toCheck``.
    var onCheckNeeded: (() -> Void)?

    init(confirmationAge: Duration) {
        self.confirmationAge = confirmationAge
    }

    /// Takes the attachments' states from the store's records.
    func update(_ records: some Sequence<AttachmentRecord>) {
        waiting = []
        onServerSince = [:]
        for record in records {
            if record.isWaitingForUpload {
                waiting.insert(record.id)
            } else {
                onServerSince[record.id] = record.createdAt
            }
        }
    }

    func isBlocked(_ batch: MutationBatch) -> Bool { blockingAttachment(of: batch) != nil }

    /// An attachment `batch` refers to that holds it back, and why, if any (the smallest id,
    /// so the answer does not vary between runs). Notes the attachments to check.
    func blockingAttachment(of batch: MutationBatch) -> (AttachmentID, Hold)? {
        guard !waiting.isEmpty || !onServerSince.isEmpty || !toCheck.isEmpty else { return nil }
        var held: (AttachmentID, Hold)?
        for id in batch.attachmentReferences {
            let hold: Hold
            if waiting.contains(id) {
                hold = .notUploaded
            } else if toCheck.contains(id) || needsConfirmation(id) {
                hold = .beingChecked
                check(id)
            } else {
                continue
            }
            if held == nil || id < held!.0 { held = (id, hold) }
        }
        return held
    }

    /// Whether the server must confirm `id` before a batch that refers to it is sent.
    private func needsConfirmation(_ id: AttachmentID) -> Bool {
        guard let since = onServerSince[id] else { return false }
        let age = Timestamp.now.microseconds - since.microseconds
        guard age > confirmationAge.wholeMicroseconds else { return false }
        if let confirmed = confirmedAt[id], confirmed.duration(to: .now) < confirmationLifetime { return false }
        return true
    }

    /// Asks for `id` to be checked with the server before any batch that refers to it is sent
    /// (also after the server refused a batch for missing attachments).
    func check(_ id: AttachmentID) {
        confirmedAt[id] = nil
        if toCheck.insert(id).inserted { onCheckNeeded?() }
    }

    /// The batches that refer to `id` may go, and it is not checked again for a confirmation's
    /// lifetime: the server holds it (it said so, or an upload just completed), or cannot be
    /// asked, or there is nothing to upload again (the server then decides).
    func settled(_ id: AttachmentID) {
        confirmedAt[id] = .now
        toCheck.remove(id)
    }

    /// `id` was checked and found missing: it is to be uploaded again (the records say so).
    func checkedMissing(_ id: AttachmentID) {
        toCheck.remove(id)
    }
}

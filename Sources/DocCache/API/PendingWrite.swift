public import DocModel

/// A write batch accepted locally and not yet acknowledged by the server.
public struct PendingWrite: Sendable, Hashable {
    /// What one write of the batch does.
    public enum Kind: String, Sendable, Hashable {
        case set, merge, update, delete, purge, verify
    }

    /// The batch id; pass it to ``DocumentStore/revert(_:)`` to drop the batch.
    public let batchID: Int
    /// The documents the batch writes, in order.
    public let paths: [String]
    /// What each write does, parallel to ``paths``.
    public let kinds: [Kind]
    /// When the batch was written on this device.
    public let localWriteTime: Timestamp
    /// How many times the batch was sent to the server (it is sent again after a connection
    /// failure; the server applies it at most once). Kept with the batch: it survives restarts.
    public let attempts: Int
    /// When the batch was last sent (`nil`: never).
    public let lastAttemptAt: Timestamp?
    /// The last transient error the batch met (a dropped connection, an unavailable server,
    /// …): it stays queued and is sent again. Kept with the batch; `nil` when none happened.
    public let lastError: DocError?
    /// Where the batch is now: queued, on its way, or held back and why.
    public let state: State

    /// Where a queued batch is.
    public enum State: Sendable, Hashable, CustomStringConvertible {
        /// Queued: it is sent when its turn comes on a working connection.
        case pending
        /// Sent; the server's answer has not arrived.
        case sending
        /// Held back: it cannot be sent now, for ``WaitReason``.
        case waiting(WaitReason)

        public var description: String {
            switch self {
            case .pending: return "pending"
            case .sending: return "sending"
            case .waiting(let reason): return "waiting (\(reason))"
            }
        }
    }

    /// Why a queued batch cannot be sent now.
    public enum WaitReason: Sendable, Hashable, CustomStringConvertible {
        /// The store was opened without a server.
        case noServer
        /// ``DocumentStore/disableNetwork()`` was called.
        case networkDisabled
        /// The last connection attempt failed with this error; the store tries again with
        /// backoff.
        case connectionFailed(DocError)
        /// It refers to an attachment of this device that is not uploaded yet.
        case attachmentNotUploaded(AttachmentID)
        /// It refers to an attachment whose upload failed for good: retry or remove it.
        case attachmentFailed(AttachmentID, DocError)
        /// It refers to an attachment uploaded from this device, or downloaded to it, a while
        /// ago (``StoreSettings/attachmentConfirmationAge``), and the store is asking the server
        /// whether it still holds it; if not, it is uploaded again first.
        case attachmentBeingChecked(AttachmentID)
        /// An earlier batch is held back (queue order is kept).
        case earlierBatch(Int)

        public var description: String {
            switch self {
            case .noServer: return "the store has no server"
            case .networkDisabled: return "the network is disabled"
            case .connectionFailed(let error): return "connection failed: \(error)"
            case .attachmentNotUploaded(let id): return "attachment \(id) is not uploaded yet"
            case .attachmentFailed(let id, let error): return "attachment \(id) failed: \(error)"
            case .attachmentBeingChecked(let id): return "attachment \(id) is being checked with the server"
            case .earlierBatch(let id): return "batch \(id) is held back"
            }
        }
    }

    init(_ batch: MutationBatch, delivery: BatchDelivery, state: State) {
        attempts = delivery.attempts
        lastAttemptAt = delivery.lastAttemptAt
        lastError = delivery.lastError
        self.state = state
        batchID = batch.batchID
        paths = batch.mutations.map(\.key.description)
        kinds = batch.mutations.map(Self.kind(of:))
        localWriteTime = batch.localWriteTime
    }

    /// What `mutation` does, as the public API names it.
    static func kind(of mutation: Mutation) -> Kind {
        switch mutation.kind {
        case .set: return .set
        case .patch: return mutation.precondition == .none ? .merge : .update
        case .delete: return .purge
        case .tombstone: return .delete
        case .verify: return .verify
        }
    }
}

/// A write the server rejected: the batch was removed from the queue and the local view of
/// its documents restored. Delivered on ``DocumentStore/writeErrors()``.
public struct WriteError: Sendable, Error, CustomStringConvertible {
    /// The rejected batch (nil if it could not be read any more).
    public let batchID: Int?
    /// The documents the batch wrote.
    public let paths: [String]
    /// The server's reason.
    public let error: DocError

    public var description: String { "write \(batchID.map(String.init) ?? "?") to \(paths) rejected: \(error)" }
}

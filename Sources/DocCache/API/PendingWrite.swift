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
    /// How many times the batch was sent to the server since the store was opened (it is
    /// sent again after a connection failure; the server applies it at most once). Kept in
    /// memory only: it starts at 0 again when the store is reopened.
    public let attempts: Int
    /// The last transient error the batch met since the store was opened (a dropped
    /// connection, an unavailable server, …): it stays queued and is sent again. `nil` when
    /// none happened, and again after the store is reopened.
    public let lastError: DocError?

    init(_ batch: MutationBatch, attempts: Int = 0, lastError: DocError? = nil) {
        self.attempts = attempts
        self.lastError = lastError
        batchID = batch.batchID
        paths = batch.mutations.map(\.key.description)
        kinds = batch.mutations.map { mutation in
            switch mutation.kind {
            case .set: return .set
            case .patch: return mutation.precondition == .none ? .merge : .update
            case .delete: return .purge
            case .tombstone: return .delete
            case .verify: return .verify
            }
        }
        localWriteTime = batch.localWriteTime
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

public import DocModel

/// The store's sync status as a whole, for an app's "saved on this device / syncing 3 of 10 /
/// all changes saved" indicator. Read it with ``DocumentStore/syncStatus`` or follow it with
/// ``DocumentStore/syncStatusUpdates()``.
///
/// The counts describe the current run of syncing: it starts when the queue stops being empty
/// and ends when the server has answered every batch (then ``lastSyncedAt`` moves on and the
/// counts return to 0). A batch written during a run joins it (``totalBatches`` grows).
public struct SyncStatus: Sendable, Hashable, CustomStringConvertible {
    /// What the store is doing.
    public enum Phase: String, Sendable, Hashable {
        /// The server cannot be reached (no connection, the network disabled, or a store
        /// opened without a server). Writes are kept and sent when it can be reached.
        case offline
        /// Batches are waiting for the server's answer (``completedBatches`` of
        /// ``totalBatches`` answered).
        case syncing
        /// Nothing is waiting: the server has answered every batch.
        case synced
        /// The server can be reached but refuses to sync (``error`` says why, e.g.
        /// `unauthenticated` for an expired token). The store keeps trying.
        case error
    }

    /// What the store is doing.
    public let phase: Phase
    /// Batches of this run the server has answered (acknowledged or rejected).
    public let completedBatches: Int
    /// Batches of this run: answered and still queued.
    public let totalBatches: Int
    /// When the server last answered the last queued batch (kept across restarts; `nil`
    /// before the first time).
    public let lastSyncedAt: Timestamp?
    /// Why the store is in `error` (or, when `offline`, the connection error, if one was met).
    public let error: DocError?

    /// Batches still waiting for the server.
    public var pendingBatches: Int { totalBatches - completedBatches }

    package init(phase: Phase, completedBatches: Int, totalBatches: Int, lastSyncedAt: Timestamp?, error: DocError?) {
        self.phase = phase
        self.completedBatches = completedBatches
        self.totalBatches = totalBatches
        self.lastSyncedAt = lastSyncedAt
        self.error = error
    }

    /// The status of a store that can (`canSync`) or cannot reach its server, with `pending`
    /// batches queued after the server `answered` this run's others, and the error of its
    /// failing connection, if any: an unreachable server (`unavailable`, `deadlineExceeded`)
    /// is `offline`, any other error is `error`.
    package init(canSync: Bool, pending: Int, answered: Int, lastSyncedAt: Timestamp?, connectionError: DocError?) {
        let phase: Phase
        if !canSync {
            phase = .offline
        } else if let connectionError {
            phase = [.unavailable, .deadlineExceeded].contains(connectionError.code) ? .offline : .error
        } else {
            phase = pending > 0 ? .syncing : .synced
        }
        let answered = pending > 0 ? answered : 0
        self.init(phase: phase, completedBatches: answered, totalBatches: pending + answered,
                  lastSyncedAt: lastSyncedAt, error: connectionError)
    }

    /// `offline, 3 pending`, `syncing 2 of 5`, `synced at 2026-11-25T10:42:00Z`, `error:
    /// unauthenticated: …`.
    public var description: String {
        let synced = lastSyncedAt.map { "last synced \($0.rfc3339)" } ?? "never synced"
        switch phase {
        case .offline: return "offline, \(pendingBatches) pending, \(synced)"
        case .syncing: return "syncing \(completedBatches) of \(totalBatches)"
        case .synced: return lastSyncedAt.map { "synced at \($0.rfc3339)" } ?? "synced"
        case .error: return "error: \(error.map { "\($0)" } ?? "unknown")"
        }
    }
}

public import DocModel

extension DocumentStore {
    // MARK: - Network

    /// Whether the server is reachable, as decided from the store's connection.
    ///
    /// `unknown` while connecting or while nothing is listened to; `offline` after a failed
    /// connection, 10 seconds without an answer, ``disableNetwork()``, or for a store opened
    /// without a server.
    public var onlineState: OnlineState { get async { await core.onlineState } }

    /// The online state now and after every change. Ending the iteration (or cancelling its
    /// task) stops the observation; the sequence ends when the store closes.
    public func onlineStateUpdates() -> AsyncStream<OnlineState> { core.onlineStates.stream() }

    /// The error that most recently interrupted syncing — the connection could not be opened
    /// (`unavailable`), the server refused the token (`unauthenticated`), the server closed the
    /// connection (its error) — or `nil` once the failing connection works again. A connection
    /// the server ends because its token expired is made again at once with a fresh token and
    /// is not an error here, nor is the end of a connection that had nothing to do. Rejected
    /// writes are not sync errors: they are reported on ``writeErrors()`` and by the write's
    /// ``WriteHandle/committed``.
    public var lastSyncError: DocError? { get async { await core.lastSyncError } }

    /// The store's sync status: `offline`, `syncing` (n of m batches), `synced` (with
    /// ``SyncStatus/lastSyncedAt``) or `error`. Each queued batch's own state is in
    /// ``pendingWrites()``.
    public var syncStatus: SyncStatus { get async { await core.syncStatus } }

    /// The sync status now and after every change, for an indicator or an outbox screen (read
    /// ``pendingWrites()`` again when it changes). Ending the iteration stops the
    /// observation; the sequence ends when the store closes.
    public func syncStatusUpdates() -> AsyncStream<SyncStatus> { core.syncStatuses.stream() }

    /// Lets the store use the network again after ``disableNetwork()``: listeners resume from
    /// their resume tokens and pending writes are sent, in order, each applied once by the
    /// server. Does nothing when the network is enabled.
    ///
    /// - Throws: `failedPrecondition` for a store opened without a server; `failedPrecondition`
    ///   when the store is closed.
    public func enableNetwork() async throws(DocError) { try await core.enableNetwork() }

    /// Stops using the network until ``enableNetwork()``: connections close, the store is
    /// `offline`, listeners show the cache (`isFromCache`), and writes are accepted and queued
    /// as usual. Does nothing when the network is disabled already.
    ///
    /// - Throws: `failedPrecondition` when the store is closed.
    public func disableNetwork() async throws(DocError) { try await core.disableNetwork() }

    /// Throws away local changes and starts over from the server's data. **Destructive: ask
    /// the user to confirm first.**
    ///
    /// - Every pending write is discarded: its local effect is undone at once, its
    ///   ``WriteHandle/committed`` throws `cancelled`, and it is never sent again. A batch that
    ///   was already on its way may still have been applied by the server; the fresh data below
    ///   shows it either way.
    /// - Every active listener's target forgets what the cache knows of it and listens again
    ///   without a resume token: the server sends its full results, documents it no longer has
    ///   leave the listeners, and the listeners end up showing exactly the server's data.
    ///
    /// Works offline too: the fresh listens happen when the store is next online. The
    /// discarded writes are gone for good at once; the fresh listens are not remembered across
    /// a close: a store closed before the server answered them resumes its listeners from
    /// their tokens at the next open, as usual.
    ///
    /// - Throws: `failedPrecondition` when the store is closed; a storage error if the queue
    ///   cannot be read.
    public func resetFromServer() async throws(DocError) { try await core.resetFromServer() }
}

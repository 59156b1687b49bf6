package import DocModel

/// One listener of a query: receives the view's snapshots and decides which to raise to the
/// user (Firestore's `QueryListener`).
///
/// - Metadata-only document changes are stripped unless
///   ``ListenOptions/includeDocumentMetadataChanges``.
/// - The first event is held back while it would show unsynced results that may be about to
///   change: see ``shouldRaiseInitialEvent(_:onlineState:)``. It is raised as a snapshot where
///   every document is added.
/// - Later snapshots are raised when they have document changes, or, with
///   ``ListenOptions/includeQueryMetadataChanges``, when the sync state or the pending-writes
///   state changed.
///
/// A non-`Sendable` reference type used from the client's executor; the event manager tells
/// listeners apart by identity.
package final class QueryListener {
    /// What a listener receives: a snapshot, or the error that ended the listen.
    package typealias Callback = (Result<ViewSnapshot, DocError>) -> Void

    /// The query listened to.
    package let query: Query
    package let options: ListenOptions
    private let callback: Callback

    /// Whether a first event was raised.
    package private(set) var raisedInitialEvent = false
    /// The last online state the listener was told about.
    package private(set) var onlineState: OnlineState = .unknown
    /// The last snapshot received (after stripping metadata changes when not asked for).
    package private(set) var snapshot: ViewSnapshot?

    package init(query: Query, options: ListenOptions = .default, callback: @escaping Callback) {
        self.query = query
        self.options = options
        self.callback = callback
    }

    /// Whether the listener needs the query listened to on the server (any source but
    /// ``ListenSource/cache``).
    package var listensToRemoteStore: Bool { options.source != .cache }

    /// Takes the view's new snapshot; returns whether an event was raised to the user.
    @discardableResult
    package func onViewSnapshot(_ newSnapshot: ViewSnapshot) -> Bool {
        assert(
            !newSnapshot.documentChanges.isEmpty || newSnapshot.syncStateChanged,
            "QueryListener: a snapshot with no changes")
        let snapshot =
            options.includeDocumentMetadataChanges ? newSnapshot : newSnapshot.excludingMetadataChanges()
        var raised = false
        if !raisedInitialEvent {
            if shouldRaiseInitialEvent(snapshot, onlineState: onlineState) {
                raiseInitialEvent(snapshot)
                raised = true
            }
        } else if shouldRaiseEvent(snapshot) {
            callback(.success(snapshot))
            raised = true
        }
        self.snapshot = snapshot
        return raised
    }

    /// Reports the error that ended the listen.
    package func onError(_ error: DocError) {
        callback(.failure(error))
    }

    /// Takes a new online state; raises a held-back first event if the state now allows it.
    /// Returns whether an event was raised.
    @discardableResult
    package func onOnlineStateChanged(_ state: OnlineState) -> Bool {
        onlineState = state
        guard let snapshot, !raisedInitialEvent, shouldRaiseInitialEvent(snapshot, onlineState: state) else {
            return false
        }
        raiseInitialEvent(snapshot)
        return true
    }

    /// Whether the first event may be raised with `snapshot`:
    /// - always when it is synced, or when listening to the cache only;
    /// - not while the client may be online (`unknown` counts as online) and the options say
    ///   to wait for sync;
    /// - otherwise when there is something worth showing: documents, results known from an
    ///   earlier sync, or the client is offline (nothing better will come).
    package func shouldRaiseInitialEvent(_ snapshot: ViewSnapshot, onlineState: OnlineState) -> Bool {
        assert(!raisedInitialEvent, "QueryListener: deciding on a first event after raising one")
        if !snapshot.isFromCache { return true }
        if !listensToRemoteStore { return true }
        let maybeOnline = onlineState != .offline
        if options.waitForSyncWhenOnline && maybeOnline { return false }
        return !snapshot.documents.isEmpty || snapshot.hasCachedResults || onlineState == .offline
    }

    /// Whether a later snapshot is worth an event: it has document changes (metadata-only ones
    /// were already stripped if not wanted), or the query metadata changed and the options
    /// ask for that.
    package func shouldRaiseEvent(_ snapshot: ViewSnapshot) -> Bool {
        if !snapshot.documentChanges.isEmpty { return true }
        let pendingWritesChanged = self.snapshot.map { $0.hasPendingWrites != snapshot.hasPendingWrites } ?? false
        if snapshot.syncStateChanged || pendingWritesChanged {
            return options.includeQueryMetadataChanges
        }
        return false
    }

    private func raiseInitialEvent(_ snapshot: ViewSnapshot) {
        assert(!raisedInitialEvent, "QueryListener: raising a first event twice")
        raisedInitialEvent = true
        callback(
            .success(
                .fromInitialDocuments(
                    query: snapshot.query, documents: snapshot.documents, mutatedKeys: snapshot.mutatedKeys,
                    isFromCache: snapshot.isFromCache, excludesMetadataChanges: snapshot.excludesMetadataChanges,
                    hasCachedResults: snapshot.hasCachedResults)))
    }
}

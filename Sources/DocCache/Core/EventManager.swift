package import DocModel

/// Identifies a snapshots-in-sync listener of an ``EventManager``.
package struct SnapshotsInSyncListenerID: Sendable, Hashable {
    package let rawValue: Int
}

/// The registry of query listeners (Firestore's `EventManager`): fans one listen per query
/// out to every listener of that query, and tells the sync engine when a query starts or
/// stops being listened to, locally or on the server.
///
/// Listeners of equal queries (``Query`` equality: same canonical id) share one listen. A
/// query is listened to on the server while at least one of its listeners uses the default
/// source; with only ``ListenSource/cache`` listeners it is listened to locally only.
///
/// Snapshots-in-sync listeners are called after every batch of snapshots (or online-state
/// change) that raised at least one user event, and once when added.
///
/// A non-`Sendable` reference type used from the client's executor only. It holds its
/// ``QueryEventSource`` strongly; the source should reach the manager (as its
/// ``QueryEventSink``) through a weak reference.
package final class EventManager: QueryEventSink {
    /// The listeners of one query and the query's last snapshot.
    private final class QueryListeners {
        /// When the query was first listened to, to visit queries in a stable order.
        let sequence: Int
        /// The target of the query's listen; `nil` only while the first listen is running.
        var targetID: TargetID?
        var listeners: [QueryListener] = []
        /// The last snapshot of the query's view, given to listeners that join later.
        var snapshot: ViewSnapshot?

        init(sequence: Int) { self.sequence = sequence }

        var hasRemoteListeners: Bool { listeners.contains(where: \.listensToRemoteStore) }

        func contains(_ listener: QueryListener) -> Bool { listeners.contains { $0 === listener } }

        /// Removes `listener`; returns whether it was there.
        func remove(_ listener: QueryListener) -> Bool {
            guard let index = listeners.firstIndex(where: { $0 === listener }) else { return false }
            listeners.remove(at: index)
            return true
        }
    }

    private let source: any QueryEventSource
    private var queries: [Query: QueryListeners] = [:]
    private var nextQuerySequence = 0
    private var snapshotsInSyncListeners: [(id: SnapshotsInSyncListenerID, callback: () -> Void)] = []
    private var nextSnapshotsInSyncID = 0

    /// The last online state reported by the sync engine.
    package private(set) var onlineState: OnlineState = .unknown

    package init(source: any QueryEventSource) {
        self.source = source
    }

    // MARK: - Query listeners

    /// Adds `listener`. The first listener of a query starts its listen (on the server too,
    /// unless it listens to the cache only); a default-source listener joining cache-only
    /// ones starts the server listen. A listener joining an active query gets the query's
    /// last snapshot at once (as its first event, if it qualifies).
    ///
    /// Returns the query's target id (`-1` for a listener added from a callback raised
    /// during the query's own first listen, before that listen returned). When starting the
    /// listen fails, the listener is not added and the error is thrown.
    @discardableResult
    package func addQueryListener(_ listener: QueryListener) throws(DocError) -> TargetID {
        let query = listener.query
        let info: QueryListeners
        let isFirstListen: Bool
        if let existing = queries[query] {
            info = existing
            isFirstListen = false
        } else {
            info = QueryListeners(sequence: nextQuerySequence)
            nextQuerySequence += 1
            queries[query] = info
            isFirstListen = true
        }
        let needsRemoteListen = !isFirstListen && !info.hasRemoteListeners && listener.listensToRemoteStore

        info.listeners.append(listener)
        let raisedOnOnlineState = listener.onOnlineStateChanged(onlineState)
        assert(!raisedOnOnlineState, "EventManager: a new listener raised an event on its online state")
        if let snapshot = info.snapshot, listener.onViewSnapshot(snapshot) {
            raiseSnapshotsInSyncEvent()
        }

        do throws(DocError) {
            if isFirstListen {
                info.targetID = try source.listen(query, shouldListenToRemote: listener.listensToRemoteStore)
            } else if needsRemoteListen {
                try source.listenToRemoteStore(query)
            }
        } catch {
            _ = info.remove(listener)
            if isFirstListen && queries[query] === info {
                queries[query] = nil
            }
            throw error
        }
        return info.targetID ?? -1
    }

    /// Removes `listener` (no-op when it is not registered). Removing a query's last listener
    /// stops its listen (on the server too, if it was listened to there); removing the last
    /// default-source listener while cache-only ones remain stops only the server listen.
    package func removeQueryListener(_ listener: QueryListener) {
        let query = listener.query
        guard let info = queries[query], info.remove(listener) else { return }
        if info.listeners.isEmpty {
            queries[query] = nil
            source.stopListening(query, shouldStopRemoteListening: listener.listensToRemoteStore)
        } else if listener.listensToRemoteStore && !info.hasRemoteListeners {
            source.stopListeningToRemoteStoreOnly(query)
        }
    }

    /// Whether any listener is registered for `query`.
    package func hasListeners(for query: Query) -> Bool { queries[query] != nil }

    /// The listeners registered for `query`, in the order they were added.
    package func listeners(for query: Query) -> [QueryListener] { queries[query]?.listeners ?? [] }

    /// The queries with listeners, in the order they were first listened to.
    package var listenedQueries: [Query] {
        queries.sorted { $0.value.sequence < $1.value.sequence }.map(\.key)
    }

    // MARK: - Snapshots in sync

    /// Adds a callback called after every batch of snapshots that raised a user event (and
    /// once right away): all listeners have then seen one consistent state.
    @discardableResult
    package func addSnapshotsInSyncListener(_ callback: @escaping () -> Void) -> SnapshotsInSyncListenerID {
        let id = SnapshotsInSyncListenerID(rawValue: nextSnapshotsInSyncID)
        nextSnapshotsInSyncID += 1
        snapshotsInSyncListeners.append((id, callback))
        callback()
        return id
    }

    /// Removes a snapshots-in-sync callback (no-op for an unknown id).
    package func removeSnapshotsInSyncListener(_ id: SnapshotsInSyncListenerID) {
        snapshotsInSyncListeners.removeAll { $0.id == id }
    }

    private func raiseSnapshotsInSyncEvent() {
        for listener in snapshotsInSyncListeners { listener.callback() }
    }

    // MARK: - QueryEventSink

    /// Gives each snapshot to the listeners of its query, remembers it as the query's last
    /// snapshot, and raises a snapshots-in-sync event if any listener raised an event.
    package func onViewSnapshots(_ snapshots: [ViewSnapshot]) {
        var raised = false
        for snapshot in snapshots {
            guard let info = queries[snapshot.query] else { continue }
            for listener in info.listeners where info.contains(listener) {
                if listener.onViewSnapshot(snapshot) { raised = true }
            }
            info.snapshot = snapshot
        }
        if raised { raiseSnapshotsInSyncEvent() }
    }

    /// Drops every listener of `query` and gives each the error. The sync engine has already
    /// stopped the query, so it is not told to stop listening.
    package func onError(_ query: Query, _ error: DocError) {
        guard let info = queries.removeValue(forKey: query) else { return }
        for listener in info.listeners { listener.onError(error) }
    }

    /// Records the online state and tells every listener (which may raise a held-back first
    /// event); raises a snapshots-in-sync event if any did.
    package func onOnlineStateChange(_ state: OnlineState) {
        onlineState = state
        var raised = false
        for info in queries.values.sorted(by: { $0.sequence < $1.sequence }) {
            for listener in info.listeners where info.contains(listener) {
                if listener.onOnlineStateChanged(state) { raised = true }
            }
        }
        if raised { raiseSnapshotsInSyncEvent() }
    }
}

package import DocModel

/// What the event manager needs from the sync engine: starting and stopping listens.
///
/// Calls are made on the client's executor. A listen computes the initial view from the local
/// store and reports its snapshot back through ``QueryEventSink/onViewSnapshots(_:)`` before
/// returning.
package protocol QueryEventSource: AnyObject {
    /// Starts listening to `query`: computes its view from the local store (reporting the
    /// first snapshot to the sink) and, when `shouldListenToRemote`, listens to its target on
    /// the server. Returns the target id.
    func listen(_ query: Query, shouldListenToRemote: Bool) throws(DocError) -> TargetID

    /// Stops listening to `query`: drops its view and, when `shouldStopRemoteListening`,
    /// stops listening to its target on the server.
    func stopListening(_ query: Query, shouldStopRemoteListening: Bool)

    /// Starts listening on the server to a query already listened to locally (a
    /// default-source listener joined cache-only ones).
    func listenToRemoteStore(_ query: Query) throws(DocError)

    /// Stops listening on the server to a query that stays listened to locally (the last
    /// default-source listener left; cache-only ones remain).
    func stopListeningToRemoteStoreOnly(_ query: Query)
}

/// What the sync engine reports to the event manager. The sync engine should hold its sink
/// weakly (the event manager holds the sync engine).
package protocol QueryEventSink: AnyObject {
    /// New snapshots of views, all consistent with one another (one global snapshot).
    func onViewSnapshots(_ snapshots: [ViewSnapshot])
    /// The listen of `query` failed for good (e.g. rejected by the server's rules); the sync
    /// engine has already dropped the query.
    func onError(_ query: Query, _ error: DocError)
    /// The network state changed.
    func onOnlineStateChange(_ state: OnlineState)
}

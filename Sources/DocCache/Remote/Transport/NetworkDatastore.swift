import DocModel

/// The ``Datastore`` of a store with a server: a ``NetworkWatchStream`` and a
/// ``NetworkWriteStream``, each one connection of the configured ``FrameTransport`` with its
/// own `hello` (the protocol allows one connection per stream).
///
/// Tokens come from the configuration's provider on every (re)connect. Backoff, reconnects
/// and online state are the remote store's job; a stream only reports what happened.
///
/// Used on the client core's actor only: the streams' connection tasks report back through
/// the core's ``StreamEventRouter``.
final class NetworkDatastore: Datastore {
    private let configuration: NetworkConfiguration
    private let clientID: ClientIdentity
    private let router: StreamEventRouter
    private let scheduler: any Scheduler
    private let activity: SyncActivity

    /// - Parameter clientID: the store's persistent client id (from its persistence globals),
    ///   sent in `hello` and with every batch.
    init(configuration: NetworkConfiguration, clientID: ClientIdentity, router: StreamEventRouter, scheduler: any Scheduler,
         activity: SyncActivity) {
        self.configuration = configuration
        self.clientID = clientID
        self.router = router
        self.scheduler = scheduler
        self.activity = activity
    }

    func makeWatchStream(delegate: any WatchStreamDelegate) -> any WatchStream {
        NetworkWatchStream(link: link(idleTimer: .listenStreamIdle), activity: activity, delegate: delegate)
    }

    func makeWriteStream(delegate: any WriteStreamDelegate) -> any WriteStream {
        NetworkWriteStream(link: link(idleTimer: .writeStreamIdle), clientID: clientID, activity: activity, delegate: delegate)
    }

    private func link(idleTimer: TimerID) -> NetworkStreamLink {
        NetworkStreamLink(configuration: configuration, clientID: clientID, router: router, scheduler: scheduler, idleTimerID: idleTimer)
    }
}

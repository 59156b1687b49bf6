/// Whether the store can reach its server, as decided from its watch stream (Firestore's
/// online state). Read it with ``DocumentStore/onlineState``, follow it with
/// ``DocumentStore/onlineStateUpdates()``.
public enum OnlineState: Sendable, Hashable {
    /// Not known yet: the store is connecting, or has nothing to listen to (with no listener
    /// there is no stream to prove the connection). Listeners that wait for the server keep
    /// waiting.
    case unknown
    /// Connected: the server answers the watch stream.
    case online
    /// The server cannot be reached (the connection failed, the server did not answer within
    /// 10 seconds, or the network is disabled or the store has no server). Listeners show the
    /// cache with `isFromCache`; writes wait in the queue.
    case offline
}

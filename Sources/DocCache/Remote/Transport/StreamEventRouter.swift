/// Delivers events from the network streams' connection tasks to the streams, on the client
/// core's actor (the pattern of ``ActorScheduler``): a task calls
/// `await core?.deliverStreamEvent(stream, generation: g, event)`, and the core hands the event
/// to the stream registered under that id, synchronously. The engine's state never leaves the
/// actor; tasks only carry `Sendable` events.
final class StreamEventRouter {
    /// Events are sent through this core; held weakly, so transport tasks never keep a closed
    /// store alive.
    weak var core: ClientCore?
    private var handlers: [Int: (Int, StreamEvent) -> Void] = [:]
    private var nextID = 0

    /// Registers a stream's event handler (called with the event's generation); returns the
    /// stream's id.
    func register(_ handler: @escaping (_ generation: Int, StreamEvent) -> Void) -> Int {
        nextID += 1
        handlers[nextID] = handler
        return nextID
    }

    /// Hands `event` to the stream `id` (nothing happens for an unknown id).
    func deliver(stream id: Int, generation: Int, _ event: StreamEvent) {
        handlers[id]?(generation, event)
    }

    /// The function a connection task calls to report an event of one stream generation.
    func sink(stream id: Int, generation: Int) -> @Sendable (StreamEvent) async -> Void {
        { [weak core] event in await core?.deliverStreamEvent(id, generation: generation, event) }
    }
}

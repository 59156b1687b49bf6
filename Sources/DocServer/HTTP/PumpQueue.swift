internal import NIOCore
internal import Synchronization

/// The ``OutboxPump``s of one event loop that have frames to write: the first one queued
/// schedules one task on the loop, which runs every pump queued by then. A fan-out to 1,000
/// connections on two event loops is two event-loop tasks, not 1,000.
final class PumpQueue: Sendable {
    private struct State {
        var pumps: [OutboxPump] = []
        var scheduled = false
        var runs = 0
    }

    let eventLoop: any EventLoop
    private let state = Mutex(State())

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Runs `pump` on the loop soon, with the other pumps queued before that task runs.
    func enqueue(_ pump: OutboxPump) {
        let schedule = state.withLock { s -> Bool in
            s.pumps.append(pump)
            guard !s.scheduled else { return false }
            s.scheduled = true
            return true
        }
        if schedule { eventLoop.execute { self.run() } }
    }

    /// The loop tasks run so far (tests: one for the pumps queued together).
    var runs: Int { state.withLock { $0.runs } }

    private func run() {
        let pumps = state.withLock { s -> [OutboxPump] in
            s.scheduled = false
            s.runs += 1
            var taken: [OutboxPump] = []
            swap(&taken, &s.pumps)
            return taken
        }
        for pump in pumps { pump.pump() }
    }
}

/// One ``PumpQueue`` per event loop, for the connections of one server.
final class PumpQueues: Sendable {
    private let queues = Mutex<[ObjectIdentifier: PumpQueue]>([:])

    /// The queue of `eventLoop` (made on first use).
    func queue(for eventLoop: any EventLoop) -> PumpQueue {
        queues.withLock { queues in
            let id = ObjectIdentifier(eventLoop)
            if let queue = queues[id] { return queue }
            let queue = PumpQueue(eventLoop: eventLoop)
            queues[id] = queue
            return queue
        }
    }
}

internal import Synchronization

/// A store-wide stream of events with any number of observers: rejected writes, or the
/// successive values of a piece of state (the pending-write count, the online state).
///
/// Observers register synchronously, so an observer that asks for the stream before it
/// starts a write sees that write's event: no registration hop can let an event slip by. A
/// broadcast made with ``init(replayingLatest:)`` starts every new stream with the latest
/// value, so a state stream always begins with the state as it is now; one made with
/// ``init(replayingAll:)`` starts it with every event so far (a task's progress).
/// Each observer's stream buffers without bound; events are small and rare. Events are
/// yielded by one owner at a time (the store's actor), so every observer sees them in order.
package final class EventBroadcast<Element: Sendable>: Sendable {
    /// What a new stream is given first.
    private enum Replay {
        case nothing
        case latest(Element)
        case all([Element])

        var events: [Element] {
            switch self {
            case .nothing: []
            case .latest(let event): [event]
            case .all(let events): events
            }
        }

        /// The latest event kept (no array made for it: read on every local write).
        var last: Element? {
            switch self {
            case .nothing: nil
            case .latest(let event): event
            case .all(let events): events.last
            }
        }

        mutating func record(_ event: Element) {
            switch self {
            case .nothing: break
            case .latest: self = .latest(event)
            case .all(var events):
                self = .nothing   // not a second copy while appending
                events.append(event)
                self = .all(events)
            }
        }
    }

    private struct State {
        var nextID = 0
        var observers: [Int: AsyncStream<Element>.Continuation] = [:]
        var finished = false
        var replay: Replay
    }

    private let state: Mutex<State>

    /// A broadcast of events: a stream sees the events yielded after it was made.
    package init() {
        state = Mutex(State(replay: .nothing))
    }

    /// A broadcast of a state's values: a stream first sees the latest value (`initial` until
    /// the first ``yield(_:)``), then every later one.
    package init(replayingLatest initial: Element) {
        state = Mutex(State(replay: .latest(initial)))
    }

    /// A broadcast that keeps its events: a stream first sees every event yielded so far,
    /// then every later one.
    package init(replayingAll: Void) {
        state = Mutex(State(replay: .all([])))
    }

    /// The latest value of a replaying broadcast (`nil` for one that does not replay, or
    /// one that replays all and has none yet).
    package var latest: Element? { state.withLock { $0.replay.last } }

    /// A new observer's stream: what the broadcast replays, then every event yielded from now
    /// on, until ``finish()``. After `finish()` the stream holds only what is replayed and
    /// ends.
    package func stream() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self)
        let id = state.withLock { state -> Int? in
            for event in state.replay.events { continuation.yield(event) }
            guard !state.finished else { return nil }
            state.nextID += 1
            state.observers[state.nextID] = continuation
            return state.nextID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.observers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Delivers `event` to every current observer (and keeps it when replaying). Nothing
    /// happens after ``finish()``.
    package func yield(_ event: Element) {
        let observers = state.withLock { state -> [AsyncStream<Element>.Continuation] in
            guard !state.finished else { return [] }
            state.replay.record(event)
            return Array(state.observers.values)
        }
        for continuation in observers { continuation.yield(event) }
    }

    /// Ends every stream (after the events they hold); later streams end at once.
    package func finish() {
        let observers = state.withLock { state -> [AsyncStream<Element>.Continuation] in
            state.finished = true
            defer { state.observers = [:] }
            return Array(state.observers.values)
        }
        for continuation in observers { continuation.finish() }
    }

    /// How many observers are registered (for leak checks in tests).
    package var observerCount: Int { state.withLock { $0.observers.count } }
}

extension EventBroadcast where Element == Void {
    /// A stream of `read()`'s answers: one now, then one after every signal, until the
    /// broadcast finishes or `read` answers `nil`. The signal is observed before the first
    /// read, so no change between the two is missed.
    package func rereading<T: Sendable>(_ read: @escaping @Sendable () async -> T?) -> AsyncStream<T> {
        let changes = stream()
        return AsyncStream { continuation in
            let task = Task {
                var pending: Void? = ()
                var iterator = changes.makeAsyncIterator()
                while pending != nil {
                    guard let value = await read() else { break }
                    continuation.yield(value)
                    pending = await iterator.next()
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

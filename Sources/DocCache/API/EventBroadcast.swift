internal import Synchronization

/// A store-wide stream of events (such as rejected writes) with any number of observers.
/// Observers register synchronously, so an observer that asks for the stream before it
/// starts a write sees that write's event: no registration hop can let an event slip by.
/// Each observer's stream buffers without bound; events are small and rare.
package final class EventBroadcast<Element: Sendable>: Sendable {
    private struct State {
        var nextID = 0
        var observers: [Int: AsyncStream<Element>.Continuation] = [:]
        var finished = false
    }

    private let state = Mutex(State())

    package init() {}

    /// A new observer's stream: every event yielded from now on, until ``finish()``.
    package func stream() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self)
        let id = state.withLock { state -> Int? in
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

    /// Delivers `event` to every current observer.
    package func yield(_ event: Element) {
        for continuation in state.withLock({ Array($0.observers.values) }) { continuation.yield(event) }
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

import Synchronization

/// A continuation that two racing events may end, of which only the first does: an answer
/// and a cancellation of the waiting task, say.
final class ResumeOnce<T: Sendable>: Sendable {
    private enum State {
        /// Not ended yet; the continuation once ``wait(isolation:_:)`` has put it in place.
        case waiting(CheckedContinuation<T, Never>?)
        /// Ended, possibly before the wait began: the wait then returns this at once.
        case ended(T)
    }

    private let state = Mutex(State.waiting(nil))

    init() {}

    /// Suspends until ``resume(returning:)``; `start` runs once the continuation is in place,
    /// on the caller's actor.
    func wait(isolation: isolated (any Actor)? = #isolation, _ start: () -> Void) async -> T {
        await withCheckedContinuation { continuation in
            let ended = state.withLock { state -> T? in
                if case .ended(let value) = state { return value }
                state = .waiting(continuation)
                return nil
            }
            if let ended { continuation.resume(returning: ended) } else { start() }
        }
    }

    /// Ends the wait with `value` unless it ended already.
    func resume(returning value: T) {
        let continuation = state.withLock { state -> CheckedContinuation<T, Never>? in
            guard case .waiting(let continuation) = state else { return nil }
            state = .ended(value)
            return continuation
        }
        continuation?.resume(returning: value)
    }
}

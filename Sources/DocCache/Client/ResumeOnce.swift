import Synchronization

/// A continuation that two racing events may end, of which only the first does: an answer
/// and a cancellation of the waiting task, say.
final class ResumeOnce<T: Sendable>: Sendable {
    private let slot = Mutex<CheckedContinuation<T, Never>?>(nil)
    /// Set once resumed, so that an event before ``wait(_:)`` is not lost.
    private let early = Mutex<T?>(nil)

    init() {}

    /// Suspends until ``resume(returning:)``; `start` runs once the continuation is in place,
    /// on the caller's actor.
    func wait(isolation: isolated (any Actor)? = #isolation, _ start: () -> Void) async -> T {
        await withCheckedContinuation { continuation in
            let value = early.withLock { value -> T? in
                if value == nil { slot.withLock { $0 = continuation } }
                return value
            }
            if let value { continuation.resume(returning: value) } else { start() }
        }
    }

    /// Ends the wait with `value` unless it ended already.
    func resume(returning value: T) {
        let continuation = early.withLock { early -> CheckedContinuation<T, Never>? in
            guard early == nil else { return nil }
            early = value
            return slot.withLock { $0.take() }
        }
        continuation?.resume(returning: value)
    }
}

internal import DocModel
internal import Synchronization

/// A lock held across suspension points, granted in the order it was asked for: the embedded
/// store's critical section for work that awaits (an attachment collection's deletions, and
/// the rechecks of the commits that must not be stored in the middle of one).
final class AsyncLock: Sendable {
    private struct State {
        var held = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// Runs `body` holding the lock; waits for it first if another caller holds it.
    func run<T>(_ body: () async throws(DocError) -> T) async throws(DocError) -> T {
        await acquire()
        defer { release() }
        return try await body()
    }

    private func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state -> Bool in
                if state.held {
                    state.waiters.append(continuation)
                    return false
                }
                state.held = true
                return true
            }
            if granted { continuation.resume() }
        }
    }

    private func release() {
        // The lock passes straight to the next waiter, if any.
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.held = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}

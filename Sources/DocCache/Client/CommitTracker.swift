package import DocModel
import Synchronization

/// The outcome of one queued write batch, awaited by any number of tasks: the commit version
/// once the server acknowledges it, or the server's rejection. A task that is cancelled
/// while it waits stops waiting (``wait()`` throws `cancelled`); the batch stays queued.
package final class CommitTracker: Sendable {
    private typealias Waiter = CheckedContinuation<SnapshotVersion, any Error>

    private enum State {
        /// The waiting tasks by a number of their own, so that a cancelled one can leave.
        case pending([Int: Waiter], next: Int)
        case done(Result<SnapshotVersion, DocError>)
    }

    private let state = Mutex(State.pending([:], next: 0))

    package init() {}

    package func resolve(_ result: Result<SnapshotVersion, DocError>) {
        let waiters = state.withLock { s -> [Waiter] in
            guard case .pending(let waiting, _) = s else { return [] }
            s = .done(result)
            return Array(waiting.values)
        }
        for waiter in waiters { waiter.resume(with: result.mapError { $0 as any Error }) }
    }

    package var result: Result<SnapshotVersion, DocError>? {
        state.withLock { s in if case .done(let r) = s { return r } else { return nil } }
    }

    package func wait() async throws(DocError) -> SnapshotVersion {
        let id = state.withLock { s -> Int in
            guard case .pending(let waiting, let next) = s else { return -1 }
            s = .pending(waiting, next: next + 1)
            return next
        }
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: Waiter) in
                    let done = state.withLock { s -> Result<SnapshotVersion, DocError>? in
                        switch s {
                        case .pending(var waiting, let next):
                            // Cancelled before it got here: the handler found nothing to end.
                            if Task.isCancelled { return .failure(Self.cancelled) }
                            waiting[id] = continuation
                            s = .pending(waiting, next: next)
                            return nil
                        case .done(let r):
                            return r
                        }
                    }
                    if let done { continuation.resume(with: done.mapError { $0 as any Error }) }
                }
            } onCancel: {
                let waiter = state.withLock { s -> Waiter? in
                    guard case .pending(var waiting, let next) = s, let waiter = waiting.removeValue(forKey: id) else { return nil }
                    s = .pending(waiting, next: next)
                    return waiter
                }
                waiter?.resume(throwing: Self.cancelled)
            }
        } catch let error as DocError {
            throw error
        } catch {
            throw DocError(.unknown, "\(error)")
        }
    }

    private static let cancelled = DocError(
        .cancelled, "the task waiting for the write's commit was cancelled; the write stays queued and is still sent")
}

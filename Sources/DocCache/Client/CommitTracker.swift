package import DocModel
import Synchronization

/// The outcome of one queued write batch, awaited by any number of tasks: the commit version
/// once the server acknowledges it, or the server's rejection.
package final class CommitTracker: Sendable {
    private enum State {
        case pending([CheckedContinuation<SnapshotVersion, any Error>])
        case done(Result<SnapshotVersion, DocError>)
    }

    private let state = Mutex(State.pending([]))

    package init() {}

    package func resolve(_ result: Result<SnapshotVersion, DocError>) {
        let waiters = state.withLock { s -> [CheckedContinuation<SnapshotVersion, any Error>] in
            guard case .pending(let waiting) = s else { return [] }
            s = .done(result)
            return waiting
        }
        for waiter in waiters { waiter.resume(with: result.mapError { $0 as any Error }) }
    }

    package var result: Result<SnapshotVersion, DocError>? {
        state.withLock { s in if case .done(let r) = s { return r } else { return nil } }
    }

    package func wait() async throws(DocError) -> SnapshotVersion {
        do {
            return try await withCheckedThrowingContinuation { continuation in
                let done = state.withLock { s -> Result<SnapshotVersion, DocError>? in
                    switch s {
                    case .pending(var waiting):
                        waiting.append(continuation)
                        s = .pending(waiting)
                        return nil
                    case .done(let r):
                        return r
                    }
                }
                if let done { continuation.resume(with: done.mapError { $0 as any Error }) }
            }
        } catch let error as DocError {
            throw error
        } catch {
            throw DocError(.unknown, "\(error)")
        }
    }
}

internal import DocModel
internal import Synchronization

/// Runs `body` with a time limit: past `timeout` the call returns `onTimeout()` and `body` is
/// cancelled (postgres-nio gives up waiting for a pooled connection when cancelled).
///
/// `body` runs in its own task and the call does not wait for it to end: a query stuck on a
/// half-open TCP connection, which cancellation cannot interrupt, does not hold the caller
/// past its deadline. Cancelling the caller cancels `body` and returns `cancelled`.
///
/// - Parameter discardLate: what to do with a value `body` returns after the call has already
///   returned (timed out or cancelled): a resource nobody will own, such as a connection that
///   must be closed.
func withDeadline<T: Sendable>(
    _ timeout: Duration,
    onTimeout: @escaping @Sendable () -> DocError,
    discardLate: (@Sendable (T) async -> Void)? = nil,
    _ body: @escaping @Sendable () async throws(DocError) -> T
) async throws(DocError) -> T {
    let race = DeadlineRace<T>()
    let result = await withTaskCancellationHandler {
        await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, DocError>, Never>) in
            race.wait(continuation)
            let work = Task {
                let result: Result<T, DocError>
                do throws(DocError) { result = .success(try await body()) } catch { result = .failure(error) }
                if !race.finish(result), let discardLate, case .success(let late) = result { await discardLate(late) }
            }
            let timer = Task {
                try? await Task.sleep(for: timeout)
                if !Task.isCancelled { race.finish(.failure(onTimeout())) }
            }
            race.add(work: work, timer: timer)
        }
    } onCancel: {
        race.finish(.failure(DocError(.cancelled, "the call was cancelled")))
    }
    return try result.get()
}

/// The state of one ``withDeadline(_:onTimeout:_:)`` call: the first result wins; the others
/// are dropped, and the loser tasks are cancelled.
private final class DeadlineRace<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Result<T, DocError>, Never>?
        var result: Result<T, DocError>?
        var work: Task<Void, Never>?
        var timer: Task<Void, Never>?
    }

    private let state = Mutex(State())

    func wait(_ continuation: CheckedContinuation<Result<T, DocError>, Never>) {
        let ready = state.withLock { state -> Result<T, DocError>? in
            if let result = state.result { return result }
            state.continuation = continuation
            return nil
        }
        if let ready { continuation.resume(returning: ready) }
    }

    func add(work: Task<Void, Never>, timer: Task<Void, Never>) {
        let done = state.withLock { state -> Bool in
            state.work = work
            state.timer = timer
            return state.result != nil
        }
        if done {
            work.cancel()
            timer.cancel()
        }
    }

    /// Settles the race with `result` unless it is settled already; returns whether it was
    /// this call that settled it.
    @discardableResult
    func finish(_ result: Result<T, DocError>) -> Bool {
        let settled = state.withLock { state -> (CheckedContinuation<Result<T, DocError>, Never>?, Task<Void, Never>?, Task<Void, Never>?)? in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.continuation = nil }
            return (state.continuation, state.work, state.timer)
        }
        guard let (continuation, work, timer) = settled else { return false }
        continuation?.resume(returning: result)
        work?.cancel()
        timer?.cancel()
        return true
    }
}

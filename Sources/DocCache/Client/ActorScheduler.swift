/// Runs the engine's named timers (backoff, idle, online-state timeout) on the client core's
/// executor: a task sleeps, then asks the core to fire the timer by token, so the action (which
/// touches engine state) never leaves the actor.
final class ActorScheduler: Scheduler {
    weak var core: ClientCore?
    private var actions: [Int: () -> Void] = [:]
    private var nextToken = 0
    private let start = ContinuousClock.now

    var now: Duration { start.duration(to: .now) }

    final class Timer: ScheduledTimer {
        let cancelAction: () -> Void
        init(cancel: @escaping () -> Void) { self.cancelAction = cancel }
        func cancel() { cancelAction() }
    }

    func schedule(_ id: TimerID, after delay: Duration, _ action: @escaping () -> Void) -> any ScheduledTimer {
        nextToken += 1
        let token = nextToken
        actions[token] = action
        let task = Task { [weak core] in
            try? await Task.sleep(for: delay)
            guard !Task.isCancelled else { return }
            await core?.fireTimer(token)
        }
        return Timer { [weak self] in
            task.cancel()
            self?.actions[token] = nil
        }
    }

    /// Runs and forgets the action of `token` (a cancelled timer has none).
    func fire(_ token: Int) {
        actions.removeValue(forKey: token)?()
    }

    func cancelAll() { actions = [:] }
}

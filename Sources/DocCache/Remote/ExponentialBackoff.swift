/// Spaces out retries: each attempt waits longer than the one before, with random jitter so
/// that many clients do not reconnect in lockstep.
///
/// The first attempt after ``reset()`` (and after creation) runs without delay. Each later
/// attempt waits the current base delay, scaled by a random factor between 0.5 and 1.5; the
/// base starts at ``initialDelay`` and grows by ``factor`` per attempt up to ``maxDelay``.
/// Time already spent since the previous attempt started counts toward the wait.
package final class ExponentialBackoff {
    /// The base delay of the second attempt (the first after a reset runs at once).
    package let initialDelay: Duration
    /// How much the base delay grows per attempt.
    package let factor: Double
    /// The largest base delay (jitter may still stretch an actual wait to 1.5 × this).
    package let maxDelay: Duration

    private let scheduler: any Scheduler
    private let timerID: TimerID
    private let randomUnit: () -> Double
    /// The base delay of the next attempt, in milliseconds.
    private var currentBaseMilliseconds: Double = 0
    /// When the last scheduled action started, on the scheduler's clock.
    private var lastAttemptTime: Duration
    private var pending: (any ScheduledTimer)?

    /// Creates a backoff that schedules its attempts on `scheduler` under `timerID`.
    ///
    /// - Parameters:
    ///   - randomUnit: a source of uniformly distributed numbers in `0..<1`, for the jitter;
    ///     tests pass a fixed value for deterministic delays.
    package init(
        scheduler: any Scheduler, timerID: TimerID, initialDelay: Duration = .seconds(1), factor: Double = 1.5,
        maxDelay: Duration = .seconds(60), randomUnit: @escaping () -> Double = { Double.random(in: 0..<1) }
    ) {
        precondition(factor >= 1, "the backoff factor must be at least 1")
        precondition(initialDelay >= .zero && initialDelay <= maxDelay, "need 0 ≤ initialDelay ≤ maxDelay")
        self.scheduler = scheduler
        self.timerID = timerID
        self.initialDelay = initialDelay
        self.factor = factor
        self.maxDelay = maxDelay
        self.randomUnit = randomUnit
        self.lastAttemptTime = scheduler.now
    }

    /// The base delay the next ``backoffAndRun(_:)`` uses before jitter (zero after a reset).
    package var currentBaseDelay: Duration { .milliseconds(Int64(currentBaseMilliseconds.rounded())) }

    /// Whether an action is waiting to run.
    package var isPending: Bool { pending != nil }

    /// Schedules `action` after the current delay (replacing any action still waiting), then
    /// grows the delay for the next attempt.
    package func backoffAndRun(_ action: @escaping () -> Void) {
        cancel()

        let jitter = (randomUnit() - 0.5) * currentBaseMilliseconds
        let desired = currentBaseMilliseconds + jitter
        let elapsed = Self.milliseconds(scheduler.now - lastAttemptTime)
        let remaining = max(0, desired - elapsed)

        pending = scheduler.schedule(timerID, after: .milliseconds(Int64(remaining.rounded()))) { [weak self] in
            guard let self else { return }
            self.pending = nil
            self.lastAttemptTime = self.scheduler.now
            action()
        }

        let grown = currentBaseMilliseconds * factor
        currentBaseMilliseconds = min(max(grown, Self.milliseconds(initialDelay)), Self.milliseconds(maxDelay))
    }

    /// Makes the next attempt run at once, and the one after wait ``initialDelay``.
    package func reset() {
        currentBaseMilliseconds = 0
    }

    /// Makes the next attempt wait the maximum delay (after the server said it is overloaded).
    package func resetToMax() {
        currentBaseMilliseconds = Self.milliseconds(maxDelay)
    }

    /// Cancels the action waiting to run, if any; the delay is kept.
    package func cancel() {
        pending?.cancel()
        pending = nil
    }

    private static func milliseconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) * 1_000 + Double(attoseconds) / 1e15
    }
}

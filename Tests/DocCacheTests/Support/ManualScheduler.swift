@testable import DocCache

/// A ``Scheduler`` whose timers run only when a test says so, on a virtual clock.
///
/// Timers are ordered by deadline (virtual time of scheduling + delay), ties by scheduling
/// order. Running a timer moves the clock forward to its deadline. The spec-test step
/// `runTimer: NAME` maps to ``runTimer(named:)``: like Firestore's test queue, it runs every
/// timer due before the named one, then the named one (`"all"` runs everything).
final class ManualScheduler: Scheduler {
    /// A scheduled action.
    final class Timer: ScheduledTimer {
        let id: TimerID
        let delay: Duration
        let deadline: Duration
        fileprivate let sequence: Int
        fileprivate var action: (() -> Void)?

        fileprivate init(id: TimerID, delay: Duration, deadline: Duration, sequence: Int, action: @escaping () -> Void) {
            self.id = id
            self.delay = delay
            self.deadline = deadline
            self.sequence = sequence
            self.action = action
        }

        /// Whether the timer is still waiting (neither run nor cancelled).
        var isPending: Bool { action != nil }

        func cancel() { action = nil }
    }

    /// The virtual clock.
    private(set) var now: Duration = .zero
    private var timers: [Timer] = []
    private var nextSequence = 0
    /// Every timer ever scheduled, in scheduling order (including run and cancelled ones).
    private(set) var history: [Timer] = []

    init() {}

    func schedule(_ id: TimerID, after delay: Duration, _ action: @escaping () -> Void) -> any ScheduledTimer {
        let timer = Timer(id: id, delay: delay, deadline: now + delay, sequence: nextSequence, action: action)
        nextSequence += 1
        timers.append(timer)
        history.append(timer)
        return timer
    }

    /// The timers waiting to run, in the order they would run.
    var pendingTimers: [Timer] {
        timers.filter(\.isPending).sorted { ($0.deadline, $0.sequence) < ($1.deadline, $1.sequence) }
    }

    /// The ids of the waiting timers, in the order they would run.
    var pending: [TimerID] { pendingTimers.map(\.id) }

    /// Whether a timer with `id` is waiting.
    func isPending(_ id: TimerID) -> Bool { pendingTimers.contains { $0.id == id } }

    /// The delay the next waiting timer with `id` was scheduled with.
    func delay(of id: TimerID) -> Duration? { pendingTimers.first { $0.id == id }?.delay }

    /// Runs only the next waiting timer with `id` (not the ones due before it). Returns
    /// whether there was one.
    @discardableResult
    func fire(_ id: TimerID) -> Bool {
        guard let timer = pendingTimers.first(where: { $0.id == id }) else { return false }
        run(timer)
        return true
    }

    /// Runs waiting timers in deadline order, including timers they schedule, up to and
    /// including the first with `id` (Firestore's `runDelayedOperationsUntil`). Returns
    /// whether a timer with `id` ran.
    @discardableResult
    func runUntil(_ id: TimerID) -> Bool {
        guard isPending(id) else { return false }
        while let timer = pendingTimers.first {
            run(timer)
            if timer.id == id { return true }
        }
        return false
    }

    /// Runs every waiting timer, including timers they schedule, in deadline order; stops
    /// after `limit` timers as a guard against timers that reschedule themselves forever.
    /// Returns the number run.
    @discardableResult
    func runAll(limit: Int = 1_000) -> Int {
        var count = 0
        while count < limit, let timer = pendingTimers.first {
            run(timer)
            count += 1
        }
        return count
    }

    /// Moves the clock forward by `duration`, running the timers that become due on the way.
    func advance(by duration: Duration) {
        let target = now + duration
        while let timer = pendingTimers.first, timer.deadline <= target {
            run(timer)
        }
        now = target
    }

    /// Runs the timers that are due now (delay zero), as a real executor would on its own.
    func runDue() {
        advance(by: .zero)
    }

    /// The spec tests' `runTimer` step: `"all"` runs everything, a timer name (the raw
    /// value of a ``TimerID``) runs up to and including that timer. Returns `false` for an
    /// unknown name or a timer that is not pending.
    @discardableResult
    func runTimer(named name: String) -> Bool {
        if name == "all" {
            runAll()
            return true
        }
        guard let id = TimerID(rawValue: name) else { return false }
        return runUntil(id)
    }

    private func run(_ timer: Timer) {
        guard let action = timer.action else { return }
        timer.action = nil
        timers.removeAll { $0 === timer }
        if timer.deadline > now { now = timer.deadline }
        action()
    }
}

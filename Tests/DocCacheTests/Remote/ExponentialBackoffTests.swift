import Testing
@testable import DocCache
import DocTestTraits

@Suite("Exponential backoff", .cpuBound)
struct ExponentialBackoffTests {
    let scheduler = ManualScheduler()

    private func makeBackoff(random: Double = 0.5) -> ExponentialBackoff {
        ExponentialBackoff(scheduler: scheduler, timerID: .writeStreamConnectionBackoff, randomUnit: { random })
    }

    /// Schedules one attempt, returns its delay and runs it.
    private func attempt(_ backoff: ExponentialBackoff) -> Duration? {
        backoff.backoffAndRun {}
        let delay = scheduler.delay(of: .writeStreamConnectionBackoff)
        scheduler.runAll()
        return delay
    }

    @Test func delaysGrowByTheFactorFromZero() {
        let backoff = makeBackoff()
        let delays = (0..<5).map { _ in attempt(backoff) }
        #expect(delays == [.zero, .seconds(1), .milliseconds(1_500), .milliseconds(2_250), .milliseconds(3_375)])
    }

    @Test func delaysAreCappedAtTheMaximum() {
        let backoff = makeBackoff()
        for _ in 0..<12 { _ = attempt(backoff) }
        #expect(backoff.currentBaseDelay == .seconds(60))
        #expect(attempt(backoff) == .seconds(60))
        #expect(attempt(backoff) == .seconds(60))
    }

    @Test func jitterIsPlusOrMinusHalf() {
        let low = makeBackoff(random: 0)
        _ = attempt(low)
        #expect(attempt(low) == .milliseconds(500))

        let high = makeBackoff(random: 0.999)
        _ = attempt(high)
        #expect(attempt(high) == .milliseconds(1_499))
    }

    @Test func resetRestartsFromZero() {
        let backoff = makeBackoff()
        for _ in 0..<4 { _ = attempt(backoff) }
        backoff.reset()
        #expect(attempt(backoff) == .zero)
        #expect(attempt(backoff) == .seconds(1))
    }

    @Test func resetToMaxWaitsTheMaximum() {
        let backoff = makeBackoff()
        backoff.resetToMax()
        #expect(attempt(backoff) == .seconds(60))
    }

    @Test func runsTheActionOnlyWhenTheTimerFires() {
        let backoff = makeBackoff()
        _ = attempt(backoff)
        var runs = 0
        backoff.backoffAndRun { runs += 1 }
        #expect(backoff.isPending)
        scheduler.advance(by: .milliseconds(999))
        #expect(runs == 0)
        scheduler.advance(by: .milliseconds(1))
        #expect(runs == 1)
        #expect(!backoff.isPending)
    }

    @Test func cancelAndReplaceDropThePendingAction() {
        let backoff = makeBackoff()
        var ran: [String] = []
        backoff.backoffAndRun { ran.append("first") }
        backoff.cancel()
        scheduler.runAll()
        #expect(ran.isEmpty)

        backoff.backoffAndRun { ran.append("second") }
        backoff.backoffAndRun { ran.append("third") }
        scheduler.runAll()
        #expect(ran == ["third"])
    }

    @Test func timeSinceTheLastAttemptCountsTowardTheDelay() {
        let backoff = makeBackoff()
        _ = attempt(backoff)  // at t = 0; the next base delay is 1 s
        scheduler.advance(by: .milliseconds(400))
        backoff.backoffAndRun {}
        #expect(scheduler.delay(of: .writeStreamConnectionBackoff) == .milliseconds(600))
    }

    @Test func usesItsTimerID() {
        let backoff = ExponentialBackoff(scheduler: scheduler, timerID: .listenStreamConnectionBackoff)
        backoff.backoffAndRun {}
        #expect(scheduler.pending == [.listenStreamConnectionBackoff])
    }
}

import Testing
@testable import DocCache
import DocTestTraits

/// The test scheduler the remote tests and the spec-test driver rely on.
@Suite("Manual scheduler", .cpuBound)
struct ManualSchedulerTests {
    let scheduler = ManualScheduler()

    @Test func runUntilRunsEarlierTimersFirst() {
        var ran: [TimerID] = []
        _ = scheduler.schedule(.onlineStateTimeout, after: .seconds(10)) { ran.append(.onlineStateTimeout) }
        _ = scheduler.schedule(.listenStreamIdle, after: .seconds(60)) { ran.append(.listenStreamIdle) }
        _ = scheduler.schedule(.writeStreamConnectionBackoff, after: .seconds(1)) { ran.append(.writeStreamConnectionBackoff) }
        #expect(scheduler.pending == [.writeStreamConnectionBackoff, .onlineStateTimeout, .listenStreamIdle])

        #expect(scheduler.runTimer(named: "online_state_timeout"))
        #expect(ran == [.writeStreamConnectionBackoff, .onlineStateTimeout])
        #expect(scheduler.now == .seconds(10))
        #expect(scheduler.pending == [.listenStreamIdle])
    }

    @Test func fireRunsOnlyTheNamedTimer() {
        var ran: [TimerID] = []
        _ = scheduler.schedule(.garbageCollection, after: .seconds(1)) { ran.append(.garbageCollection) }
        _ = scheduler.schedule(.retryTransaction, after: .seconds(5)) { ran.append(.retryTransaction) }
        #expect(scheduler.fire(.retryTransaction))
        #expect(ran == [.retryTransaction])
        #expect(!scheduler.fire(.retryTransaction))
    }

    @Test func allRunsTimersScheduledByTimers() {
        var ran = 0
        _ = scheduler.schedule(.retryTransaction, after: .seconds(1)) {
            ran += 1
            _ = self.scheduler.schedule(.retryTransaction, after: .seconds(1)) { ran += 1 }
        }
        #expect(scheduler.runTimer(named: "all"))
        #expect(ran == 2)
        #expect(scheduler.pending.isEmpty)
    }

    @Test func cancelledTimersNeverRun() {
        var ran = false
        let timer = scheduler.schedule(.listenStreamIdle, after: .seconds(1)) { ran = true }
        timer.cancel()
        #expect(!scheduler.isPending(.listenStreamIdle))
        #expect(!scheduler.runTimer(named: "listen_stream_idle"))
        scheduler.advance(by: .seconds(5))
        #expect(!ran)
    }

    @Test func unknownTimerNamesAreRefused() {
        #expect(!scheduler.runTimer(named: "client_metadata_refresh"))
        #expect(TimerID(rawValue: "write_stream_connection_backoff") == .writeStreamConnectionBackoff)
    }
}

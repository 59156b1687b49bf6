import DocTestSupport
import DocTestTraits
import Testing
@testable import DocCache
import DocModel

@Suite("Online state tracker", .cpuBound)
struct OnlineStateTrackerTests {
    final class Recorder {
        var states: [OnlineState] = []
        var logs: [(RemoteLogger.Level, String)] = []
        var warnings: [String] { logs.filter { $0.0 == .warning }.map(\.1) }
    }

    let scheduler = ManualScheduler()
    let recorder = Recorder()
    let tracker: OnlineStateTracker

    init() {
        let recorder = self.recorder
        tracker = OnlineStateTracker(
            scheduler: scheduler, logger: RemoteLogger { recorder.logs.append(($0, $1)) },
            onChange: { recorder.states.append($0) })
    }

    let unavailable = DocError(.unavailable, "connection refused")

    @Test func reportsOnlyChanges() {
        #expect(tracker.state == .unknown)
        tracker.updateState(.unknown)
        tracker.updateState(.online)
        tracker.updateState(.online)
        tracker.updateState(.offline)
        #expect(recorder.states == [.online, .offline])
        #expect(tracker.state == .offline)
    }

    @Test func timeoutWhileUnknownGoesOffline() {
        tracker.handleWatchStreamStart()
        #expect(scheduler.delay(of: .onlineStateTimeout) == .seconds(10))
        #expect(recorder.states.isEmpty)

        #expect(scheduler.runTimer(named: "online_state_timeout"))
        #expect(recorder.states == [.offline])
        #expect(tracker.lastOfflineReason?.contains("did not respond") == true)
        #expect(recorder.warnings.count == 1)
    }

    @Test func firstMessageCancelsTheTimeout() {
        tracker.handleWatchStreamStart()
        tracker.updateState(.online)
        #expect(!scheduler.isPending(.onlineStateTimeout))
        scheduler.runAll()
        #expect(recorder.states == [.online])
    }

    @Test func oneFailureWhileUnknownGoesOffline() {
        tracker.handleWatchStreamStart()
        tracker.handleWatchStreamFailure(unavailable)
        #expect(recorder.states == [.offline])
        #expect(!scheduler.isPending(.onlineStateTimeout), "the timeout is no longer needed")
        #expect(tracker.lastOfflineReason?.contains("connection refused") == true)
    }

    @Test func restartsAfterFailuresKeepTheOfflineState() {
        tracker.handleWatchStreamStart()
        tracker.handleWatchStreamFailure(unavailable)
        // The stream is retried: while failures are being counted it does not go back to
        // unknown, nor re-arm the timeout.
        tracker.handleWatchStreamStart()
        #expect(tracker.state == .offline)
        #expect(!scheduler.isPending(.onlineStateTimeout))
        tracker.handleWatchStreamFailure(unavailable)
        #expect(recorder.states == [.offline])
    }

    @Test func failureWhileOnlineDropsToUnknownAndReArms() {
        tracker.handleWatchStreamStart()
        tracker.updateState(.online)
        tracker.handleWatchStreamFailure(unavailable)
        #expect(tracker.state == .unknown)

        tracker.handleWatchStreamStart()
        #expect(scheduler.isPending(.onlineStateTimeout))
        tracker.handleWatchStreamFailure(unavailable)
        #expect(recorder.states == [.online, .unknown, .offline])
    }

    @Test func explicitOfflineCancelsTheTimeoutAndFailures() {
        tracker.handleWatchStreamStart()
        tracker.updateState(.offline)
        #expect(!scheduler.isPending(.onlineStateTimeout))
        #expect(tracker.lastOfflineReason == nil, "disabling the network is not a failure")
        // Counted failures were forgotten: a new start goes to unknown again.
        tracker.handleWatchStreamStart()
        #expect(tracker.state == .unknown)
        #expect(recorder.states == [.offline, .unknown])
    }

    @Test func warnsOnlyAboutTheFirstOfflineReason() {
        tracker.handleWatchStreamStart()
        tracker.handleWatchStreamFailure(unavailable)
        tracker.updateState(.unknown)
        tracker.handleWatchStreamStart()
        scheduler.runAll()
        #expect(recorder.states == [.offline, .unknown, .offline])
        #expect(recorder.warnings.count == 1)
        #expect(recorder.logs.filter { $0.0 == .debug }.count == 1)
    }

    @Test func noWarningOnceTheBackendWasReached() {
        tracker.handleWatchStreamStart()
        tracker.updateState(.online)
        tracker.handleWatchStreamFailure(unavailable)
        tracker.handleWatchStreamStart()
        tracker.handleWatchStreamFailure(unavailable)
        #expect(tracker.state == .offline)
        #expect(recorder.warnings.isEmpty)
    }
}

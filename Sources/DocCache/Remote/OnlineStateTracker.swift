package import DocModel

/// Decides the client's ``OnlineState`` from what happens to the watch stream, as Firestore's
/// `OnlineStateTracker` does.
///
/// - While the state is `unknown`, the client is declared `offline` after the watch stream
///   fails once, or when the stream has not produced a message within
///   ``onlineStateTimeout`` of being started (so listeners fall back to the cache instead of
///   waiting for a backend that may never answer).
/// - The remote store declares `online` on the first watch message, and sets the state
///   explicitly when the network is enabled, disabled or the stream is no longer needed.
/// - A failure while `online` drops back to `unknown`; the next stream start re-arms the
///   heuristics.
///
/// Only changes are reported to `onChange`. The first time the client goes offline before
/// ever having been online, the reason is logged as a warning; later reasons are debug
/// messages, and none are warned about once the client has been online.
package final class OnlineStateTracker {
    /// How long the watch stream may take to produce a first message before the client is
    /// considered offline.
    package static let onlineStateTimeout: Duration = .seconds(10)
    /// How many watch stream failures, while the state is unknown, make the client offline.
    package static let maxWatchStreamFailures = 1

    /// The current state.
    package private(set) var state: OnlineState = .unknown
    /// Why the client last went offline on its own (not by disabling the network), if it did.
    package private(set) var lastOfflineReason: String?

    private let scheduler: any Scheduler
    private let logger: RemoteLogger
    private let onChange: (OnlineState) -> Void
    private var watchStreamFailures = 0
    private var timeoutTimer: (any ScheduledTimer)?
    private var shouldWarnClientIsOffline = true

    /// Creates a tracker in state `unknown`; `onChange` hears every later change of state.
    package init(scheduler: any Scheduler, logger: RemoteLogger = .discarding, onChange: @escaping (OnlineState) -> Void) {
        self.scheduler = scheduler
        self.logger = logger
        self.onChange = onChange
    }

    /// The watch stream is being started (or restarted). Unless failures are already being
    /// counted, goes back to `unknown` and starts the ``onlineStateTimeout`` timer.
    package func handleWatchStreamStart() {
        guard watchStreamFailures == 0 else { return }
        setAndBroadcast(.unknown)
        clearTimeoutTimer()
        timeoutTimer = scheduler.schedule(.onlineStateTimeout, after: Self.onlineStateTimeout) { [weak self] in
            guard let self else { return }
            self.timeoutTimer = nil
            self.logOffline(reason: "the backend did not respond within \(Self.onlineStateTimeout).")
            self.setAndBroadcast(.offline)
        }
    }

    /// The watch stream failed. From `online` this drops to `unknown`; otherwise it counts
    /// toward ``maxWatchStreamFailures`` and may make the client `offline`.
    package func handleWatchStreamFailure(_ error: DocError) {
        if state == .online {
            setAndBroadcast(.unknown)
            return
        }
        watchStreamFailures += 1
        if watchStreamFailures >= Self.maxWatchStreamFailures {
            clearTimeoutTimer()
            logOffline(reason: "the connection failed \(watchStreamFailures) time(s); most recent error: \(error).")
            setAndBroadcast(.offline)
        }
    }

    /// Sets the state explicitly (a watch message arrived, the network was enabled or
    /// disabled, …): cancels the timeout and forgets counted failures.
    package func updateState(_ newState: OnlineState) {
        clearTimeoutTimer()
        watchStreamFailures = 0
        if newState == .online {
            // The backend has been reached once: later offline periods are normal operation,
            // not a setup problem worth a warning.
            shouldWarnClientIsOffline = false
        }
        setAndBroadcast(newState)
    }

    private func setAndBroadcast(_ newState: OnlineState) {
        guard newState != state else { return }
        state = newState
        onChange(newState)
    }

    private func clearTimeoutTimer() {
        timeoutTimer?.cancel()
        timeoutTimer = nil
    }

    private func logOffline(reason: String) {
        lastOfflineReason = reason
        let message = "Could not reach the backend: \(reason) The client works offline until it can connect."
        if shouldWarnClientIsOffline {
            logger.warning(message)
            shouldWarnClientIsOffline = false
        } else {
            logger.debug(message)
        }
    }
}

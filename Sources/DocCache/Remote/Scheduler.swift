/// The named timers of the client, as Firestore's `TimerId`s.
///
/// Every delayed operation of the client runs under one of these names, so tests (and the
/// spec-test driver's `runTimer` step) can fire a specific timer early instead of waiting. The
/// raw values are the names the spec tests use (`"online_state_timeout"`, …).
package enum TimerID: String, CaseIterable, Sendable, Hashable {
    /// Closes the watch stream after a minute without listen targets.
    case listenStreamIdle = "listen_stream_idle"
    /// Delays a restart of the watch stream after it failed.
    case listenStreamConnectionBackoff = "listen_stream_connection_backoff"
    /// Closes the write stream after a minute without pending writes.
    case writeStreamIdle = "write_stream_idle"
    /// Delays a restart of the write stream after it failed.
    case writeStreamConnectionBackoff = "write_stream_connection_backoff"
    /// Gives up waiting for the watch stream and reports the client offline (10 s).
    case onlineStateTimeout = "online_state_timeout"
    /// Runs LRU garbage collection of the local cache.
    case garbageCollection = "garbage_collection"
    /// Delays a retry of a failed transaction.
    case retryTransaction = "retry_transaction"
    /// Delays a retry of an attachment upload after a transient failure.
    case attachmentUploadBackoff = "attachment_upload_backoff"
    /// Runs the next step of a composite index's backfill left incomplete by a closed store.
    case compositeIndexBackfill = "composite_index_backfill"
    /// Indexes the overlays of recent local writes (``OverlayIndex``).
    case overlayIndexing = "overlay_indexing"
}

/// A timer handed out by a ``Scheduler``.
package protocol ScheduledTimer: AnyObject {
    /// Prevents the timer's action from running. Cancelling a timer that already ran, or was
    /// cancelled before, does nothing.
    func cancel()
}

/// Runs actions after a delay on the client's serial executor, under a ``TimerID``.
///
/// Actions run on the same isolation domain as the code that scheduled them, never
/// concurrently with it, and never before `schedule` has returned.
package protocol Scheduler: AnyObject {
    /// The scheduler's monotonic clock: the time elapsed since an arbitrary origin. A test
    /// scheduler advances it only when its timers run, which keeps delays computed from it
    /// (for example by ``ExponentialBackoff``) deterministic.
    var now: Duration { get }

    /// Runs `action` once `delay` has passed, unless the returned timer is cancelled first.
    func schedule(_ id: TimerID, after delay: Duration, _ action: @escaping () -> Void) -> any ScheduledTimer
}

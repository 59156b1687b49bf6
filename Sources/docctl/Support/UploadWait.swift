import DocCache
import DocModel
import Synchronization

/// How `docctl attach` waits for the upload of the attachment it just added, the way `set`
/// waits for its commit (``WriteReporter``): the attachment is durable in the cache already, so
/// the wait is only for the report, and it is bounded.
///
/// The wait ends with the attachment's state at that moment, when the first of these happens:
/// - the store has uploaded it, or the server refused it for good (`failed`);
/// - the server does not answer its health check and the attachment is not in an upload
///   attempt (the store keeps it for later, so the command says `local_only` at once instead
///   of waiting out the grace, as `set` answers `pending` at once when the server cannot be
///   reached; an attempt already started reports `uploading 0/N` until it fails, which it
///   does at once then, so the wait goes on until it has);
/// - no upload of the store made progress for ``grace`` (an upload that keeps sending chunks
///   keeps the command waiting, for at most ``limit``).
enum UploadWait {
    /// How long the store's uploads may go without progress.
    static let grace: Duration = WriteReporter.grace
    /// The longest wait, also while bytes keep arriving.
    static let limit: Duration = .seconds(60)

    /// Waits for `attachment`'s upload by `store` (whose server is `serverURL`) as described
    /// above; returns the attachment as it is then.
    static func settle(_ attachment: Attachment, store: DocumentStore, serverURL: String) async -> Attachment {
        guard !isSettled(attachment.state) else { return attachment }
        let id = attachment.id
        let progress = Progress(attachment)
        let race = FirstOf<Attachment>()
        // Subscribed before anything is awaited, so no change after `add` is missed.
        let updates = store.attachments.updates()
        // The health check is never cancelled: cancelling a task awaiting
        // `URLSession.data(for:)` while its request completes deadlocks on Linux
        // (swift-corelibs-foundation #5412). It ends by itself (3 s at most); a late answer is
        // ignored by the race.
        Task {
            guard !(await StatusCommand.healthy(serverURL)) else { return }
            let latest = progress.markUnreachable()
            if latest.state == .localOnly { race.finish(latest) }
        }
        let watchers = [
            Task {
                for await attachments in updates {
                    let uploading = attachments.contains { if case .uploading = $0.state { true } else { false } }
                    guard let mine = attachments.first(where: { $0.id == id }) else { continue }
                    let unreachable = progress.record(mine, uploading: uploading)
                    if isSettled(mine.state) || (unreachable && mine.state == .localOnly) {
                        race.finish(mine)
                        return
                    }
                }
            },
            Task {
                let end = ContinuousClock.now + limit
                while true {
                    let deadline = min(progress.lastProgress + grace, end)
                    guard (try? await Task.sleep(until: deadline, clock: .continuous)) != nil else { return }
                    if ContinuousClock.now >= min(progress.lastProgress + grace, end) {
                        race.finish(progress.latest)
                        return
                    }
                }
            },
        ]
        let outcome = await withCheckedContinuation { race.start($0) }
        for watcher in watchers { watcher.cancel() }
        return outcome
    }

    /// Uploaded or failed: nothing more happens to it in this run.
    static func isSettled(_ state: Attachment.State) -> Bool {
        switch state {
        case .uploaded, .failed: return true
        case .localOnly, .uploading: return false
        }
    }

    /// The attachment as last seen, when an upload of the store last made progress, and whether
    /// the server failed its health check.
    private final class Progress: Sendable {
        private let state: Mutex<(latest: Attachment, lastProgress: ContinuousClock.Instant, unreachable: Bool)>

        init(_ attachment: Attachment) { state = Mutex((attachment, .now, false)) }

        var latest: Attachment { state.withLock { $0.latest } }
        var lastProgress: ContinuousClock.Instant { state.withLock { $0.lastProgress } }

        /// Records a reading; answers whether the server was found unreachable.
        func record(_ attachment: Attachment, uploading: Bool) -> Bool {
            state.withLock {
                if uploading || attachment.state != $0.latest.state { $0.lastProgress = .now }
                $0.latest = attachment
                return $0.unreachable
            }
        }

        /// Notes that the server is unreachable; answers the attachment as last seen.
        func markUnreachable() -> Attachment {
            state.withLock {
                $0.unreachable = true
                return $0.latest
            }
        }
    }
}

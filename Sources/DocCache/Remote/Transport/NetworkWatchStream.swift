import DocModel
import DocProtocol

/// The watch stream over a ``FrameTransport``: its own connection (`hello` → `welcome`), then
/// `addTarget` / `removeTarget` out and watch messages in, mapped to ``WatchChange``s (see
/// ``DocProtocol/ServerMessage/watchChange``) for the remote store.
///
/// A fatal `error` frame or a dropped connection closes the stream with that error
/// (`unavailable` when the connection just ended); the remote store restarts it with backoff
/// and re-sends its targets with their resume tokens. ``stop()`` never calls the delegate.
///
/// Used on the client core's actor only.
package final class NetworkWatchStream: WatchStream {
    private let link: NetworkStreamLink
    private let activity: SyncActivity
    private weak var delegate: (any WatchStreamDelegate)?

    init(link: NetworkStreamLink, activity: SyncActivity, delegate: any WatchStreamDelegate) {
        self.link = link
        self.activity = activity
        self.delegate = delegate
        link.onEvent = { [weak self] event in self?.handle(event) }
    }

    package var isStarted: Bool { link.isStarted }
    package var isOpen: Bool { link.isOpen }

    package func start() { link.start() }

    package func stop() { link.stop() }

    package func markIdle() {
        link.markIdle { [weak self] in self?.delegate?.watchStreamDidClose(error: nil) }
    }

    package func watch(_ targetData: TargetData) {
        link.send(.addTarget(.init(
            targetID: targetData.targetID, target: targetData.target,
            resumeToken: targetData.resumeToken.isEmpty ? nil : targetData.resumeToken,
            expectedCount: targetData.resumeToken.isEmpty ? nil : targetData.expectedCount)))
    }

    package func unwatch(_ targetID: TargetID) {
        link.send(.removeTarget(.init(targetID: targetID)))
    }

    private func handle(_ event: StreamEvent) {
        switch event {
        case .opened:
            activity.streamOpened(.watch)
            delegate?.watchStreamDidOpen()
        case .received(let message):
            // Write messages and non-fatal errors (answers to frames this stream never sends
            // in a form the server refuses) carry nothing for the watch.
            guard let (change, snapshotVersion) = message.watchChange else { return }
            delegate?.watchStreamDidChange(change, snapshotVersion: snapshotVersion)
        case .closed(let error):
            activity.streamClosed(.watch, error, wasOpen: link.lastClose.wasOpen, wasIdle: link.lastClose.wasIdle)
            delegate?.watchStreamDidClose(error: error)
        }
    }
}

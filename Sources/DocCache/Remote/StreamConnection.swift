package import DocModel

/// The error and backoff states of one persistent stream, kept by the remote store on top of
/// the transport's stream (the part of Firestore's stream state machine that is not about
/// the wire).
///
/// After the stream closes with an error, the next ``start()`` does not connect at once but
/// waits for the ``ExponentialBackoff`` (the first retry after a healthy period waits zero
/// seconds, later ones longer). While it waits, the stream counts as started, so nobody
/// starts it a second time.
package final class StreamConnection {
    private let stream: any PersistentStream
    private let backoff: ExponentialBackoff
    /// The stream closed with an error: the next start backs off.
    private var failed = false
    /// A start is waiting for the backoff timer.
    package private(set) var isBackingOff = false

    /// Wraps `stream`; restarts after errors are delayed by `backoff`.
    package init(stream: any PersistentStream, backoff: ExponentialBackoff) {
        self.stream = stream
        self.backoff = backoff
    }

    /// The stream is connecting, open, or waiting to reconnect.
    package var isStarted: Bool { isBackingOff || stream.isStarted }
    /// The stream is connected and usable.
    package var isOpen: Bool { stream.isOpen }

    /// Starts the stream: at once, or after the backoff delay when it last closed with an error.
    package func start() {
        guard failed else {
            stream.start()
            return
        }
        failed = false
        isBackingOff = true
        backoff.backoffAndRun { [weak self] in
            guard let self else { return }
            self.isBackingOff = false
            self.stream.start()
        }
    }

    /// Stops the stream (or a pending restart); the next start connects without delay.
    package func stop() {
        backoff.cancel()
        backoff.reset()
        isBackingOff = false
        failed = false
        stream.stop()
    }

    /// Lets the next start connect at once although the stream failed: for restarts that are
    /// not caused by the server struggling (a rejected write, new credentials).
    package func inhibitBackoff() {
        failed = false
        backoff.reset()
    }

    /// Marks the stream idle (see ``PersistentStream/markIdle()``).
    package func markIdle() {
        stream.markIdle()
    }

    /// The server answered on the stream: it is healthy, so the next failure retries quickly.
    package func streamDidReceiveResponse() {
        backoff.reset()
    }

    /// The stream closed. After an error the next start backs off, the maximum delay when the
    /// server said it is out of resources; after a clean close it does not.
    package func streamDidClose(error: DocError?) {
        isBackingOff = false
        guard let error else {
            failed = false
            backoff.reset()
            return
        }
        failed = true
        if error.code == .resourceExhausted {
            backoff.resetToMax()
        }
    }
}

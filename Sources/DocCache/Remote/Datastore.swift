package import DocModel

/// The seam between the sync engine and the network: it opens the two streams of the
/// protocol. The real implementation speaks WebSocket to a DocServer; tests use a fake that
/// records what the engine sends and injects what the test says the server answers.
///
/// All methods are called on the client's serial executor, and implementations call their
/// delegates back on it (an asynchronous transport hops onto it before calling).
package protocol Datastore: AnyObject {
    func makeWatchStream(delegate: any WatchStreamDelegate) -> any WatchStream
    func makeWriteStream(delegate: any WriteStreamDelegate) -> any WriteStream
}

/// Behaviour shared by both streams: start, open, stop, idle.
package protocol PersistentStream: AnyObject {
    /// `start()` was called and `stop()` was not (the stream may still be connecting).
    var isStarted: Bool { get }
    /// The stream is connected and usable.
    var isOpen: Bool { get }
    /// Connects; the delegate hears `streamDidOpen` or `streamDidClose(error:)`.
    func start()
    /// Disconnects without calling the delegate.
    func stop()
    /// Nothing is being listened to / written: the stream may close itself after an idle
    /// timeout.
    func markIdle()
}

/// The watch stream: targets in, document and target changes out.
package protocol WatchStream: PersistentStream {
    /// Starts (or resumes, with the target's resume token) listening to a target.
    func watch(_ targetData: TargetData)
    /// Stops listening to a target.
    func unwatch(_ targetID: TargetID)
}

package protocol WatchStreamDelegate: AnyObject {
    func watchStreamDidOpen()
    /// A change, and the global snapshot version when the server sent one with it (`none`
    /// when the message carries no global snapshot).
    func watchStreamDidChange(_ change: WatchChange, snapshotVersion: SnapshotVersion)
    /// The stream closed; `error` is nil for a clean close.
    func watchStreamDidClose(error: DocError?)
}

/// The write stream: mutation batches in, commit results out, in order.
package protocol WriteStream: PersistentStream {
    /// The handshake has completed: writes may be sent.
    var isHandshakeComplete: Bool { get }
    /// The token of the last acknowledged write, sent with the handshake and every write.
    var lastStreamToken: ResumeToken { get set }
    /// Sends the handshake (client id, stream token).
    func writeHandshake()
    /// Sends a batch. The server identifies it by (client id, batch id) and never applies it
    /// twice.
    func write(_ batch: MutationBatch)
    /// Sends at once the batches ``write(_:)`` was given while the stream handles an incoming
    /// frame (they otherwise leave together when the handling ends). A stream that sends each
    /// batch as it is written does nothing; while a frame that reports a batch as not committed
    /// is handled, the stream takes no batch, so nothing is sent.
    func sendWritten()
}

extension WriteStream {
    package func sendWritten() {}
}

package protocol WriteStreamDelegate: AnyObject {
    func writeStreamDidOpen()
    func writeStreamDidCompleteHandshake()
    /// The oldest outstanding batches were committed, in order (one frame of results).
    func writeStreamDidReceiveResults(_ results: [WriteStreamResult])
    /// The oldest outstanding batch was rejected for good (`error` is not transient); the
    /// stream stays open and answers the batches after it.
    func writeStreamDidReject(batchID: BatchID, error: DocError)
    func writeStreamDidClose(error: DocError?)
}

/// The server's answer for one committed batch: its commit version and one result per mutation.
package struct WriteStreamResult: Sendable {
    package var commitVersion: SnapshotVersion
    package var results: [MutationResult]

    package init(commitVersion: SnapshotVersion, results: [MutationResult]) {
        self.commitVersion = commitVersion
        self.results = results
    }
}

extension WriteStreamDelegate {
    /// The oldest outstanding batch was committed: a frame of one result.
    package func writeStreamDidReceiveResult(commitVersion: SnapshotVersion, results: [MutationResult]) {
        writeStreamDidReceiveResults([WriteStreamResult(commitVersion: commitVersion, results: results)])
    }
}

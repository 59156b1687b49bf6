public import DocModel

/// Why an incoming frame was refused: always a `DocError` with code `invalidArgument` whose
/// message says what was wrong and whose location says where in the frame
/// (`write.mutations[2].transforms[0].op`), plus what the frame was about when that could
/// still be read, so the server can answer in kind: a refused `write` with a `writeError` for
/// the batch, a refused `addTarget` with a `removed` target change carrying the cause.
public struct FrameError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What a refused frame was about.
    public enum Subject: Sendable, Hashable {
        /// A write batch: its client and batch ids were readable.
        case batch(clientID: String, batchID: Int)
        /// A target of an `addTarget` frame: its id was readable.
        case target(Int32)
    }

    /// The error (code `invalidArgument`).
    public var error: DocError
    /// The batch or target the frame was about, if known.
    public var subject: Subject?
    /// The frame's `"type"`, if it could be read.
    public var frameType: String?

    /// Wraps `error` (an `invalidArgument` by convention; not checked) with what is known of the
    /// frame.
    public init(_ error: DocError, subject: Subject? = nil, frameType: String? = nil) {
        self.error = error
        self.subject = subject
        self.frameType = frameType
    }

    public var description: String { error.description }
}

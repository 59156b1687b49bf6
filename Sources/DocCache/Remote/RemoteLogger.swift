/// Where the remote layer reports diagnostics (going offline, resetting a stream token, …).
///
/// The client connects it to its logger; the default discards everything.
package struct RemoteLogger {
    /// How important a message is.
    package enum Level: Sendable, Hashable {
        /// Details for debugging the sync machinery.
        case debug
        /// Something a developer should know about, e.g. the backend cannot be reached.
        case warning
    }

    private let sink: (Level, String) -> Void

    /// A logger that hands every message to `sink`.
    package init(_ sink: @escaping (Level, String) -> Void) {
        self.sink = sink
    }

    /// A logger that drops every message.
    package static var discarding: RemoteLogger { RemoteLogger { _, _ in } }

    /// Reports a debugging detail.
    package func debug(_ message: @autoclosure () -> String) {
        sink(.debug, message())
    }

    /// Reports a warning.
    package func warning(_ message: @autoclosure () -> String) {
        sink(.warning, message())
    }
}

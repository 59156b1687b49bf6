public import Logging
import Synchronization

/// Every line logged through its loggers, with the logger's label and the merged metadata
/// (the logger's and the line's), for tests that check what is logged.
public final class CapturedLogs: Sendable {
    public struct Line: Sendable {
        public var label: String
        public var level: Logger.Level
        public var message: String
        public var metadata: [String: String]
    }

    private let captured = Mutex<[Line]>([])

    public init() {}

    /// The lines so far, in order.
    public var lines: [Line] { captured.withLock { $0 } }

    /// A logger with `label` (every level) whose lines are captured here.
    public func logger(_ label: String) -> Logger {
        Logger(label: label) { label in Handler(label: label, logs: self) }
    }

    struct Handler: LogHandler {
        let label: String
        let logs: CapturedLogs
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var all = metadata
            for (key, value) in event.metadata ?? [:] { all[key] = value }
            let line = Line(label: label, level: event.level, message: "\(event.message)", metadata: all.mapValues { "\($0)" })
            logs.captured.withLock { $0.append(line) }
        }
    }
}

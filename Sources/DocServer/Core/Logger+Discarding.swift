public import Logging

extension Logger {
    /// A logger that drops everything (tests, tools that print their own output).
    public static var discarding: Logger {
        Logger(label: "doccache.discarding", factory: { _ in SwiftLogNoOpLogHandler() })
    }
}

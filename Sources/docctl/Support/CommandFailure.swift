import DocModel

/// A command's failure: one clear line on stderr (plus, with `--json`, the error as a JSON
/// line on stdout) and an exit code.
struct CommandFailure: Error {
    /// The operation failed: rejected, denied, not found.
    static let failed: Int32 = 1
    /// Bad arguments.
    static let usage: Int32 = 2
    /// The server cannot be reached.
    static let unreachable: Int32 = 3

    var exitCode: Int32
    var code: String
    var message: String
    var json: Bool

    init(exitCode: Int32 = CommandFailure.failed, code: String, message: String, json: Bool = false) {
        self.exitCode = exitCode
        self.code = code
        self.message = message
        self.json = json
    }

    /// A failure from a library error: `unavailable` exits 3, `invalidArgument` exits 2,
    /// everything else 1.
    init(_ error: any Error, json: Bool = false) {
        guard let error = error as? DocError else {
            self.init(exitCode: CommandFailure.failed, code: "unknown", message: "\(error)", json: json)
            return
        }
        let exit: Int32
        switch error.code {
        case .unavailable, .deadlineExceeded: exit = CommandFailure.unreachable
        case .invalidArgument: exit = CommandFailure.usage
        default: exit = CommandFailure.failed
        }
        self.init(exitCode: exit, code: error.code.name, message: error.message + (error.location.map { " (at \($0))" } ?? ""), json: json)
    }

    func report() {
        if json {
            Output.line(JSONLine.object([
                ("type", .string("error")), ("code", .string(code)), ("message", .string(message)),
            ]))
        }
        Output.standardError("error: \(message) [\(code)]")
    }
}

import DocModel
import DocTestSupport
import Foundation

/// Runs the built `docctl` as a user would, each command its own process: HOME is a private
/// temporary directory (so `~/.docctl` — caches, the default secret — belongs to the test),
/// no `DOCCTL_*` variable leaks in from the environment, and the working directory is the
/// repository root (for `Rules/…` and `../shared/…` paths as the docs write them).
struct DocctlRunner: Sendable {
    let home: String
    /// The server every client command talks to unless it says otherwise.
    let server: String
    /// The secret file `docctl serve` verifies tokens with.
    let secret: String

    init(server: String, secret: String) throws {
        home = FileManager.default.temporaryDirectory.appendingPathComponent("docctl-home-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        self.server = server
        self.secret = secret
    }

    /// The same HOME and secret, another server URL.
    func pointing(at server: String) -> DocctlRunner { DocctlRunner(home: home, server: server, secret: secret) }

    private init(home: String, server: String, secret: String) {
        self.home = home
        self.server = server
        self.secret = secret
    }

    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("DOCCTL_") }
        environment["HOME"] = home
        return environment
    }

    /// The options that say who the user is and where the server is.
    func user(_ uid: String, tenant: String = "acme", claims: String? = nil) -> [String] {
        ["--server", server, "--secret", secret, "--tenant", tenant, "--uid", uid] + (claims.map { ["--claims", $0] } ?? [])
    }

    struct Result: Sendable, CustomStringConvertible {
        /// nil when the command did not end within its cap (it was killed).
        var status: Int32?
        var stdout: String
        var stderr: String
        /// How long the process ran (``ChildProcess/runningTime``); nil when it was killed.
        var runningTime: Duration?
        /// Whether its stdout and stderr had reached their end when it was killed (it had
        /// exited, yet was not seen to): only meaningful when `status` is nil.
        var outputHadEnded = false
        var lines: [String] { stdout.split(separator: "\n").map(String.init) }
        var description: String {
            let exit = status.map(String.init) ?? "none (killed; its output \(outputHadEnded ? "had ended" : "was still open"))"
            return "exit \(exit)\nstdout: \(stdout)\nstderr: \(stderr)"
        }
    }

    /// Runs `docctl ARGUMENTS` to its end (killed after `seconds`, a liveness cap).
    func run(_ arguments: [String], within seconds: Double = livenessCap) async throws -> Result {
        let child = try start(arguments)
        defer { child.kill() }
        let status = await child.waitForExit(within: seconds)
        return Result(status: status, stdout: child.standardOutput, stderr: child.standardError,
                      runningTime: status == nil ? nil : child.runningTime, outputHadEnded: child.outputHasEnded)
    }

    /// Starts `docctl ARGUMENTS` (a `listen`) and returns at once; the caller kills it.
    func start(_ arguments: [String]) throws -> ChildProcess {
        try ChildProcess(executable: try ServerProcess.executable("docctl"), arguments: arguments,
                         environment: environment, currentDirectory: ServerProcess.repositoryRoot)
    }

    func removeHome() { try? FileManager.default.removeItem(atPath: home) }
}

/// One JSON line of docctl's output as an object, with its keys in the order they appear
/// (the documented contracts fix the order).
struct JSONObjectLine: CustomStringConvertible {
    let text: String
    let object: [String: Any]

    init?(_ text: String) {
        guard let data = text.data(using: .utf8),
              let object = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) as? [String: Any] else {
            return nil
        }
        self.text = text
        self.object = object
    }

    subscript(key: String) -> Any? { object[key] }
    var description: String { text }

    /// The top-level keys in the order the line writes them.
    var keys: [String] { Self.topLevelKeys(text) }

    /// The keys of the outermost object, in order (a small scanner: strings, nesting depth).
    static func topLevelKeys(_ text: String) -> [String] {
        var keys: [String] = []
        var depth = 0
        var index = text.startIndex
        var expectingKey = false
        while index < text.endIndex {
            let c = text[index]
            switch c {
            case "{", "[":
                depth += 1
                if depth == 1 && c == "{" { expectingKey = true }
            case "}", "]":
                depth -= 1
            case ",":
                if depth == 1 { expectingKey = true }
            case "\"":
                var end = text.index(after: index)
                var string = ""
                while end < text.endIndex, text[end] != "\"" {
                    if text[end] == "\\" { end = text.index(after: end) }
                    string.append(text[end])
                    end = text.index(after: end)
                }
                if depth == 1 && expectingKey { keys.append(string); expectingKey = false }
                index = end
            default:
                break
            }
            index = text.index(after: index)
        }
        return keys
    }
}

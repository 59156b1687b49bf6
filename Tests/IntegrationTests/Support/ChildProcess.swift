import DocModel
import DocTestSupport
import Foundation
import Synchronization

/// A child process whose stdout and stderr are collected as they arrive (each read by its own
/// thread, so a chatty child never blocks on a full pipe), with bounded waits for lines and
/// for its exit. `kill()` (SIGKILL) is safe to call in every path, also twice.
final class ChildProcess: @unchecked Sendable {
    // `Process` is used from one test at a time; the collected output is behind a Mutex.
    private let process: Process
    private let output = CollectedOutput()
    let commandLine: String

    init(executable: URL, arguments: [String], environment: [String: String]? = nil, currentDirectory: URL? = nil,
         keepStandardInputOpen: Bool = false) throws {
        process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        commandLine = ([executable.lastPathComponent] + arguments).joined(separator: " ")
        let stdout = Pipe(), stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        // A child that watches stdin for EOF (the crash child) ends when this pipe closes;
        // others get /dev/null.
        if keepStandardInputOpen { process.standardInput = Pipe() } else { process.standardInput = FileHandle.nullDevice }
        try process.run()
        launched = ContinuousClock.now
        for (handle, isStdout) in [(stdout.fileHandleForReading, true), (stderr.fileHandleForReading, false)] {
            let output = self.output
            Thread.detachNewThread {
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    output.withLock { if isStdout { $0.stdout.append(chunk) } else { $0.stderr.append(chunk) } }
                }
                let now = ContinuousClock.now
                output.withLock {
                    if isStdout { $0.stdoutClosed = true } else { $0.stderrClosed = true }
                    if $0.stdoutClosed && $0.stderrClosed { $0.outputEnded = now }
                }
            }
        }
    }

    /// When `Process.run()` returned.
    let launched: ContinuousClock.Instant

    /// How long the child ran: from its launch until both its pipes reached their end (it
    /// exited, or closed them), nil while one is open. Taken by the threads that read the
    /// pipes, so it does not include the time a test's task waits for a thread of the
    /// cooperative pool, which other suites saturate when the whole suite runs (one `make
    /// test` saw a 20 ms call answered after 35 s).
    var runningTime: Duration? { output.withLock { $0.outputEnded.map { launched.duration(to: $0) } } }

    var processIdentifier: Int32 { process.processIdentifier }
    var isRunning: Bool { reapedStatus.withLock { $0 == nil } && process.isRunning }

    var standardOutput: String { output.withLock { String(decoding: $0.stdout, as: UTF8.self) } }
    var standardError: String { output.withLock { String(decoding: $0.stderr, as: UTF8.self) } }

    /// The complete lines written to stdout so far.
    var lines: [String] {
        let text = standardOutput
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines.removeLast()   // the part after the last newline (empty when the output ends with one)
        return lines
    }

    /// Waits until stdout has a line at `index` (0-based) and returns it; nil when the child
    /// closed its stdout first or `seconds` passed (a liveness cap, not a timing assertion).
    func line(_ index: Int, within seconds: Double = 90) async -> String? {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            let lines = self.lines
            if index < lines.count { return lines[index] }
            if output.withLock({ $0.stdoutClosed }) { return self.lines.count > index ? self.lines[index] : nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    /// Waits for the child to exit by itself and for its output to be read; returns its exit
    /// status, or nil after `seconds` (the child is then killed).
    ///
    /// Once both pipes have ended the child has exited; `Process` may still take a while to
    /// notice (see ``awaitExit(of:within:)``), so after 5 s more the child is reaped here.
    func waitForExit(within seconds: Double = 120) async -> Int32? {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if let ended = output.withLock({ $0.outputEnded }) {
                if let status = reapedStatus.withLock({ $0 }) { return status }
                if !process.isRunning { return process.terminationStatus }
                if ended.duration(to: .now) > .seconds(5), let status = reap() { return status }
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        kill()
        return nil
    }

    /// The exit status when this object reaped the child itself (`Process` never saw it end).
    private let reapedStatus = Mutex<Int32?>(nil)

    /// `waitpid` without blocking: the child's exit status (128 + the signal when a signal
    /// ended it), or nil while it runs.
    private func reap() -> Int32? {
        var status: Int32 = 0
        guard waitpid(process.processIdentifier, &status, WNOHANG) == process.processIdentifier else { return nil }
        // WIFEXITED / WEXITSTATUS (macros Swift does not import).
        let code = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        reapedStatus.withLock { $0 = code }
        return code
    }

    /// Whether both of the child's pipes have reached their end (it has exited, or closed them).
    var outputHasEnded: Bool { output.withLock { $0.outputEnded != nil } }

    /// Whether it ended with a signal (SIGKILL) rather than an exit status.
    var wasKilled: Bool {
        if let status = reapedStatus.withLock({ $0 }) { return status > 128 }
        return !process.isRunning && process.terminationReason == .uncaughtSignal
    }

    /// SIGKILL, then reaps it (``awaitExit(of:within:)``). Does nothing when it already ended.
    func kill() {
        guard isRunning else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        awaitExit(of: process)
    }

    /// SIGINT (Ctrl-C), as a user ends a `docctl listen`.
    func interrupt() {
        guard isRunning else { return }
        Foundation.kill(process.processIdentifier, SIGINT)
    }
}

/// A child's stdout and stderr so far, whether each pipe reached its end, and when both had.
final class CollectedOutput: Sendable {
    struct State {
        var stdout = Data(), stderr = Data()
        var stdoutClosed = false, stderrClosed = false
        var outputEnded: ContinuousClock.Instant?
    }
    private let state = Mutex(State())
    func withLock<R>(_ body: (inout State) -> R) -> R { state.withLock { body(&$0) } }
}

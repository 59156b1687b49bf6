import DocModel
import DocTestSupport
import Foundation
import Synchronization

/// A child process whose stdout and stderr are collected as they arrive (each read by its own
/// thread, so a chatty child never blocks on a full pipe), with bounded waits for lines and
/// for its exit. `kill()` (SIGKILL) is safe to call in every path, also twice.
///
/// Started with ``SpawnedProcess`` (posix_spawn, a waiter thread per child), not Foundation's
/// `Process`, which learns of an exit from a Dispatch worker that a saturated run may not
/// give it for minutes.
final class ChildProcess: Sendable {
    private let process: SpawnedProcess
    private let output = CollectedOutput()
    /// The parent's end of the child's stdin when it is kept open (the crash children end
    /// when it closes); closed by ``kill()`` and when this object goes away.
    private let standardInput: Mutex<Int32>

    init(executable: URL, arguments: [String], environment: [String: String]? = nil, currentDirectory: URL? = nil,
         keepStandardInputOpen: Bool = false) throws {
        // A child that watches stdin for EOF (the crash child) ends when this pipe closes;
        // others get /dev/null.
        process = try SpawnedProcess(executable: executable.path, arguments: arguments, environment: environment,
                                     currentDirectory: currentDirectory?.path,
                                     standardInput: keepStandardInputOpen ? .pipe : .null)
        standardInput = Mutex(process.standardInput)
        for (fd, isStdout) in [(process.standardOutput, true), (process.standardError, false)] {
            let output = self.output
            Thread.detachNewThread {
                readChunks(of: fd) { chunk in
                    output.withLock { if isStdout { $0.stdout.append(contentsOf: chunk) } else { $0.stderr.append(contentsOf: chunk) } }
                    return true
                }
                close(fd)
                output.withLock { if isStdout { $0.stdoutClosed = true } else { $0.stderrClosed = true } }
            }
        }
    }

    deinit { closeStandardInput() }

    /// How long the child ran, from its launch to its exit; nil while it runs. Taken by
    /// ``SpawnedProcess``'s waiter thread, so it does not include the time a test's task waits
    /// for a thread of the cooperative pool, which other suites saturate when the whole suite
    /// runs (one `make test` saw a 20 ms call answered after 35 s).
    var runningTime: Duration? { process.runningTime }

    var isRunning: Bool { process.isRunning }

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
    ///
    /// The output is looked at once more after the cap: in a saturated run this task may get
    /// no thread for longer than the cap while the child prints its line in time (CI failed
    /// so, with a 90 s cap, on a `docctl serve` whose log showed it ready).
    func line(_ index: Int, within seconds: Double = livenessCap) async -> String? {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while true {
            let closed = output.withLock { $0.stdoutClosed }
            let lines = self.lines
            if index < lines.count { return lines[index] }
            if closed || ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Waits for the child to exit by itself and for its output to be read; returns its exit
    /// status (128 + the signal when a signal ended it), or nil after `seconds` (the child is
    /// then killed).
    /// Like ``line(_:within:)``, it looks once more after the cap.
    func waitForExit(within seconds: Double = livenessCap) async -> Int32? {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while true {
            let late = ContinuousClock.now >= deadline
            if let status = process.exitStatus, outputHasEnded { return status }
            if late { break }
            try? await Task.sleep(for: .milliseconds(20))
        }
        kill()
        return nil
    }

    /// Whether both of the child's pipes have reached their end (it has exited, or closed them).
    var outputHasEnded: Bool { output.withLock { $0.stdoutClosed && $0.stderrClosed } }

    /// Whether SIGKILL ended it (not an exit status, nor another signal).
    var wasKilled: Bool { process.wasSignaled && process.exitStatus == 128 + SIGKILL }

    /// SIGKILL, then waits for it to end (at most 30 s). Does nothing when it already ended.
    func kill() {
        defer { closeStandardInput() }   // after the signal: a crash child ends cleanly on EOF
        guard process.signal(SIGKILL) else { return }
        process.waitUntilEnded()
    }

    /// SIGINT (Ctrl-C), as a user ends a `docctl listen`.
    func interrupt() {
        process.signal(SIGINT)
    }

    private func closeStandardInput() {
        standardInput.withLock { fd in
            if fd >= 0 { close(fd) }
            fd = -1
        }
    }
}

/// A child's stdout and stderr so far, and whether each pipe reached its end.
final class CollectedOutput: Sendable {
    struct State {
        var stdout = Data(), stderr = Data()
        var stdoutClosed = false, stderrClosed = false
    }
    private let state = Mutex(State())
    func withLock<R>(_ body: (inout State) -> R) -> R { state.withLock { body(&$0) } }
}

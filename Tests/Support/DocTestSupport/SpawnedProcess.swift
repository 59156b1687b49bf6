#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// A child process started with `posix_spawn`, whose exit a thread of its own waits for.
///
/// Not Foundation's `Process`: it learns of a child's exit from a Dispatch worker, which a
/// saturated test run may not give it for minutes (seen: a `docctl` that had printed all its
/// output and exited was still "running" for Foundation 120 s later, and a SIGKILLed child
/// for more than 10 s). Reaping the child behind `Process`'s back instead is unsafe: with
/// `pid_max` 32,768 a pid comes back, and `Process` would then reap another child.
///
/// Linux (glibc 2.34 or later) only: it uses glibc's `posix_spawn` file actions and
/// `siginfo_t` layout.
///
/// Here one thread per child blocks in `waitid(…, WNOWAIT)` until the child has ended,
/// records its status and the time, and only then reaps it, under the lock that
/// ``signal(_:)`` takes: a signal never reaches a pid that was reused.
public final class SpawnedProcess: Sendable {
    /// How a standard stream of the child is connected.
    public enum Stream: Sendable {
        /// `/dev/null`.
        case null
        /// This process's own.
        case inherit
        /// For standard error only: the same pipe or file as standard output.
        case standardOutput
        /// A new pipe; the parent's end is in ``standardInput``, ``standardOutput`` or
        /// ``standardError`` (the parent reads or writes it, and closes it).
        case pipe
    }

    public let pid: Int32
    /// When `posix_spawn` returned.
    public let launched: ContinuousClock.Instant
    /// The parent's ends of the pipes asked for (`-1` otherwise). Each is the caller's to close.
    public let standardInput: Int32
    public let standardOutput: Int32
    public let standardError: Int32

    private struct Exit {
        var status: Int32
        var signaled: Bool
        var at: ContinuousClock.Instant
    }
    private let exit = Mutex<Exit?>(nil)

    /// Starts `executable` with `arguments` (not including the program name), `environment`
    /// (nil: this process's), in `currentDirectory` (nil: this process's). Descriptors other
    /// than 0, 1 and 2 are not inherited.
    public init(executable: String, arguments: [String], environment: [String: String]? = nil,
                currentDirectory: String? = nil, standardInput stdin: Stream = .null,
                standardOutput stdout: Stream = .pipe, standardError stderr: Stream = .pipe) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var parentEnds: [Int32] = [-1, -1, -1]
        var childEnds: [Int32] = []
        defer { for fd in childEnds { close(fd) } }
        var spawned = false
        defer { if !spawned { for fd in parentEnds where fd >= 0 { close(fd) } } }
        for (target, stream) in [(Int32(0), stdin), (1, stdout), (2, stderr)] {
            switch stream {
            case .inherit:
                break
            case .standardOutput:
                precondition(target == 2, "only standard error can go where standard output goes")
                posix_spawn_file_actions_adddup2(&actions, 1, 2)
            case .null:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
            case .pipe:
                var fds: [Int32] = [-1, -1]
                guard pipe(&fds) == 0 else { throw SpawnError("pipe failed: errno \(errno)") }
                // Not inherited by other children (the file actions close the rest anyway).
                _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
                _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
                // stdin: the child reads fds[0]; stdout/stderr: the child writes fds[1].
                let (child, parent) = target == 0 ? (fds[0], fds[1]) : (fds[1], fds[0])
                childEnds.append(child)
                parentEnds[Int(target)] = parent
                posix_spawn_file_actions_adddup2(&actions, child, target)
            }
        }
        if let currentDirectory { try Self.addChdir(&actions, currentDirectory) }
        try Self.addCloseFrom(&actions, 3)

        let argv = [executable] + arguments
        let environment = environment ?? ProcessInfo.processInfo.environment
        let envp = environment.map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let result = withCStrings(argv) { argvPointer in
            withCStrings(envp) { envpPointer in
                posix_spawn(&pid, executable, &actions, nil, argvPointer, envpPointer)
            }
        }
        guard result == 0 else { throw SpawnError("cannot start \(executable): \(String(cString: strerror(result)))") }
        spawned = true
        self.pid = pid
        launched = ContinuousClock.now
        (standardInput, standardOutput, standardError) = (parentEnds[0], parentEnds[1], parentEnds[2])
        Thread.detachNewThread { [self] in waitForEnd() }
    }

    /// The waiter thread: until the child ends, then its status, then the reaping.
    private func waitForEnd() {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0 {
            guard errno == EINTR else {
                // Cannot happen for a child of ours; if it does, it counts as ended (status
                // -1) rather than running forever for every caller that waits.
                exit.withLock { $0 = Exit(status: -1, signaled: false, at: .now) }
                return
            }
        }
        let code = info.si_code, value = info._sifields._sigchld.si_status
        let signaled = code == CLD_KILLED || code == CLD_DUMPED
        exit.withLock { exit in
            exit = Exit(status: signaled ? 128 + value : value, signaled: signaled, at: .now)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }
    }

    /// The exit status (128 + the signal for a child a signal ended), nil while it runs.
    public var exitStatus: Int32? { exit.withLock { $0?.status } }
    public var isRunning: Bool { exit.withLock { $0 == nil } }
    /// Whether a signal ended it.
    public var wasSignaled: Bool { exit.withLock { $0?.signaled ?? false } }
    /// How long it ran, from its launch to its end; nil while it runs.
    public var runningTime: Duration? { exit.withLock { $0.map { launched.duration(to: $0.at) } } }

    /// Sends `signal` unless the child has ended. Returns whether it was sent.
    @discardableResult
    public func signal(_ signal: Int32) -> Bool {
        exit.withLock { exit in exit == nil && kill(pid, signal) == 0 }
    }

    /// SIGKILL unless it has ended, then ``waitUntilEnded(within:)``.
    public func killAndWait() {
        signal(SIGKILL)
        waitUntilEnded()
    }

    /// Waits (blocking this thread, polling every millisecond) until the child has ended, at
    /// most `limit`; returns whether it has. For the synchronous paths (`defer`) after a
    /// SIGKILL, which ends a child at once.
    @discardableResult
    public func waitUntilEnded(within limit: Duration = .seconds(30)) -> Bool {
        let deadline = ContinuousClock.now + limit
        while isRunning && ContinuousClock.now < deadline { usleep(1_000) }
        return !isRunning
    }

    // MARK: glibc's file actions that Swift does not import

    private typealias FileActionWithInt = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private typealias FileActionWithPath = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32

    private static func symbol<T>(_ name: String, as type: T.Type) throws -> T {
        guard let pointer = dlsym(nil, name) else { throw SpawnError("\(name) is not in this C library (glibc 2.34 or later has it)") }
        return unsafeBitCast(pointer, to: type)
    }

    private static func addCloseFrom(_ actions: inout posix_spawn_file_actions_t, _ lowest: Int32) throws {
        let function = try symbol("posix_spawn_file_actions_addclosefrom_np", as: FileActionWithInt.self)
        guard function(&actions, lowest) == 0 else { throw SpawnError("posix_spawn_file_actions_addclosefrom_np failed") }
    }

    private static func addChdir(_ actions: inout posix_spawn_file_actions_t, _ path: String) throws {
        let function = try symbol("posix_spawn_file_actions_addchdir_np", as: FileActionWithPath.self)
        guard function(&actions, path) == 0 else { throw SpawnError("posix_spawn_file_actions_addchdir_np failed for \(path)") }
    }
}

/// Why a ``SpawnedProcess`` could not start.
public struct SpawnError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// Calls `body` with a NULL-terminated C array of `strings`.
private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
    var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    pointers.append(nil)
    defer { for pointer in pointers { free(pointer) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

/// Reads `fd` until its end (or a read error), handing each chunk to `body`, and stops early
/// when `body` returns false. Reads a signal interrupted are tried again.
public func readChunks(of fd: Int32, bufferSize: Int = 65_536, _ body: (ArraySlice<UInt8>) -> Bool) {
    var buffer = [UInt8](repeating: 0, count: bufferSize)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        guard count > 0, body(buffer[..<count]) else { return }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs programs with `posix_spawn` and `waitpid`, blocking the calling thread only.
///
/// Not Foundation's `Process`: its `waitUntilExit` needs a Dispatch worker to deliver the
/// child's exit, and a test blocking the (2-thread, on these machines) cooperative pool while
/// it waits never gets one — a deadlock seen in practice.
enum ChildProcess {
    /// Runs `path` with `arguments` in `directory`, stdin from /dev/null, and returns its exit
    /// status and combined stdout/stderr.
    static func run(_ path: String, _ arguments: [String], in directory: String) throws -> (status: Int32, output: String) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw PostgresClusterError("pipe() failed: errno \(errno)") }
        let (readEnd, writeEnd) = (fds[0], fds[1])
        // The parent's copies must not leak into other children spawned meanwhile.
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)
        defer { close(readEnd) }

        // `cd` through the shell: `sh -c 'cd "$0" && exec "$@"' DIR PROGRAM ARGS…` (no quoting).
        let argv = ["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", directory, path] + arguments
        let pid: pid_t
        do {
            pid = try spawn(argv, stdout: writeEnd)
        } catch {
            close(writeEnd)
            throw error
        }
        close(writeEnd)

        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 8192)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
            if n > 0 {
                output.append(contentsOf: buffer[0..<n])
            } else if n == 0 || errno != EINTR {
                break
            }
        }
        let status = try wait(pid)
        return (status, String(decoding: output, as: UTF8.self))
    }

    /// Starts `argv` in the background with stdin, stdout and stderr on /dev/null; does not wait.
    static func start(_ argv: [String]) throws {
        _ = try spawn(argv, stdout: nil)
    }

    private static func spawn(_ argv: [String], stdout: Int32?) throws -> pid_t {
        #if canImport(Darwin)
        var actions: posix_spawn_file_actions_t?
        #else
        var actions = posix_spawn_file_actions_t()
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if let stdout {
            posix_spawn_file_actions_adddup2(&actions, stdout, 1)
            posix_spawn_file_actions_adddup2(&actions, stdout, 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) }
        cArgs.append(nil)
        defer { for arg in cArgs { free(arg) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, argv[0], &actions, nil, cArgs, environ)
        guard result == 0 else { throw PostgresClusterError("cannot start \(argv[0]): error \(result)") }
        return pid
    }

    private static func wait(_ pid: pid_t) throws -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw PostgresClusterError("waitpid failed: errno \(errno)") }
        }
        // WIFEXITED / WEXITSTATUS (macros Swift does not import).
        if status & 0x7F == 0 { return (status >> 8) & 0xFF }
        return 128 + (status & 0x7F)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DocTestSupport

/// Runs the PostgreSQL tools: ``SpawnedProcess`` (posix_spawn, its exit seen by a thread of
/// its own), blocking the calling thread only — ``PostgresCluster`` calls it on threads of
/// their own (``onOwnThread(_:)``).
enum ChildProcess {
    /// Runs `path` with `arguments` in `directory`, stdin from /dev/null, and returns its exit
    /// status and combined stdout/stderr.
    static func run(_ path: String, _ arguments: [String], in directory: String) throws -> (status: Int32, output: String) {
        let process: SpawnedProcess
        do {
            process = try SpawnedProcess(executable: path, arguments: arguments, currentDirectory: directory,
                                         standardOutput: .pipe, standardError: .standardOutput)
        } catch {
            throw PostgresClusterError("cannot start \(path): \(error)")
        }
        var output: [UInt8] = []
        readChunks(of: process.standardOutput) { chunk in
            output += chunk
            return true
        }
        close(process.standardOutput)
        // Its output has ended: it has exited, or is about to (initdb, pg_ctl and createdb do
        // not close their output early).
        guard process.waitUntilEnded(within: .seconds(120)) else {
            process.killAndWait()
            throw PostgresClusterError("\(path) closed its output but had not exited 120 s later: killed")
        }
        return (process.exitStatus ?? -1, String(decoding: output, as: UTF8.self))
    }

    /// Starts `argv` in the background with stdin, stdout and stderr on /dev/null; does not wait.
    static func start(_ argv: [String]) throws {
        _ = try SpawnedProcess(executable: argv[0], arguments: Array(argv.dropFirst()),
                               standardOutput: .null, standardError: .null)
    }
}

import DocTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `leveldb-crash-child` process (Tests/Support/LevelDBCrashChild), run by the durability
/// tests: started with a pipe on its standard output (read line by line with a deadline, off
/// the cooperative pool) and one on its standard input (held open: the child exits if it sees
/// end-of-file).
final class CrashChild {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Started with ``SpawnedProcess``: its exit is seen by a thread of its own, not by
    /// Foundation's `Process`, which a saturated run may not tell for a long time.
    let process: SpawnedProcess
    private var buffer: [UInt8] = []
    private var reachedEnd = false

    /// Where the test binary's sibling `leveldb-crash-child` is: SwiftPM builds it into the
    /// same products directory because the test target depends on it.
    static func executableURL() throws -> URL {
        var directories: [URL] = []
        if let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            directories.append(URL(fileURLWithPath: executable).deletingLastPathComponent())
        }
        if let first = CommandLine.arguments.first {
            directories.append(URL(fileURLWithPath: first).deletingLastPathComponent())
        }
        directories.append(Bundle.main.bundleURL)
        directories.append(Bundle.main.bundleURL.deletingLastPathComponent())
        for directory in directories {
            let candidate = directory.appendingPathComponent("leveldb-crash-child")
            if FileManager.default.isExecutableFile(atPath: candidate.path) {
                return candidate
            }
        }
        throw Failure(
            description: "leveldb-crash-child not found next to the test binary (looked in "
                + directories.map(\.path).joined(separator: ", ")
                + "); build it with `swift build --product leveldb-crash-child` or run `swift test`")
    }

    init(arguments: [String]) throws {
        process = try SpawnedProcess(executable: try Self.executableURL().path, arguments: arguments,
                                     standardInput: .pipe, standardOutput: .pipe, standardError: .inherit)
    }

    deinit {
        killAndWait()
        close(process.standardInput)
        close(process.standardOutput)
    }

    /// The next line of the child's standard output, or `nil` at end-of-file.
    ///
    /// Waiting for output runs on a thread of its own (``onOwnThread(_:)``): the child writes
    /// and syncs for seconds, and a thread of the cooperative pool (two on these machines)
    /// blocked in `poll` that long stalls every other test in the process.
    /// - Throws: if no full line arrives before `deadline`.
    func readLine(before deadline: ContinuousClock.Instant) async throws -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            if reachedEnd {
                if buffer.isEmpty { return nil }
                defer { buffer.removeAll() }
                return String(decoding: buffer, as: UTF8.self)
            }
            let descriptor = process.standardOutput
            let chunk = try await onOwnThread { try Self.nextChunk(of: descriptor, before: deadline) }
            if chunk.isEmpty {
                reachedEnd = true
            } else {
                buffer.append(contentsOf: chunk)
            }
        }
    }

    /// Waits until `descriptor` can be read and reads what is there (empty at end-of-file).
    /// Blocks its thread.
    /// - Throws: if nothing arrives before `deadline`.
    private static func nextChunk(of descriptor: Int32, before deadline: ContinuousClock.Instant) throws -> [UInt8] {
        while true {
            let remaining = deadline - .now
            guard remaining > .zero else {
                throw Failure(description: "timed out waiting for output from leveldb-crash-child")
            }
            let milliseconds = Int32(clamping: remaining.components.seconds * 1000 + 1)
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, milliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                throw Failure(description: "poll failed: errno \(errno)")
            }
            if ready == 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw Failure(description: "read failed: errno \(errno)")
            }
            return Array(chunk[..<count])
        }
    }

    /// Kills the child with SIGKILL (unless it has ended) and waits for it to end.
    func killAndWait() {
        process.killAndWait()
    }
}

/// What the child reported: the value of each written key, and the keys it deleted since.
struct ReportedWrites {
    var values: [String: String] = [:]
    var deleted: Set<String> = []
    var writeCount = 0

    /// Records a `written <key> <value>` or `deleted <key>` line; `false` for any other line.
    mutating func record(_ line: String) -> Bool {
        let parts = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        switch parts.first {
        case "written" where parts.count == 3:
            values[parts[1]] = parts[2]
            deleted.remove(parts[1])
            writeCount += 1
            return true
        case "deleted" where parts.count == 2:
            values[parts[1]] = nil
            deleted.insert(parts[1])
            return true
        default:
            return false
        }
    }
}

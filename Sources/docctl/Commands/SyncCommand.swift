import ArgumentParser
import DocCache
import DocModel
import Synchronization

/// `docctl sync`: push the write queue and wait until it is empty.
struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Push every queued write to the server and wait until the queue is empty.",
        discussion: """
            Example:
              docctl sync --timeout 30 --tenant acme --uid alice

            Exit status 0 when the queue is empty, 1 when writes were rejected (listed, and
            removed from the queue), 3 when the server cannot be reached (or the queue is not
            empty) before the timeout; the writes then stay queued.
            """
    )

    @Option(help: "Seconds to wait (default 30).")
    var timeout: Int = 30
    @OptionGroup var client: ClientOptions

    func validate() throws {
        if timeout < 1 { throw ValidationError("--timeout must be at least 1") }
    }

    func run() async throws {
        try await ClientSession.with(client) { session in
            let store = session.store
            let rejected = RejectedWrites()
            let errors = store.writeErrors()
            let collecting = Task { for await error in errors { rejected.add(error) } }
            let before = await store.pendingWriteCount
            let drained = await WriteReporter.race(within: .seconds(timeout)) {
                do { try await store.waitForPendingWrites(); return true } catch { return false }
            } ?? false
            let remaining = await store.pendingWriteCount
            let lastError = await store.lastSyncError
            // A rejection is on the error stream before its batch leaves the queue; closing
            // the store ends the stream after everything it already holds, so every
            // rejection is collected, none is cut off by a race.
            await store.close()
            await collecting.value
            for error in rejected.all {
                if client.json {
                    Output.line(.object([
                        ("batchId", error.batchID.map { .int(Int64($0)) } ?? .null), ("paths", .array(error.paths.map { .string($0) })),
                        ("status", .string("rejected")),
                        ("error", Rendering.error(error.error)),
                    ]))
                } else {
                    Output.line("rejected: batch \(error.batchID.map(String.init) ?? "?") \(error.paths.joined(separator: ", ")): \(error.error)")
                }
            }
            if drained && remaining == 0 {
                if !client.json { Output.line("synced: \(before) batch\(before == 1 ? "" : "es") sent, \(rejected.all.count) rejected") }
                if !rejected.all.isEmpty { throw ExitCode(CommandFailure.failed) }
                return
            }
            throw CommandFailure(exitCode: CommandFailure.unreachable, code: "unavailable",
                message: "\(remaining) write batch\(remaining == 1 ? "" : "es") still queued after \(timeout) s"
                    + (lastError.map { ": \($0.message)" } ?? ""), json: client.json)
        }
    }
}

/// Rejections seen during a sync.
final class RejectedWrites: Sendable {
    private let errors = Mutex<[WriteError]>([])
    func add(_ error: WriteError) { errors.withLock { $0.append(error) } }
    var all: [WriteError] { errors.withLock { $0 } }
}

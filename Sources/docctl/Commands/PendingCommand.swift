import ArgumentParser
import DocCache
import DocModel

/// `docctl pending`: the local write queue.
struct PendingCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pending",
        abstract: "Show the local write queue, or revert a pending batch.",
        discussion: """
            Examples:
              docctl pending --tenant acme --uid alice
              docctl pending revert 3 --tenant acme --uid alice
            """,
        subcommands: [List.self, Revert.self],
        defaultSubcommand: List.self
    )

    /// `docctl pending [list]`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List the writes not yet committed by the server (oldest first).",
            discussion: """
                Example:
                  docctl pending --tenant acme --uid alice --json
                  {"batchId":3,"paths":["rooms/r1"],"kinds":["set"],"localTime":"2026-11-22T09:00:00.000000Z","state":"waiting","waitReason":"connectionFailed","attempts":1,"lastAttemptAt":"2026-11-22T09:01:00.000000Z","lastError":{"code":"unavailable","message":"…"}}
                """
        )

        @OptionGroup var client: ClientOptions

        func run() async throws {
            try await ClientSession.with(client) { session in
                let writes = try await session.call { try await $0.pendingWrites() }
                for write in writes {
                    if client.json {
                        Output.line(PendingRendering.json(write))
                    } else {
                        Output.line(PendingRendering.human(write))
                    }
                }
                if !client.json { Output.line("\(writes.count) pending batch\(writes.count == 1 ? "" : "es")") }
            }
        }
    }

    /// `docctl pending revert BATCH_ID`.
    struct Revert: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revert",
            abstract: "Drop a pending batch and restore the local view (it is never sent).",
            discussion: """
                Example:
                  docctl pending revert 3 --tenant acme --uid alice

                Exit status 1 when no pending batch has that id.
                """
        )

        @Argument(help: "The batch id (from `docctl pending`).")
        var batchID: Int
        @OptionGroup var client: ClientOptions

        func run() async throws {
            try await ClientSession.with(client) { session in
                try await session.call { try await $0.revert(batchID) }
                Output.line(client.json ? JSONLine.object([("batchId", .int(Int64(batchID))), ("reverted", .bool(true))]).text
                                        : "batch \(batchID) reverted")
            }
        }
    }
}

enum PendingRendering {
    static func json(_ write: PendingWrite) -> JSONLine {
        .object([
            ("batchId", .int(Int64(write.batchID))),
            ("paths", .array(write.paths.map { .string($0) })),
            ("kinds", .array(write.kinds.map { .string($0.rawValue) })),
            ("localTime", .string(write.localWriteTime.rfc3339)),
            ("state", .string(stateName(write.state))),
            ("waitReason", waitReason(write.state).map { .string($0) } ?? .null),
            ("attempts", .int(Int64(write.attempts))),
            ("lastAttemptAt", write.lastAttemptAt.map { .string($0.rfc3339) } ?? .null),
            ("lastError", write.lastError.map { Rendering.error($0) } ?? .null),
        ])
    }

    static func stateName(_ state: PendingWrite.State) -> String {
        switch state {
        case .pending: return "pending"
        case .sending: return "sending"
        case .waiting: return "waiting"
        }
    }

    static func waitReason(_ state: PendingWrite.State) -> String? {
        guard case .waiting(let reason) = state else { return nil }
        switch reason {
        case .noServer: return "noServer"
        case .networkDisabled: return "networkDisabled"
        case .connectionFailed: return "connectionFailed"
        case .attachmentNotUploaded: return "attachmentNotUploaded"
        case .attachmentFailed: return "attachmentFailed"
        case .attachmentBeingChecked: return "attachmentBeingChecked"
        case .earlierBatch: return "earlierBatch"
        }
    }

    static func human(_ write: PendingWrite) -> String {
        let items = zip(write.kinds, write.paths).map { "\($0.rawValue) \($1)" }.joined(separator: ", ")
        var line = "batch \(write.batchID)  \(write.localWriteTime.rfc3339)  \(items)  \(write.state)  attempts \(write.attempts)"
        if let error = write.lastError { line += "  last error: \(error)" }
        return line
    }
}

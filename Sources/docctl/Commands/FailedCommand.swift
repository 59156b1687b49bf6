import ArgumentParser
import DocCache
import DocModel

/// `docctl failed`: the writes the server rejected, kept in the local cache
/// (docs/failed-writes.md).
struct FailedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "failed",
        abstract: "Show the writes the server rejected, and retry, show or discard one.",
        discussion: """
            Examples:
              docctl failed --tenant acme --uid alice
              docctl failed show 3 --tenant acme --uid alice
              docctl failed retry 3 --tenant acme --uid alice
              docctl failed discard 3 --tenant acme --uid alice
              docctl failed resolve 3 --keep merged '{"balance": 90, "note": "bob"}' --tenant acme --uid alice
            """,
        subcommands: [List.self, Show.self, Retry.self, Resolve.self, Discard.self],
        defaultSubcommand: List.self
    )

    /// `docctl failed [list]`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List the failed writes (oldest first).",
            discussion: """
                Example:
                  docctl failed --tenant acme --uid alice --json
                  {"id":3,"createdAt":"2026-11-22T09:00:00.000000Z","error":{"code":"notFound","message":"…"},"writes":[{"op":"update","path":"notes/n1","data":{"text":"x"}}],"conflicts":[…]}
                """
        )

        @OptionGroup var client: ClientOptions

        func run() async throws {
            try await ClientSession.with(client) { session in
                let failed = try await session.call { try await $0.failedWrites() }
                for write in failed {
                    Output.line(client.json ? FailedRendering.json(write).text : FailedRendering.human(write))
                }
                if !client.json { Output.line("\(failed.count) failed write\(failed.count == 1 ? "" : "s")") }
            }
        }
    }

    /// `docctl failed show ID`.
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Show a failed write's conflict view: each changed field, mine and theirs side by side.",
            discussion: """
                Example:
                  docctl failed show 3 --tenant acme --uid alice
                  failed write 3  rejected 2026-11-22T09:00:05.000000Z  failedPrecondition: …  update accounts/a1
                  accounts/a1  (server version 1763802000000000)
                    balance  mine 50     theirs 90
                    note     mine "bob"  theirs —

                Exit status 1 when no failed write has that id.
                """
        )

        @Argument(help: "The failed write's id (from `docctl failed`).")
        var id: Int
        @OptionGroup var client: ClientOptions

        func run() async throws {
            try await ClientSession.with(client) { session in
                let write = try await session.call { try await $0.failedWrite(id) }
                if client.json {
                    Output.line(FailedRendering.json(write))
                    return
                }
                Output.line(FailedRendering.human(write))
                for conflict in write.conflicts { Output.line(FailedRendering.human(conflict)) }
            }
        }
    }

    /// `docctl failed retry ID`.
    struct Retry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "retry",
            abstract: "Queue a failed write's writes again, as a new batch at the end of the queue.",
            discussion: """
                Example:
                  docctl failed retry 3 --tenant acme --uid alice --wait
                  failed write 3 retried as batch 7
                  notes/n1: committed (version 1763802000000000)

                Reports the new batch like `docctl set` (committed, pending or rejected; a
                rejection exits 1 and becomes a new failed write). Exit status 1 when no
                failed write has that id (unknown, or already retried or discarded).
                """
        )

        @Argument(help: "The failed write's id (from `docctl failed`).")
        var id: Int
        @OptionGroup var write: WriteOptions
        @OptionGroup var client: ClientOptions

        func run() async throws {
            try await ClientSession.with(client) { session in
                let failed = try await session.call { try await $0.failedWrite(id) }
                let handle = try await session.call { try await $0.retryFailedWrite(id) }
                if !client.json { Output.line("failed write \(id) retried as batch \(handle.batchID)") }
                try await WriteReporter.report(handle, path: failed.paths, options: write, client: client, store: session.store)
            }
        }
    }

    /// `docctl failed resolve ID --keep mine|theirs|merged [DATA]`.
    struct Resolve: AsyncParsableCommand {
        enum Keep: String, ExpressibleByArgument, CaseIterable {
            case mine, theirs, merged
        }

        static let configuration = CommandConfiguration(
            commandName: "resolve",
            abstract: "Resolve a failed write's conflict: keep mine, keep theirs, or write merged data.",
            discussion: """
                Example:
                  docctl failed resolve 3 --keep merged '{"balance": 90, "note": "bob"}' --tenant acme --uid alice --wait
                  failed write 3 resolved as batch 8
                  accounts/a1: committed (version 1763802000000000)

                --keep theirs writes nothing and drops the failed write (`failed write 3
                resolved: the server's version kept`). --keep mine queues the user's writes
                again and --keep merged the given data (a failed write of one document only),
                each conditioned on the server version `docctl failed show` shows: if the
                server's document changed since, the resolution is rejected (exit 1 with
                --wait) and becomes a new failed write instead of overwriting the change.
                Exit status 1 when no failed write has that id, or when the server's version
                is not known on this device (read the document first: `docctl get PATH
                --source server`).
                """
        )

        @Argument(help: "The failed write's id (from `docctl failed`).")
        var id: Int
        @Option(help: "What to keep: mine, theirs or merged.")
        var keep: Keep
        @Argument(help: "With --keep merged: the document's data as a JSON object.")
        var data: String?
        @OptionGroup var write: WriteOptions
        @OptionGroup var client: ClientOptions

        func validate() throws {
            if (keep == .merged) != (data != nil) {
                throw ValidationError(keep == .merged ? "--keep merged needs the merged data as a JSON object"
                                                      : "data is given only with --keep merged")
            }
        }

        func run() async throws {
            let resolution: FailedWrite.Resolution
            switch keep {
            case .mine: resolution = .mine
            case .theirs: resolution = .theirs
            case .merged: resolution = .merged(try DocumentJSON.fields(data ?? "", json: client.json))
            }
            try await ClientSession.with(client) { session in
                let failed = try await session.call { try await $0.failedWrite(id) }
                let handle = try await session.call { try await $0.resolveFailedWrite(failed, keeping: resolution) }
                guard let handle else {
                    Output.line(client.json ? JSONLine.object([("id", .int(Int64(id))), ("resolved", .bool(true)), ("batchId", .null)]).text
                                            : "failed write \(id) resolved: the server's version kept")
                    return
                }
                if !client.json { Output.line("failed write \(id) resolved as batch \(handle.batchID)") }
                try await WriteReporter.report(handle, path: failed.paths, options: write, client: client, store: session.store)
            }
        }
    }

    /// `docctl failed discard ID`.
    struct Discard: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "discard",
            abstract: "Drop a failed write for good.",
            discussion: """
                Example:
                  docctl failed discard 3 --tenant acme --uid alice

                Exit status 1 when no failed write has that id (unknown, or already retried or
                discarded).
                """
        )

        @Argument(help: "The failed write's id (from `docctl failed`).")
        var id: Int
        @OptionGroup var client: ClientOptions

        func run() async throws {
            try await ClientSession.with(client) { session in
                try await session.call { try await $0.discardFailedWrite(id) }
                Output.line(client.json ? JSONLine.object([("id", .int(Int64(id))), ("discarded", .bool(true))]).text
                                        : "failed write \(id) discarded")
            }
        }
    }
}

enum FailedRendering {
    static func json(_ failed: FailedWrite) -> JSONLine {
        .object([
            ("id", .int(Int64(failed.id))),
            ("createdAt", .string(failed.localWriteTime.rfc3339)),
            ("error", Rendering.error(failed.error)),
            ("writes", .array(failed.writes.map { write in
                .object([("op", .string(write.kind.rawValue)), ("path", .string(write.path)), ("data", data(write.data))])
            })),
            ("conflicts", .array(failed.conflicts.map { conflict in
                .object([
                    ("path", .string(conflict.path)),
                    ("mine", data(conflict.mine)),
                    ("theirs", data(conflict.theirs)),
                    ("theirsVersion", conflict.theirsVersion.map { .int($0.microseconds) } ?? .null),
                    ("serverVersionKnown", .bool(conflict.serverVersionKnown)),
                    ("changedFields", .array(conflict.changedFields.map { change in
                        .object([("field", .string(change.field)), ("mine", change.mine.map(JSONLine.value) ?? .null),
                                 ("theirs", change.theirs.map(JSONLine.value) ?? .null)])
                    })),
                ])
            })),
        ])
    }

    private static func data(_ fields: [String: Value]?) -> JSONLine {
        fields.map { .value(.map($0)) } ?? .null
    }

    /// `failed write 3  rejected TIME  CODE: MESSAGE (at …)  update notes/n1, …`.
    static func human(_ failed: FailedWrite) -> String {
        let items = failed.writes.map { "\($0.kind.rawValue) \($0.path)" }.joined(separator: ", ")
        return "failed write \(failed.id)  rejected \(failed.rejectedAt.rfc3339)  \(failed.error)  \(items)"
    }

    /// A document of the conflict view: its path and server version, then a line per changed
    /// field, `FIELD  mine VALUE  theirs VALUE` (`—`: absent), in aligned columns.
    static func human(_ conflict: FailedWrite.Conflict) -> String {
        let server: String
        if !conflict.serverVersionKnown {
            server = "server version not known on this device"
        } else if let version = conflict.theirsVersion {
            server = "server version \(version.microseconds)"
        } else {
            server = "no document on the server"
        }
        var lines = ["\(conflict.path)  (\(server))"]
        let rows = conflict.changedFields.map { change in
            (change.field, change.mine.map(\.jsonString) ?? "—", change.theirs.map(\.jsonString) ?? "—")
        }
        let fieldWidth = rows.map(\.0.count).max() ?? 0
        let mineWidth = rows.map(\.1.count).max() ?? 0
        for (field, mine, theirs) in rows {
            lines.append("  \(pad(field, fieldWidth))  mine \(pad(mine, mineWidth))  theirs \(theirs)")
        }
        if rows.isEmpty { lines.append("  (no field differs)") }
        return lines.joined(separator: "\n")
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }
}

extension FailedWrite {
    /// The documents it writes, as the write report names them (`a/1, b/2`).
    var paths: String { conflicts.map(\.path).joined(separator: ", ") }
}

import ArgumentParser
import DocCache
import DocModel

/// `docctl set PATH JSON [--merge]`.
struct SetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Write a whole document (or merge fields into it with --merge).",
        discussion: """
            Example:
              docctl set rooms/r1 '{"name": "Lobby", "opened": {"$timestamp": "2026-11-22T09:00:00Z"}}' --tenant acme --uid alice

            The write is accepted by the local cache first (durable), then sent. Prints whether
            it is committed or still pending; --wait waits for the commit (exit 1 if rejected).
            """
    )

    @Argument(help: "The document path.")
    var path: String
    @Argument(help: "The data as a JSON object (typed escapes: $timestamp, $bytes, $ref, $geo).")
    var data: String
    @Flag(help: "Merge the given fields into the document instead of replacing it.")
    var merge = false
    @OptionGroup var write: WriteOptions
    @OptionGroup var client: ClientOptions

    func run() async throws {
        let fields = try DocumentJSON.fields(data, json: client.json)
        try await WriteReporter.perform(path: path, write: write, client: client) { try await $0.setData(fields, merge: merge) }
    }
}

/// `docctl update PATH JSON`.
struct UpdateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Update fields of an existing document (keys are field paths).",
        discussion: """
            Example:
              docctl update rooms/r1 '{"name": "Main hall", "address.city": "Oslo"}' --tenant acme --uid alice --wait

            Fails (rejected, exit 1 with --wait) when the document does not exist on the server.
            """
    )

    @Argument(help: "The document path.")
    var path: String
    @Argument(help: "Field paths and values as a JSON object.")
    var data: String
    @OptionGroup var write: WriteOptions
    @OptionGroup var client: ClientOptions

    func run() async throws {
        let fields = try DocumentJSON.fields(data, json: client.json)
        try await WriteReporter.perform(path: path, write: write, client: client) { try await $0.updateData(fields) }
    }
}

/// `docctl delete PATH`: a tombstone.
struct DeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete a document (a tombstone: deletedAt and updatedAt are set by the server).",
        discussion: """
            Example:
              docctl delete rooms/r1 --tenant acme --uid alice

            Listeners see the document removed; `docctl get` reports it deleted. `docctl purge`
            removes a document for good.
            """
    )

    @Argument(help: "The document path.")
    var path: String
    @OptionGroup var write: WriteOptions
    @OptionGroup var client: ClientOptions

    func run() async throws {
        try await WriteReporter.perform(path: path, write: write, client: client) { try await $0.delete() }
    }
}

/// `docctl purge PATH`: a hard delete.
struct PurgeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge",
        abstract: "Remove a document for good (no tombstone; rules decide who may).",
        discussion: """
            Example:
              docctl purge rooms/r1 --tenant acme --uid admin --wait
            """
    )

    @Argument(help: "The document path.")
    var path: String
    @OptionGroup var write: WriteOptions
    @OptionGroup var client: ClientOptions

    func run() async throws {
        try await WriteReporter.perform(path: path, write: write, client: client) { try await $0.purge() }
    }
}

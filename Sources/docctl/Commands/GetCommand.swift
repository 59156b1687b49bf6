import ArgumentParser
import DocCache
import DocModel

/// `docctl get PATH`.
struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Read one document.",
        discussion: """
            Example:
              docctl get rooms/r1 --tenant acme --uid alice --json
              {"path":"rooms/r1","exists":true,"deleted":false,"version":1732262400000000,
               "hasPendingWrites":false,"fromCache":false,"data":{"name":"Lobby"}}

            --source cache answers from the local cache only; server asks the server (exit 3
            when it cannot be reached); default asks the server and falls back to the cache.
            Exit status 1 when the document does not exist.
            """
    )

    enum SourceArgument: String, ExpressibleByArgument, CaseIterable {
        case `default`, cache, server
        var source: Source {
            switch self {
            case .default: return .default
            case .cache: return .cache
            case .server: return .server
            }
        }
    }

    @Argument(help: "The document path, e.g. rooms/r1.")
    var path: String
    @Option(help: "default, cache or server.")
    var source: SourceArgument = .default
    @OptionGroup var client: ClientOptions

    func run() async throws {
        try await ClientSession.with(client) { session in
            let snapshot: DocumentSnapshot
            do {
                let document = try session.store.document(path)
                if source == .default {
                    snapshot = try await ServerFirst.read(server: { () async throws(DocError) in try await document.getDocument(source: .server) },
                                                          cache: { () async throws(DocError) in try await document.getDocument(source: .cache) })
                } else {
                    snapshot = try await document.getDocument(source: source.source)
                }
            } catch {
                throw CommandFailure(error, json: client.json)
            }
            if client.json {
                Output.line(Rendering.document(snapshot))
            } else {
                Output.line(Rendering.humanDocument(snapshot))
            }
            if !snapshot.exists && !snapshot.isDeleted { throw ExitCode(CommandFailure.failed) }
        }
    }
}

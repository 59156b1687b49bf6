import ArgumentParser
import DocCache
import DocModel

/// `docctl query COLLECTION`.
struct QueryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Run a bounded query once and print its documents.",
        discussion: """
            Examples:
              docctl query rooms --where "floor >= 2" --order-by name --limit 20 --tenant acme --uid alice
              docctl query orders --where 'status == "open"' --order-by total:desc --limit 5 --json

            Asks the server; when it cannot be reached the cache answers (fromCache true).
            --limit is required (queries are bounded, like listeners). Tombstoned documents are
            left out unless --include-deleted. With --json: one line
              {"fromCache":bool,"hasPendingWrites":bool,"size":N,"documents":[{"path":…,"version":…,
               "deleted":bool,"hasPendingWrites":bool,"data":{…}}]}
            """
    )

    @Argument(help: "The collection path.")
    var collection: String
    @OptionGroup var query: QueryOptions
    @OptionGroup var client: ClientOptions

    func validate() throws {
        guard query.limit != nil else {
            throw ValidationError("--limit is required: queries are bounded (at most 1000 documents)")
        }
    }

    func run() async throws {
        try await ClientSession.with(client) { session in
            let snapshot: QuerySnapshot
            do {
                let query = try query.query(session.store.collection(collection))
                snapshot = try await ServerFirst.read(server: { () async throws(DocError) in try await query.getDocuments(source: .server) },
                                                      cache: { () async throws(DocError) in try await query.getDocuments(source: .cache) })
            } catch {
                throw CommandFailure(error, json: client.json)
            }
            if client.json {
                Output.line(.object([
                    ("fromCache", .bool(snapshot.metadata.isFromCache)),
                    ("hasPendingWrites", .bool(snapshot.metadata.hasPendingWrites)),
                    ("size", .int(Int64(snapshot.count))),
                    ("documents", .array(snapshot.documents.map { document in
                        .object([
                            ("path", .string(document.path)), ("version", Rendering.version(document)),
                            ("deleted", .bool(document.isDeleted)),
                            ("hasPendingWrites", .bool(document.metadata.hasPendingWrites)),
                            ("data", Rendering.data(document)),
                        ])
                    })),
                ]))
            } else {
                Output.line("\(snapshot.count) document\(snapshot.count == 1 ? "" : "s") · \(Rendering.markers(snapshot.metadata))")
                for document in snapshot.documents { Output.line(Rendering.humanDocument(document)) }
            }
        }
    }
}

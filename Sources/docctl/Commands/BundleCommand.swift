import ArgumentParser
import DocCache
import DocModel
import Foundation

/// `docctl bundle build` and `docctl bundle load`: data bundles in Firestore's format
/// (docs/bundles.md).
struct BundleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bundle",
        abstract: "Build a data bundle from a query on the server, or load one into the local cache.",
        discussion: """
            Examples:
              docctl bundle build --name latest-prices --query prices --order-by day:desc --limit 100 --out prices.bundle --tenant acme --uid ops
              docctl bundle load prices.bundle --tenant acme --uid alice
            """,
        subcommands: [Build.self, Load.self]
    )

    /// `docctl bundle build --name NAME --query COLLECTION [--where …] [--order-by …] --limit N [--id ID] [--out FILE]`.
    struct Build: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "build",
            abstract: "Read a bounded query from the server and write its results as a bundle with a named query.",
            discussion: """
                Example:
                  docctl bundle build --name latest-prices --query prices --order-by day:desc --limit 100 --out prices.bundle --tenant acme --uid ops
                  bundle latest-prices: 100 documents, 48213 bytes, read at 2026-11-25T12:00:00.123456Z, written to prices.bundle
                With --json (on stdout with --out, else on stderr):
                  {"id":"latest-prices","name":"latest-prices","documents":100,"bytes":48213,
                   "readTime":"2026-11-25T12:00:00.123456Z","out":"prices.bundle"}

                The query is asked of the server (a fresh private cache, so no pending write
                of this device is bundled) and the bundle holds its results as the server had
                them at one snapshot, the read time: the bundle's create time, every
                document's read time and the named query's. --id is the bundle's id (default:
                --name); a client that loaded a bundle skips another one with the same id and an
                equal or older create time. Without --out the bundle is written to stdout and
                the summary to stderr. --limit is required (queries are bounded).

                Exit status 3 when the server cannot be reached; 2 for bad arguments or an
                unusable --out; 1 when the server refuses the query.
                """
        )

        @Option(help: "The named query's name: what an app passes to store.namedQuery(_:).")
        var name: String
        @Option(name: .customLong("query"), help: ArgumentHelp("The collection path to query.", valueName: "collection"))
        var collection: String
        @Option(help: "The bundle's id (default: --name).")
        var id: String?
        @Option(help: "The file to write (replaced if it exists); stdout when absent.")
        var out: String?
        @OptionGroup var queryOptions: QueryOptions
        @OptionGroup var client: ClientOptions

        func validate() throws {
            guard queryOptions.limit != nil else {
                throw ValidationError("--limit is required: queries are bounded (at most 1000 documents)")
            }
            guard !name.isEmpty else { throw ValidationError("--name must not be empty") }
            if let id, id.isEmpty { throw ValidationError("--id must not be empty") }
        }

        func run() async throws {
            if let out { try OutputFile.checkDestination(out, json: client.json) }
            // A private cache: the user's own could hold pending writes, which are not the server's data.
            var options = client
            let privateCache = PrivateListenCache.make()
            options.cache = privateCache.path
            defer { privateCache.remove() }
            let (bytes, summary) = try await ClientSession.with(options) { session -> ([UInt8], BundleWriter) in
                do {
                    let query = try queryOptions.query(session.store.collection(collection))
                    let (snapshot, readTime) = try await session.store.core.serverSnapshot(query.query)
                    let documents = snapshot.documents.documents
                    var writer = BundleWriter(id: id ?? name, createTime: readTime)
                    try writer.add(BundleNamedQuery(name: name, query: query.query, readTime: readTime))
                    for document in documents { writer.add(document, readTime: readTime, queries: [name]) }
                    return (writer.bytes(), writer)
                } catch {
                    throw CommandFailure(error, json: client.json)
                }
            }
            let metadata = summary.metadata
            if let out {
                try BundleFiles.write(bytes, to: out, json: client.json)
            } else {
                FileHandle.standardOutput.write(Data(bytes))
            }
            let line: String
            if client.json {
                line = JSONLine.object([
                    ("id", .string(metadata.id)), ("name", .string(name)), ("documents", .int(Int64(metadata.totalDocuments))),
                    ("bytes", .int(Int64(bytes.count))), ("readTime", .string(metadata.createTime.timestamp.rfc3339)),
                    ("out", out.map { .string($0) } ?? .null),
                ]).text
            } else {
                let plural = metadata.totalDocuments == 1 ? "" : "s"
                line = "bundle \(metadata.id): \(metadata.totalDocuments) document\(plural), \(bytes.count) bytes, "
                    + "read at \(metadata.createTime.timestamp.rfc3339)" + (out.map { ", written to \($0)" } ?? "")
            }
            if out != nil { Output.line(line) } else { Output.standardError(line) }
        }
    }

    /// `docctl bundle load FILE`.
    struct Load: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "load",
            abstract: "Load a bundle into the local cache, printing its progress.",
            discussion: """
                Example:
                  docctl bundle load prices.bundle --tenant acme --uid alice
                  running 0/100 documents 0/48086 bytes
                  running 1/100 documents 611/48086 bytes
                  …
                  success 100/100 documents 48086/48086 bytes
                With --json, one line per progress update:
                  {"taskState":"running","documentsLoaded":1,"totalDocuments":100,"bytesLoaded":611,"totalBytes":48086}

                The bundle is checked in full before anything is stored, then applied in one
                transaction: documents older than the cache's copies are not stored, and a
                bundle loaded before (same id, same or newer create time) is skipped (one
                success line). No server is needed. Read the documents with
                `docctl get PATH --source cache`, or `docctl query` (the cache answers when the
                server cannot be reached).

                Exit status 2 for a file that is not a valid bundle (the error names the element
                and its byte offset; nothing is stored); 1 for a missing file.
                """
        )

        @Argument(help: "The bundle file.")
        var file: String
        @OptionGroup var client: ClientOptions

        func run() async throws {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw CommandFailure(code: "notFound", message: "no bundle file at \(file)", json: client.json)
            }
            try await ClientSession.with(client) { session in
                let task = session.store.loadBundle([UInt8](data))
                for await progress in task.progressUpdates() {
                    if client.json {
                        Output.line(.object([
                            ("taskState", .string(progress.taskState.rawValue)),
                            ("documentsLoaded", .int(Int64(progress.documentsLoaded))),
                            ("totalDocuments", .int(Int64(progress.totalDocuments))),
                            ("bytesLoaded", .int(progress.bytesLoaded)), ("totalBytes", .int(progress.totalBytes)),
                        ]))
                    } else {
                        Output.line(progress.description)
                    }
                }
                do {
                    _ = try await task.value
                } catch {
                    throw CommandFailure(error, json: client.json)
                }
            }
        }
    }
}

/// Writing a bundle file.
enum BundleFiles {
    /// Writes `bytes` under a temporary name beside `path`, then renames it into place.
    static func write(_ bytes: [UInt8], to path: String, json: Bool) throws {
        do {
            try Data(bytes).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw CommandFailure(code: "internal", message: "cannot write \(path): \(error)", json: json)
        }
    }
}

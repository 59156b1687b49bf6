import ArgumentParser
import DocCache
import DocModel
import UnixSignals

/// `docctl listen`: live changes of a document or a bounded query.
struct ListenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listen",
        abstract: "Print a snapshot, then every change, of a document or a bounded query.",
        discussion: """
            Examples:
              docctl listen rooms --order-by name --limit 50 --tenant acme --uid alice
              docctl listen rooms/r1 --json --count 3 --tenant acme --uid alice

            Human output: one block per snapshot — a header with the size and the state
            (pending writes, from cache), then `+` added, `~` modified, `-` removed documents
            with their index; `* pending` marks a document with writes not yet committed.
            With --json: one line per snapshot:
              {"type":"snapshot","fromCache":false,"hasPendingWrites":false,"size":1,
               "changes":[{"type":"added","path":"rooms/r1","oldIndex":-1,"newIndex":0,
                           "hasPendingWrites":false,"data":{"name":"Lobby"}}]}
            and errors as {"type":"error","code":"…","message":"…"}.

            A document that refers to attachments ({"$attachment": ID}) is followed
            by a line per attachment, `  attachment ID  STATE`, with its state in
            this listen's cache: local_only, uploading SENT/TOTAL, uploaded,
            failed: CODE: MESSAGE, or remote (not on this device; on the private
            cache of a listen without --cache every one is remote). With --json
            such a change has an "attachments" array after "data":
              [{"id":"…","state":"uploaded","size":1024,"sent":1024,"error":null}]

            A query needs --limit (at most the store's maxListenLimit, 1000). Runs until
            interrupted (Ctrl-C or SIGTERM: exit 0), --count snapshots or --timeout seconds; it
            keeps running across server restarts and lost connections (status lines on stderr).
            It uses a private cache for its run (unless --cache is given), removed when it ends,
            so the user's other commands are never blocked by a long listen.
            """
    )

    @Argument(help: "A document path (rooms/r1) or a collection path (rooms).")
    var path: String
    @OptionGroup var query: QueryOptions
    @Flag(help: "Also deliver snapshots whose only change is metadata (pending writes settled, cache → server).")
    var includeMetadataChanges = false
    @Option(help: "Stop after this many snapshots.")
    var count: Int?
    @Option(help: "Stop after this many seconds.")
    var timeout: Int?
    @OptionGroup var client: ClientOptions

    func validate() throws {
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        if let timeout, timeout < 1 { throw ValidationError("--timeout must be at least 1") }
        if isDocument, !query.filters.isEmpty || !query.orderBy.isEmpty || query.limit != nil {
            throw ValidationError("--where, --order-by and --limit apply to collections, not to the document \(path)")
        }
    }

    private var isDocument: Bool { path.split(separator: "/").count % 2 == 0 }

    func run() async throws {
        let isDocument = self.isDocument
        var options = client
        // Trapped before anything is created, so an early Ctrl-C still ends through the
        // cleanup below instead of killing the process.
        let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm)
        let privateCache = options.cache == nil ? PrivateListenCache.make() : nil
        if let privateCache { options.cache = privateCache.path }
        defer { privateCache?.remove() }
        let session = try await ClientSession.open(options)
        let printer = SnapshotPrinter(json: client.json)
        // Connection status lines on stderr (stdout stays one line per snapshot).
        let states = session.store.onlineStateUpdates()
        let serverURL = client.serverURL
        let statusLines = Task {
            var last: OnlineState?
            for await state in states where state != last {
                switch state {
                case .online: Output.standardError("docctl: connected to \(serverURL)")
                case .offline: Output.standardError("docctl: offline (\(serverURL) unreachable); showing the cache, retrying")
                case .unknown: break
                }
                last = state
            }
        }
        defer { statusLines.cancel() }
        let outcome: ListenOutcome = await withTaskGroup(of: ListenOutcome.self) { group in
            group.addTask {
                do {
                    var seen = 0
                    if isDocument {
                        var previous: DocumentSnapshot?
                        for try await snapshot in try session.store.document(path).snapshots(includeMetadataChanges: includeMetadataChanges) {
                            let attachments = await ReferencedAttachments.lookUp([snapshot], in: session.store)
                            printer.print(document: snapshot, previous: previous, attachments: attachments)
                            previous = snapshot
                            seen += 1
                            if let count, seen >= count { return .done }
                        }
                    } else {
                        let query = try query.query(session.store.collection(path))
                        for try await snapshot in query.snapshots(includeMetadataChanges: includeMetadataChanges) {
                            let attachments = await ReferencedAttachments.lookUp(snapshot.documentChanges.map(\.document), in: session.store)
                            printer.print(query: snapshot, first: seen == 0, attachments: attachments)
                            seen += 1
                            if let count, seen >= count { return .done }
                        }
                    }
                    return .done
                } catch let error as DocError {
                    return .failed(error)
                } catch {
                    return Task.isCancelled ? .done : .failed(DocError(.unknown, "\(error)"))
                }
            }
            if let timeout {
                group.addTask {
                    try? await Task.sleep(for: .seconds(timeout))
                    return .done
                }
            }
            // Ctrl-C (SIGINT) or SIGTERM: the documented way to end a listen; it closes the
            // store and removes the private cache like any other end.
            group.addTask {
                for await _ in signals { return .done }
                return .done
            }
            let first = await group.next() ?? .done
            group.cancelAll()
            return first
        }
        await session.close()
        if case .failed(let error) = outcome { throw CommandFailure(error, json: client.json) }
    }

    enum ListenOutcome: Sendable {
        case done
        case failed(DocError)
    }
}

/// Prints snapshots as they arrive (human blocks or JSON lines). A document that refers to
/// attachments also shows their states (``ReferencedAttachments``); other output is unchanged.
struct SnapshotPrinter: Sendable {
    let json: Bool

    func print(query snapshot: QuerySnapshot, first: Bool, attachments: ReferencedAttachments = .none) {
        if json {
            Output.line(Rendering.snapshotLine(size: snapshot.count, metadata: snapshot.metadata, changes: snapshot.documentChanges,
                                               attachments: attachments))
        } else {
            var lines = ["── \(snapshot.count) document\(snapshot.count == 1 ? "" : "s") · \(Rendering.markers(snapshot.metadata))"]
            lines += snapshot.documentChanges.map { Rendering.humanChange($0, attachments: attachments) }
            // An empty first snapshot is no change at all; later ones without document changes
            // only changed metadata (--include-metadata-changes).
            if snapshot.documentChanges.isEmpty { lines.append(first ? "  (no documents)" : "  (metadata only)") }
            Output.line(lines.joined(separator: "\n"))
        }
    }

    func print(document snapshot: DocumentSnapshot, previous: DocumentSnapshot?, attachments: ReferencedAttachments = .none) {
        let existed = previous?.exists ?? false
        let change: DocumentChange.Kind?
        switch (existed, snapshot.exists) {
        case (false, true): change = .added
        case (true, true): change = previous.map { $0.data() == snapshot.data() && $0.version == snapshot.version } == true ? nil : .modified
        case (true, false): change = .removed
        case (false, false): change = nil
        }
        if json {
            var changes: [JSONLine] = []
            if let change {
                changes.append(Rendering.change(change.rawValue, of: snapshot, oldIndex: existed ? 0 : -1,
                                                newIndex: snapshot.exists ? 0 : -1,
                                                data: change == .removed ? .null : Rendering.data(snapshot),
                                                attachments: attachments))
            }
            Output.line(.object([
                ("type", .string("snapshot")),
                ("fromCache", .bool(snapshot.metadata.isFromCache)),
                ("hasPendingWrites", .bool(snapshot.metadata.hasPendingWrites)),
                ("size", .int(snapshot.exists ? 1 : 0)),
                ("changes", .array(changes)),
            ]))
        } else {
            let sign = change.map { ["added": "+", "modified": "~", "removed": "-"][$0.rawValue]! } ?? "="
            let references = snapshot.exists ? attachments.humanLines(for: snapshot) : []
            Output.line((["── \(Rendering.markers(snapshot.metadata))\n\(sign) \(Rendering.humanDocument(snapshot))"] + references)
                .joined(separator: "\n"))
        }
    }
}

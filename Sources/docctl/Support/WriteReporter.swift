import ArgumentParser
import DocCache
import DocModel

/// Options and reporting shared by the write commands.
struct WriteOptions: ParsableArguments {
    @Flag(help: "Wait until the server commits the write; a rejection exits 1.")
    var wait = false
    @Option(help: "With --wait: give up after this many seconds (exit 3; the write stays queued).")
    var timeout: Int?
}

enum WriteReporter {
    /// Opens the cache, makes the write on the document at `path` and reports it.
    static func perform(path: String, write: WriteOptions, client: ClientOptions,
                        _ body: @escaping (DocumentReference) async throws -> WriteHandle) async throws {
        try await ClientSession.with(client) { session in
            let handle: WriteHandle
            do {
                handle = try await body(try session.store.document(path))
            } catch {
                throw CommandFailure(error, json: client.json)
            }
            try await report(handle, path: path, options: write, client: client)
        }
    }

    /// How long a write without `--wait` gives the server to commit it before the command
    /// reports it pending (it stays queued in the cache either way).
    static let grace: Duration = .seconds(3)

    /// Reports a write: committed (with its version), pending (queued in the cache), or
    /// rejected (exit 1).
    static func report(_ handle: WriteHandle, path: String, options: WriteOptions, client: ClientOptions) async throws {
        let limit: Duration? = options.wait ? options.timeout.map { .seconds($0) } : grace
        let outcome = await Self.outcome(of: handle, within: limit)
        switch outcome {
        case .committed(let version):
            emit(path: path, handle: handle, status: "committed", version: version, error: nil, client: client)
        case .pending:
            emit(path: path, handle: handle, status: "pending", version: nil, error: nil, client: client)
            if options.wait {
                throw CommandFailure(exitCode: CommandFailure.unreachable, code: "deadlineExceeded",
                    message: "the write to \(path) is not committed yet; it stays queued in the cache (docctl sync pushes it)",
                    json: false)
            }
        case .rejected(let error):
            emit(path: path, handle: handle, status: "rejected", version: nil, error: error, client: client)
            throw CommandFailure(exitCode: CommandFailure.failed, code: error.code.name,
                                 message: "the write to \(path) was rejected: \(error.message)", json: false)
        }
    }

    enum Outcome: Sendable {
        case committed(SnapshotVersion)
        case pending
        case rejected(DocError)
    }

    /// Waits for the handle's outcome, at most `limit` (nil: as long as it takes). The wait
    /// for the commit is not cancellable, so the two waits race outside a task group.
    static func outcome(of handle: WriteHandle, within limit: Duration?) async -> Outcome {
        let race = FirstOf<Outcome>()
        return await withCheckedContinuation { continuation in
            race.start(continuation)
            Task {
                do {
                    race.finish(.committed(try await handle.committed))
                } catch {
                    race.finish(.rejected((error as? DocError) ?? DocError(.unknown, "\(error)")))
                }
            }
            if let limit {
                Task {
                    try? await Task.sleep(for: limit)
                    race.finish(.pending)
                }
            }
        }
    }

    /// The value of `body`, or nil when `limit` passes first (the body is not awaited after).
    static func race<T: Sendable>(within limit: Duration, _ body: @escaping @Sendable () async -> T) async -> T? {
        let first = FirstOf<T?>()
        return await withCheckedContinuation { continuation in
            first.start(continuation)
            Task { first.finish(await body()) }
            Task {
                try? await Task.sleep(for: limit)
                first.finish(nil)
            }
        }
    }

    private static func emit(path: String, handle: WriteHandle, status: String, version: SnapshotVersion?, error: DocError?,
                             client: ClientOptions) {
        if client.json {
            Output.line(.object([
                ("path", .string(path)), ("batchId", .int(Int64(handle.batchID))), ("status", .string(status)),
                ("version", version.map { .int($0.microseconds) } ?? .null),
                ("error", error.map { .object([("code", .string($0.code.name)), ("message", .string($0.message))]) } ?? .null),
            ]))
        } else {
            switch status {
            case "committed": Output.line("\(path): committed (version \(version!.microseconds))")
            case "pending": Output.line("\(path): pending (batch \(handle.batchID), queued in the local cache)")
            default: Output.line("\(path): rejected: \(error?.description ?? "")")
            }
        }
    }
}

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
            try await report(handle, path: path, options: write, client: client, store: session.store)
        }
    }

    /// How long a write without `--wait` gives the server to commit it before the command
    /// reports it pending (it stays queued in the cache either way).
    static let grace: Duration = .seconds(3)

    /// Reports a write: committed (with its version), pending (queued in the cache), or
    /// rejected (exit 1). Without `--wait` the write is reported pending after ``grace``, or
    /// at once when the store finds the server unreachable; `--wait` waits for the commit
    /// (or `--timeout`) whatever the connection does, as the library retries it.
    static func report(_ handle: WriteHandle, path: String, options: WriteOptions, client: ClientOptions,
                       store: DocumentStore) async throws {
        let outcome = options.wait
            ? await Self.outcome(of: handle, within: options.timeout.map { .seconds($0) })
            : await Self.outcome(of: handle, within: grace, orUntilUnreachable: store)
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

    /// Waits for the handle's outcome, at most `limit` (nil: as long as it takes) and, given a
    /// `store`, only until the store finds its server unreachable while the write is still
    /// queued (then `.pending`: the library sends it when the server is back). The wait for
    /// the commit is not cancellable, so the waits race outside a task group; the timer and
    /// the sync-status watcher are cancelled once the race is decided.
    static func outcome(of handle: WriteHandle, within limit: Duration?,
                        orUntilUnreachable store: DocumentStore? = nil) async -> Outcome {
        let race = FirstOf<Outcome>()
        Task {
            do {
                race.finish(.committed(try await handle.committed))
            } catch {
                race.finish(.rejected((error as? DocError) ?? DocError(.unknown, "\(error)")))
            }
        }
        var watchers: [Task<Void, Never>] = []
        if let limit {
            watchers.append(Task {
                guard (try? await Task.sleep(for: limit)) != nil else { return }
                race.finish(.pending)
            })
        }
        if let store {
            watchers.append(Task {
                for await status in store.syncStatusUpdates() {
                    if isUnreachable(status), await isQueued(handle, in: store) {
                        race.finish(.pending)
                        return
                    }
                }
            })
        }
        let outcome = await withCheckedContinuation { race.start($0) }
        for watcher in watchers { watcher.cancel() }
        return outcome
    }

    /// Whether the store knows its server cannot be reached now: the connection that sends
    /// the writes failed with `unavailable` (refused, reset, no WebSocket upgrade, no `hello`
    /// answer in time, or the server said it cannot decide now) and has not connected since —
    /// the sync status is `offline` with that error. Other sync errors (`unauthenticated`, …)
    /// come from a server that answers; the write then gets its grace.
    static func isUnreachable(_ status: SyncStatus) -> Bool {
        status.phase == .offline && status.error?.code == .unavailable
    }

    /// Whether the write is still in the store's queue (not acknowledged or rejected in the
    /// meantime), so that `pending` is true when it is printed.
    static func isQueued(_ handle: WriteHandle, in store: DocumentStore) async -> Bool {
        ((try? await store.pendingWrites()) ?? []).contains { $0.batchID == handle.batchID }
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
                ("error", error.map { Rendering.error($0) } ?? .null),
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

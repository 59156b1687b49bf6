import ArgumentParser
import DocCache
import DocModel
import Synchronization

/// `docctl request TYPE --params JSON [--base PATH@VERSION]… [--wait]`.
struct RequestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "request",
        abstract: "Submit a request document (applied by the server once, all or nothing).",
        discussion: """
            Example:
              docctl request transfer --params '{"from":"accounts/a","to":"accounts/b","amount":500}' \\
                  --base accounts/a@1732262400000000 --wait --tenant acme --uid alice
              {"id":"0193…","status":"applied","result":{"from":500,"to":500},"error":null}

            --base PATH@VERSION names a document the request is based on and the version
            (microseconds) you saw (`docctl get PATH --json` prints it); the server rejects
            the request as stale if the document changed since. With --wait it prints the final
            status and exits 1 when the request is rejected; without it, the status reached
            within a few seconds (pendingLocal: still on this device; pendingServer: sent).
            """
    )

    @Argument(help: "The request type (a handler registered on the server, e.g. transfer).")
    var type: String
    @Option(help: "The parameters as a JSON object.")
    var params: String = "{}"
    @Option(help: ArgumentHelp("A base document and the version you saw: PATH@VERSION (repeatable).", valueName: "path@version"))
    var base: [String] = []
    @Flag(help: "Wait for the final status; exit 1 when rejected.")
    var wait = false
    @Option(help: "With --wait: give up after this many seconds (exit 3; the request stays queued).")
    var timeout: Int?
    @OptionGroup var client: ClientOptions

    func validate() throws {
        for entry in base {
            guard let at = entry.lastIndex(of: "@"), Int64(entry[entry.index(after: at)...]) != nil, at != entry.startIndex else {
                throw ValidationError("--base takes PATH@VERSION with an integer version, e.g. accounts/a@1732262400000000; got \(entry)")
            }
        }
    }

    func run() async throws {
        let parameters: [String: Value]
        switch try? Value(json: params) {
        case .map(let map)?: parameters = map
        default: throw ValidationError("--params must be a JSON object, e.g. '{\"amount\": 500}'")
        }
        try await ClientSession.with(client) { session in
            var bases: [DocumentReference: SnapshotVersion] = [:]
            do {
                for entry in base {
                    let at = entry.lastIndex(of: "@")!
                    bases[try session.store.document(String(entry[..<at]))] = SnapshotVersion(microseconds: Int64(entry[entry.index(after: at)...])!)
                }
            } catch {
                throw CommandFailure(error, json: client.json)
            }
            let handle: RequestHandle
            do {
                handle = try await session.store.submitRequest(type: type, params: parameters, base: bases)
            } catch {
                throw CommandFailure(error, json: client.json)
            }
            let limit: Duration? = wait ? timeout.map { .seconds($0) } : WriteReporter.grace
            let status = await Self.status(of: handle, within: limit)
            // The final status is a JSON line (the documented contract), with or without --json.
            Self.print(handle.id, status, json: client.json || wait)
            // A rejection is a failure: one line on stderr too (the status line above already
            // carries the error for --json readers).
            if case .rejected(let code, let message) = status {
                throw CommandFailure(exitCode: CommandFailure.failed, code: code.name,
                                     message: "request \(handle.id) was rejected: \(message)")
            }
            if wait, !status.isFinal {
                throw CommandFailure(exitCode: CommandFailure.unreachable, code: "deadlineExceeded",
                    message: "request \(handle.id) is not processed yet (\(status.name)); it stays queued in the cache")
            }
        }
    }

    /// The final status, or the latest one seen when `limit` passes first.
    static func status(of handle: RequestHandle, within limit: Duration?) async -> RequestStatus {
        let latest = LatestStatus()
        let race = FirstOf<RequestStatus>()
        return await withCheckedContinuation { continuation in
            race.start(continuation)
            let watcher = Task {
                do {
                    for try await status in handle.status {
                        latest.set(status)
                        if status.isFinal { race.finish(status) }
                    }
                } catch {
                    race.finish(.rejected(code: (error as? DocError)?.code ?? .unknown, message: "\(error)"))
                }
            }
            if let limit {
                Task {
                    try? await Task.sleep(for: limit)
                    watcher.cancel()
                    race.finish(latest.value ?? .pendingLocal)
                }
            }
        }
    }

    static func print(_ id: String, _ status: RequestStatus, json: Bool) {
        var result: JSONLine = .null
        var error: JSONLine = .null
        switch status {
        case .applied(let value): result = .value(value)
        case .rejected(let code, let message): error = .object([("code", .string(code.name)), ("message", .string(message))])
        default: break
        }
        if json {
            Output.line(.object([("id", .string(id)), ("status", .string(status.name)), ("result", result), ("error", error)]))
        } else {
            Output.line("request \(id): \(status)")
        }
    }
}

/// The latest status a watcher saw.
final class LatestStatus: Sendable {
    private let state = Mutex<RequestStatus?>(nil)
    func set(_ status: RequestStatus) { state.withLock { $0 = status } }
    var value: RequestStatus? { state.withLock { $0 } }
}

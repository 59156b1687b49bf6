import DocTestSupport
import DocModel
import DocRules
import DocServer
import DocServerPostgres
import Foundation
import Logging
import NIOPosix
import Synchronization

/// A real server on 127.0.0.1 with a system-chosen port: LevelDB store in a temporary
/// directory (or a PostgreSQL database, `postgresURL`), server core, Hummingbird
/// HTTP/WebSocket front. `restart()` stops it and starts a new server process-in-process on
/// the same data (a new port unless `samePort`).
final class LiveServer: Sendable {
    let dataDirectory: String
    let secret: [UInt8]
    private let state = Mutex<Running?>(nil)

    struct Running: Sendable {
        let store: any ServerStore
        let http: DocServerHTTP
        let task: Task<Void, any Error>
        let address: ServerAddress
        /// The server's own event loops, when it has them (``ownEventLoops``).
        let eventLoops: MultiThreadedEventLoopGroup?
    }

    /// - Parameter ownEventLoops: run the server's sockets on event loops of its own, shut
    ///   down when it stops: every connection it still has is closed then, as when a server
    ///   process exits. (On SwiftNIO's shared loops, a connection the stopping server accepted
    ///   but never served stays open after ``stop()``: its client waits for its own timeouts.)
    init(dataDirectory: String? = nil, rules: RuleSet? = nil, examples: Bool = false,
         attachmentPolicy: (any AttachmentAccessPolicy)? = nil, attachmentGraceMicros: Int64? = nil,
         outcomeRetentionMicros: Int64? = nil, ownEventLoops: Bool = false, postgresURL: String? = nil) async throws {
        self.ownEventLoops = ownEventLoops
        self.postgresURL = postgresURL
        self.attachmentPolicy = attachmentPolicy
        self.attachmentGraceMicros = attachmentGraceMicros
        self.outcomeRetentionMicros = outcomeRetentionMicros
        self.dataDirectory = dataDirectory ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("doccache-live-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: self.dataDirectory, withIntermediateDirectories: true)
        self.secret = Array("integration-test-secret-0123456789abcdef".utf8)
        self.rules = rules
        self.examples = examples
        try await start(port: 0)
    }

    let rules: RuleSet?
    let examples: Bool
    let ownEventLoops: Bool
    /// The PostgreSQL database the server stores in (`nil`: LevelDB in ``dataDirectory``).
    /// Several servers given one database are instances of one backend.
    let postgresURL: String?
    /// Who may upload and download attachments (`nil`: the rules).
    let attachmentPolicy: (any AttachmentAccessPolicy)?
    /// How long the collector keeps unreferenced attachments (`nil`: the default, 7 days).
    let attachmentGraceMicros: Int64?
    /// How long batch outcomes are kept (`nil`: the default, 24 h).
    let outcomeRetentionMicros: Int64?

    /// The repository's default rules (Rules/firestore.rules).
    static func defaultRules() throws -> RuleSet {
        try RuleSet.load(path: ServerProcess.repositoryRoot.appendingPathComponent("Rules/firestore.rules").path)
    }

    var address: ServerAddress { state.withLock { $0!.address } }
    var url: String { address.url }
    var core: DocServerCore { state.withLock { $0!.http.core } }

    func start(port: Int) async throws {
        let store: any ServerStore = if let postgresURL {
            try await PostgresServerStore.connect(url: postgresURL)
        } else {
            try LevelDBServerStore.open(directory: dataDirectory)
        }
        var configuration = ServerConfiguration()
        configuration.rules = rules
        configuration.attachments = AttachmentSettings(
            store: try FileBlobStore(root: dataDirectory + "/attachments"), policy: attachmentPolicy)
        if let attachmentGraceMicros { configuration.attachments?.unreferencedGraceMicros = attachmentGraceMicros }
        if let outcomeRetentionMicros { configuration.outcomeRetentionMicros = outcomeRetentionMicros }
        let core = DocServerCore(store: store, configuration: configuration, logger: .discarding)
        if examples { core.requests.registerExamples() }
        let eventLoops = ownEventLoops ? MultiThreadedEventLoopGroup(numberOfThreads: 1) : nil
        let http = DocServerHTTP(
            core: core, verifier: try await TokenVerifier(secret: secret),
            settings: HTTPServerSettings(port: port, tickInterval: .milliseconds(200), shutdownGrace: .seconds(5)),
            logger: .discarding, eventLoopGroup: eventLoops)
        let (ready, readyContinuation) = AsyncStream<ServerAddress>.makeStream()
        let task = Task {
            defer { readyContinuation.finish() }
            try await http.run(handleSignals: false) { address in readyContinuation.yield(address) }
        }
        var iterator = ready.makeAsyncIterator()
        guard let address = await iterator.next() else {
            _ = try? await task.value
            try? await eventLoops?.shutdownGracefully()
            _ = try await task.value
            throw DocError(.unavailable, "the test server did not start")
        }
        state.withLock { $0 = Running(store: store, http: http, task: task, address: address, eventLoops: eventLoops) }
    }

    /// Graceful shutdown, then the store is closed.
    func stop() async {
        guard let running = state.withLock({ current -> Running? in defer { current = nil }; return current }) else { return }
        await running.http.shutdown()
        _ = try? await running.task.value
        try? await running.eventLoops?.shutdownGracefully()
        await running.store.close()
    }

    /// Stops and starts again on the same data; `samePort` keeps the URL (clients reconnect).
    ///
    /// Binding the same port again can fail for a while: once the port is free, the kernel may
    /// give it to an outgoing connection of another test as its ephemeral port (seen once in a
    /// full run: `Address already in use`). The start is tried again for up to 30 s, as an
    /// operator would restart a server.
    func restart(samePort: Bool = true) async throws {
        let port = samePort ? address.port : 0
        await stop()
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            do {
                return try await start(port: port)
            } catch where port != 0 && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(200))
            }
        }
    }

    func token(tenant: String = "acme", uid: String = "alice", claims: [String: Value] = [:], ttl: Duration = .seconds(3_600)) async throws -> String {
        try await TokenMinter(secret: secret).mint(tenant: tenant, uid: uid, claims: claims, ttl: ttl)
    }

    func removeData() { try? FileManager.default.removeItem(atPath: dataDirectory) }
}

import DocModel
import DocProtocol
import DocServer
import Foundation
import Synchronization

/// A real DocServer core over a LevelDB store in a temporary directory, with the auth the
/// WebSocket server will have (HS256 tokens, verified on `hello`). It can be stopped and
/// started again on the same directory (a server restart: same data, same versions).
final class TestServerHost: Sendable {
    private struct Running: Sendable {
        let store: LevelDBServerStore
        let core: DocServerCore
    }

    let directory: String
    let verifier: TokenVerifier
    let minter: TokenMinter
    /// The settings every core of this host runs with.
    let configuration: ServerConfiguration
    private let running = Mutex<Running?>(nil)

    /// A host whose server is running, with `configuration`.
    static func start(configuration: ServerConfiguration = ServerConfiguration()) async throws -> TestServerHost {
        let secret = (0..<32).map { _ in UInt8.random(in: 0...255) }
        let host = TestServerHost(
            directory: NSTemporaryDirectory() + "doccache-sync-server-\(UUID().uuidString)",
            verifier: try await TokenVerifier(secret: secret), minter: try await TokenMinter(secret: secret),
            configuration: configuration)
        try FileManager.default.createDirectory(atPath: host.directory, withIntermediateDirectories: true)
        try host.startServer()
        return host
    }

    private init(directory: String, verifier: TokenVerifier, minter: TokenMinter, configuration: ServerConfiguration) {
        self.directory = directory
        self.verifier = verifier
        self.minter = minter
        self.configuration = configuration
    }

    /// The running core, or nil while the server is stopped.
    var core: DocServerCore? { running.withLock { $0?.core } }

    /// Starts a server core on the directory (opening the store where a previous one left it).
    func startServer() throws {
        let store = try LevelDBServerStore.open(directory: directory, options: .init(syncWrites: false))
        let core = DocServerCore(store: store, configuration: configuration, logger: .discarding)
        running.withLock { $0 = Running(store: store, core: core) }
    }

    /// Shuts the core down (every connection gets a fatal `unavailable` and closes) and
    /// closes the store.
    func stopServer() async {
        guard let old = running.withLock({ state -> Running? in defer { state = nil }; return state }) else { return }
        await old.core.shutdown()
        await old.store.close()
    }

    /// A token for `uid` in `tenant`, valid for an hour.
    func token(tenant: String = "acme", uid: String) async throws -> String {
        try await minter.mint(tenant: tenant, uid: uid)
    }

    /// Stops the server and removes its directory.
    func remove() async {
        await stopServer()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

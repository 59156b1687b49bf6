import DocCache
import DocModel
import DocServer
import Foundation
import Logging

/// A server on 127.0.0.1 (system-chosen port) for the scenarios that need one: LevelDB store
/// in a temporary directory, the Hummingbird front, a token minter. `stop()` shuts it down
/// and removes its data.
final class BenchServer: Sendable {
    let directory: String
    let store: LevelDBServerStore
    let core: DocServerCore
    let http: DocServerHTTP
    let task: Task<Void, any Error>
    let address: ServerAddress
    let minter: TokenMinter

    init(configuration: ServerConfiguration = ServerConfiguration()) async throws {
        directory = temporaryDirectory("server")
        let secret = Array("docbench-secret-0123456789abcdef-0123".utf8)
        store = try LevelDBServerStore.open(directory: directory)
        let core = DocServerCore(store: store, configuration: configuration, logger: .discarding)
        self.core = core
        let http = DocServerHTTP(core: core, verifier: try await TokenVerifier(secret: secret),
                                 settings: HTTPServerSettings(port: 0), logger: .discarding)
        self.http = http
        minter = try await TokenMinter(secret: secret)
        let (ready, readyContinuation) = AsyncStream<ServerAddress>.makeStream()
        task = Task {
            defer { readyContinuation.finish() }
            try await http.run(handleSignals: false) { readyContinuation.yield($0) }
        }
        var iterator = ready.makeAsyncIterator()
        guard let address = await iterator.next() else { throw DocError(.unavailable, "the benchmark server did not start") }
        self.address = address
    }

    func token(uid: String, tenant: String = "bench", claims: [String: Value] = [:]) async throws -> String {
        try await minter.mint(tenant: tenant, uid: uid, claims: claims)
    }

    /// The base URL clients connect to (`ServerEndpoint`).
    var url: String { address.url }

    /// An endpoint for a store of `uid` that gets a fresh token at every connection.
    func endpoint(uid: String, claims: [String: Value] = [:]) throws -> ServerEndpoint {
        try ServerEndpoint(url: url) { try await self.token(uid: uid, claims: claims) }
    }

    func stop() async {
        await http.shutdown()
        _ = try? await task.value
        await store.close()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

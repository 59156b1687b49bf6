import DocCache
import DocModel
import DocServer
import DocServerPostgres
import Foundation
import Logging
import PostgresTestSupport

/// Where a benchmark server keeps its data.
enum BenchStore: Sendable {
    /// The embedded LevelDB store, in a temporary directory.
    case leveldb
    /// A PostgreSQL database (a URL of the run's throwaway cluster, ``BenchPostgres``).
    /// Servers given the same URL are instances of one deployment.
    case postgres(url: String)

    /// A fresh database on the run's PostgreSQL cluster — or, when `DOCBENCH_POSTGRES_URL`
    /// is set, that database (an empty one of a server you run, e.g. to inspect its
    /// statistics; the scenario's data stays there).
    static func newPostgresDatabase() async throws -> BenchStore {
        if let url = ProcessInfo.processInfo.environment["DOCBENCH_POSTGRES_URL"] { return .postgres(url: url) }
        return .postgres(url: try await BenchPostgres.cluster().createUniqueDatabase(prefix: "bench"))
    }
}

/// The PostgreSQL cluster of a docbench run: ``PostgresCluster/shared(fsync:)``, started on
/// first use with `fsync` on (PostgreSQL's defaults otherwise, so commits are as durable as
/// the embedded store's synced writes) and stopped when the process exits.
enum BenchPostgres {
    static func cluster() async throws -> PostgresCluster { try await PostgresCluster.shared(fsync: true) }
}

/// A server on 127.0.0.1 (system-chosen port) for the scenarios that need one: a store
/// (LevelDB in a temporary directory, or a PostgreSQL database), the Hummingbird front, a
/// token minter. `stop()` shuts it down and removes its LevelDB data.
final class BenchServer: Sendable {
    let directory: String
    let store: any ServerStore
    let core: DocServerCore
    let http: DocServerHTTP
    let task: Task<Void, any Error>
    let address: ServerAddress
    let minter: TokenMinter

    init(store kind: BenchStore = .leveldb, configuration: ServerConfiguration = ServerConfiguration()) async throws {
        directory = temporaryDirectory("server")
        let secret = Array("docbench-secret-0123456789abcdef-0123".utf8)
        switch kind {
        case .leveldb:
            store = try LevelDBServerStore.open(directory: directory)
        case .postgres(let url):
            store = try await PostgresServerStore.connect(url: url)
        }
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

import DocTestSupport
import DocModel
import DocServer
import Foundation
import Synchronization
import Testing
@testable import DocCache

/// One test's world: a real server core (``TestServerHost``), an in-process transport to it,
/// and stores opened in their own temporary directories (one per simulated device).
final class SyncHarness: Sendable {
    let host: TestServerHost
    let transport: InProcessTransport
    let tenant = "acme"
    private let root = NSTemporaryDirectory() + "doccache-sync-\(UUID().uuidString)"
    private let stores = Mutex<[DocumentStore]>([])

    private init(host: TestServerHost) {
        self.host = host
        transport = InProcessTransport(host: host)
    }

    /// Runs `body` with a fresh harness whose server has `configuration`; closes every store
    /// and removes every directory after.
    ///
    /// A body still running after ``runLimit`` is cancelled with an issue recorded: a liveness
    /// cap, so that a test whose fault was never triggered (a connection that was to drop
    /// and be refused) fails instead of waiting forever on a write nobody will answer.
    static func run(
        configuration: ServerConfiguration = ServerConfiguration(),
        _ body: @escaping @Sendable (SyncHarness) async throws -> Void
    ) async throws {
        let harness = SyncHarness(host: try await TestServerHost.start(configuration: configuration))
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await body(harness) }
                group.addTask {
                    try await Task.sleep(for: runLimit)
                    Issue.record("the test ran for over \(runLimit) and was cancelled (a liveness cap, far above its time alone)")
                }
                try await group.next()
                group.cancelAll()
            }
        } catch {
            await harness.tearDown()
            throw error
        }
        await harness.tearDown()
    }

    /// How long a test's body may run (``run(configuration:_:)``).
    static let runLimit: Duration = .seconds(600)

    private func tearDown() async {
        for store in stores.withLock({ $0 }) { await store.close() }
        await host.remove()
        try? FileManager.default.removeItem(atPath: root)
    }

    /// Opens the store of `user` on device `device` (its own directory, so its own client id),
    /// connected through `transport` (the harness's by default) with tokens from `token` (a
    /// valid token for the user by default).
    func openStore(
        device: String, user: String = "u1", settings: StoreSettings = StoreSettings(), transport: (any FrameTransport)? = nil,
        token: (@Sendable () async throws -> String)? = nil
    ) async throws -> DocumentStore {
        let host = self.host
        let tenant = self.tenant
        let provider = token ?? { try await host.token(tenant: tenant, uid: user) }
        let store = try await DocumentStore.open(
            directory: root + "/" + device, tenant: tenant, user: user, settings: settings,
            network: NetworkConfiguration(transport: transport ?? self.transport, token: provider))
        stores.withLock { $0.append(store) }
        return store
    }
}

extension DocumentSnapshot {
    /// An integer field, or nil.
    func int(_ field: String) -> Int64? {
        if case .integer(let n)? = get(field) { return n }
        return nil
    }
}

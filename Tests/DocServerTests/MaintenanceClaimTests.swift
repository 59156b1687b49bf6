import DocModel
import Synchronization
import Testing
@testable import DocServer

/// Shared maintenance (`runMaintenance(sharingEvery:)`) on one store: a tenant whose
/// maintenance fails gives its claim back, so the next run of any instance maintains it
/// instead of waiting a period.
@Suite struct MaintenanceClaimTests {
    /// Tenant stores whose pruning fails while ``failing`` is set.
    final class FailingPruneStore: ServerStore {
        final class Tenant: ForwardingTenantStore {
            let base: any TenantStore
            let owner: FailingPruneStore
            init(base: any TenantStore, owner: FailingPruneStore) {
                self.base = base
                self.owner = owner
            }
            func pruneOutcomes(recordedBefore cutoff: Int64) async throws(DocError) -> Int {
                if owner.failing.withLock({ $0 }) { throw DocError(.unavailable, "the disk is gone (test)") }
                return try await base.pruneOutcomes(recordedBefore: cutoff)
            }
        }

        let base: LevelDBServerStore
        let failing = Mutex(false)
        init(base: LevelDBServerStore) { self.base = base }
        func tenant(_ tenant: TenantID) async throws(DocError) -> any TenantStore {
            Tenant(base: try await base.tenant(tenant), owner: self)
        }
        func tenantIDs() async throws(DocError) -> [TenantID] { try await base.tenantIDs() }
        func checkHealth() async throws(DocError) { try await base.checkHealth() }
        func close() async {}
    }

    @Test func aFailedMaintenanceGivesItsClaimBack() async throws {
        let server = TestServer()
        let store = FailingPruneStore(base: server.store)
        var configuration = ServerConfiguration()
        configuration.clock = server.clock.serverClock
        let a = DocServerCore(store: store, configuration: configuration, logger: .discarding)
        let b = DocServerCore(store: store, configuration: configuration, logger: .discarding)
        for core in [a, b] { _ = try await core.handshake(tenant: "acme", uid: "u", clientID: "c") }
        let period = Duration.seconds(1_800)

        store.failing.withLock { $0 = true }
        let failed = await a.runMaintenance(sharingEvery: period)
        #expect(failed.failures.keys.sorted() == ["acme"])
        store.failing.withLock { $0 = false }
        // At once, B maintains the tenant A failed to: the claim was given back.
        let retried = await b.runMaintenance(sharingEvery: period)
        #expect(retried.failures.isEmpty)
        #expect(retried.tenantsMaintainedElsewhere == 0)
        // A successful run keeps its claim for the period.
        #expect(await a.runMaintenance(sharingEvery: period).tenantsMaintainedElsewhere == 1)
    }
}

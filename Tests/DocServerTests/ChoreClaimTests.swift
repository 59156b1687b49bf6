import DocModel
import Synchronization
import Testing
@testable import DocServer

/// Shared chores on one store (`runMaintenance(sharingEvery:)`,
/// `recoverPendingRequests(sharingEvery:)`): a tenant whose chore fails gives its claim back,
/// so the next run of any instance does it instead of waiting a period.
@Suite struct ChoreClaimTests {
    /// Tenant stores whose pruning (maintenance) or queries (the request sweep's listing of
    /// pending requests) fail while ``failing`` is set.
    final class FailingChoreStore: ForwardingServerStore {
        final class Tenant: ForwardingTenantStore {
            let base: any TenantStore
            let owner: FailingChoreStore
            init(base: any TenantStore, owner: FailingChoreStore) {
                self.base = base
                self.owner = owner
            }
            func pruneOutcomes(recordedBefore cutoff: Int64) async throws(DocError) -> Int {
                try owner.failIfFailing()
                return try await base.pruneOutcomes(recordedBefore: cutoff)
            }
            func query(_ target: Target, limit: Int?) async throws(DocError) -> QueryRead {
                try owner.failIfFailing()
                return try await base.query(target, limit: limit)
            }
        }

        let base: LevelDBServerStore
        let failing = Mutex(false)
        init(base: LevelDBServerStore) { self.base = base }
        func failIfFailing() throws(DocError) {
            if failing.withLock({ $0 }) { throw DocError(.unavailable, "the disk is gone (test)") }
        }
        func wrap(_ tenant: any TenantStore) -> any TenantStore { Tenant(base: tenant, owner: self) }
    }

    /// Two server cores (instances) on one failing store, each with the tenant `acme` open
    /// when `opening` (an opened tenant is swept at once).
    static func instances(_ server: TestServer, opening: Bool = true) async throws -> (a: DocServerCore, b: DocServerCore, store: FailingChoreStore) {
        let store = FailingChoreStore(base: server.store)
        let a = server.core(over: store)
        let b = server.core(over: store)
        if opening {
            for core in [a, b] { _ = try await core.handshake(tenant: "acme", uid: "u", clientID: "c") }
        }
        return (a, b, store)
    }

    @Test func aFailedMaintenanceGivesItsClaimBack() async throws {
        let server = TestServer()
        let (a, b, store) = try await Self.instances(server)
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

    @Test func aFailedRequestSweepGivesItsClaimBack() async throws {
        let server = TestServer()
        // A request left pending, as by an instance that died before processing it.
        let writer = CommitProcessor(store: try server.tenantStore("acme"), clock: server.clock.serverClock, logger: .discarding)
        func leavePending(_ id: String, batch: Int) async throws {
            _ = try await writer.process(batch: BatchKey(clientID: "dead", batchID: batch), mutations: [
                .set(try DocumentKey("requests/\(id)"), ObjectValue([
                    "type": "transfer", "status": "pending", "createdBy": "u", "base": .map([:]),
                    "params": .map(["from": "accounts/a", "to": "accounts/b", "amount": 100]),
                ])),
            ], uid: "u")
        }
        func status(_ id: String) async throws -> Value? {
            try await server.tenantStore("acme").documents([try DocumentKey("requests/\(id)")]).documents.values.first?.data["status"]
        }
        _ = try await writer.process(batch: BatchKey(clientID: "dead", batchID: 1), mutations: [
            .set(try DocumentKey("accounts/a"), ObjectValue(["balance": 500])),
            .set(try DocumentKey("accounts/b"), ObjectValue(["balance": 0])),
        ], uid: "u")
        try await leavePending("r1", batch: 2)
        // The tenant is not opened first: a tenant's first opening sweeps it unshared.
        let (a, b, store) = try await Self.instances(server, opening: false)
        for core in [a, b] { core.requests.registerExamples() }
        let period = Duration.seconds(30)

        store.failing.withLock { $0 = true }
        #expect(await a.recoverPendingRequests(sharingEvery: period) == 0)
        store.failing.withLock { $0 = false }
        // At once, B sweeps the tenant A failed to: the claim was given back.
        #expect(await b.recoverPendingRequests(sharingEvery: period) == 1)
        #expect(try await status("r1") == "applied")
        // A sweep that succeeds keeps its claim for the period: a request left since waits.
        try await leavePending("r2", batch: 3)
        #expect(await a.recoverPendingRequests(sharingEvery: period) == 0)
        #expect(try await status("r2") == "pending")
    }
}

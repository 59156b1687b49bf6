import DocModel
import DocServer
import DocServerPostgres
import Synchronization
import Testing

/// Two server instances on one database share the periodic chores (the maintenance, the sweep
/// for pending requests): each tenant's once per period, by whichever instance comes first.
@Suite struct PostgresSharedMaintenanceTests {
    @Test func aTenantIsMaintainedByOneInstancePerPeriod() async throws {
        let url = try await freshDatabase("maintain")
        let now = Mutex(ServerClock.system.nowMicros())
        let clock = ServerClock { now.withLock { $0 } }
        let storeA = try await PostgresServerStore.connect(url: url, options: testOptions())
        let storeB = try await PostgresServerStore.connect(url: url, options: testOptions())
        defer { Task { await storeA.close(); await storeB.close() } }
        let a = DocServerCore(store: storeA, configuration: ServerConfiguration(clock: clock), logger: .discarding)
        let b = DocServerCore(store: storeB, configuration: ServerConfiguration(clock: clock), logger: .discarding)
        // Both instances serve both tenants.
        for core in [a, b] {
            for tenant in ["acme", "globex"] { _ = try await core.handshake(tenant: tenant, uid: "u", clientID: "c") }
        }
        let period = Duration.seconds(1_800)
        let periodMicros: Int64 = 1_800_000_000

        let first = await a.runMaintenance(sharingEvery: period)
        #expect(first.failures.isEmpty)
        #expect(first.tenantsMaintainedElsewhere == 0)
        let second = await b.runMaintenance(sharingEvery: period)
        #expect(second.failures.isEmpty)
        #expect(second.tenantsMaintainedElsewhere == 2)
        // An explicit run is not shared.
        #expect(await b.runMaintenance().tenantsMaintainedElsewhere == 0)

        // A period later, whichever instance comes first maintains; both at once: each tenant
        // by one of them.
        now.withLock { $0 += periodMicros }
        async let runA = a.runMaintenance(sharingEvery: period)
        async let runB = b.runMaintenance(sharingEvery: period)
        let (reportA, reportB) = await (runA, runB)
        #expect(reportA.tenantsMaintainedElsewhere + reportB.tenantsMaintainedElsewhere == 2)
        #expect(reportA.failures.isEmpty && reportB.failures.isEmpty)
    }

    @Test func aTenantsPendingRequestsAreSweptByOneInstancePerPeriod() async throws {
        let url = try await freshDatabase("sweep")
        let now = Mutex(ServerClock.system.nowMicros())
        let clock = ServerClock { now.withLock { $0 } }
        let storeA = try await PostgresServerStore.connect(url: url, options: testOptions())
        let storeB = try await PostgresServerStore.connect(url: url, options: testOptions())
        defer { Task { await storeA.close(); await storeB.close() } }
        let a = DocServerCore(store: storeA, configuration: ServerConfiguration(clock: clock), logger: .discarding)
        let b = DocServerCore(store: storeB, configuration: ServerConfiguration(clock: clock), logger: .discarding)
        a.requests.registerExamples()
        b.requests.registerExamples()
        // Requests committed straight to the store, as by an instance that died before
        // processing them: they stay pending until a sweep finds them.
        let acme = try TenantID("acme")
        let writer = CommitProcessor(store: try await storeA.tenant(acme), clock: clock, logger: .discarding)
        var batch = 0
        func commit(_ mutations: [Mutation]) async throws {
            batch += 1
            now.withLock { $0 += 10 }
            let processed = try await writer.process(batch: BatchKey(clientID: "dead", batchID: batch), mutations: mutations, uid: "u1")
            #expect(processed.applied)
        }
        func transfer(_ id: String) -> Mutation {
            .set(P.key("requests/\(id)"), ObjectValue([
                "type": "transfer", "status": "pending", "createdBy": "u1", "base": .map([:]),
                "params": .map(["from": "accounts/a", "to": "accounts/b", "amount": 100]),
            ]))
        }
        func status(_ id: String) async throws -> Value? {
            try await storeB.tenant(acme).documents([P.key("requests/\(id)")]).documents.values.first?.data["status"]
        }
        try await commit([.set(P.key("accounts/a"), ObjectValue(["balance": 500])), .set(P.key("accounts/b"), ObjectValue(["balance": 0]))])
        try await commit([transfer("r1")])
        let period = Duration.seconds(30)

        #expect(await a.recoverPendingRequests(sharingEvery: period) == 1)
        #expect(try await status("r1") == "applied")
        // Within the period B leaves the tenant to A's sweep: a request left since stays pending.
        try await commit([transfer("r2")])
        #expect(await b.recoverPendingRequests(sharingEvery: period) == 0)
        #expect(try await status("r2") == "pending")
        // A sweep at start is not shared (and the tenant's hub, opened by it, sweeps no more).
        #expect(await b.recoverPendingRequests() == 1)
        #expect(try await status("r2") == "applied")

        // A period later, whichever instance comes first sweeps; both at once: one of them.
        try await commit([transfer("r3")])
        now.withLock { $0 += 30_000_000 }
        async let sweptA = a.recoverPendingRequests(sharingEvery: period)
        async let sweptB = b.recoverPendingRequests(sharingEvery: period)
        let (fromA, fromB) = await (sweptA, sweptB)
        #expect(fromA + fromB == 1)
        #expect(try await status("r3") == "applied")
        let balance = try await storeA.tenant(acme).documents([P.key("accounts/a")]).documents.values.first?.data["balance"]
        #expect(balance == 200)
    }
}

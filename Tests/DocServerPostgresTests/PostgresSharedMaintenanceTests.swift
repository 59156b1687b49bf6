import DocModel
import DocServer
import DocServerPostgres
import Synchronization
import Testing

/// Two server instances on one database share the periodic chores (the maintenance, the sweep
/// for pending requests): each tenant's once per period, by whichever instance comes first.
@Suite struct PostgresSharedMaintenanceTests {
    /// Two server instances on one new database, each with its own store (and pool), on one
    /// clock the test moves.
    struct TwoInstances {
        final class Time: Sendable {
            let micros = Mutex(ServerClock.system.nowMicros())
        }

        let storeA: PostgresServerStore
        let storeB: PostgresServerStore
        let a: DocServerCore
        let b: DocServerCore
        let time = Time()

        var clock: ServerClock { ServerClock { [time] in time.micros.withLock { $0 } } }

        static func make(_ prefix: String) async throws -> TwoInstances {
            let url = try await freshDatabase(prefix)
            let storeA = try await PostgresServerStore.connect(url: url, options: testOptions())
            let storeB = try await PostgresServerStore.connect(url: url, options: testOptions())
            return TwoInstances(storeA: storeA, storeB: storeB)
        }

        private init(storeA: PostgresServerStore, storeB: PostgresServerStore) {
            self.storeA = storeA
            self.storeB = storeB
            let clock = ServerClock { [time] in time.micros.withLock { $0 } }
            a = DocServerCore(store: storeA, configuration: ServerConfiguration(clock: clock), logger: .discarding)
            b = DocServerCore(store: storeB, configuration: ServerConfiguration(clock: clock), logger: .discarding)
        }

        func advance(by micros: Int64) { time.micros.withLock { $0 += micros } }

        func close() { Task { [storeA, storeB] in await storeA.close(); await storeB.close() } }
    }

    @Test func aTenantIsMaintainedByOneInstancePerPeriod() async throws {
        let instances = try await TwoInstances.make("maintain")
        defer { instances.close() }
        let (a, b) = (instances.a, instances.b)
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
        instances.advance(by: periodMicros)
        async let runA = a.runMaintenance(sharingEvery: period)
        async let runB = b.runMaintenance(sharingEvery: period)
        let (reportA, reportB) = await (runA, runB)
        #expect(reportA.tenantsMaintainedElsewhere + reportB.tenantsMaintainedElsewhere == 2)
        #expect(reportA.failures.isEmpty && reportB.failures.isEmpty)
    }

    @Test func aTenantsPendingRequestsAreSweptByOneInstancePerPeriod() async throws {
        let instances = try await TwoInstances.make("sweep")
        defer { instances.close() }
        let (a, b, storeA, storeB, clock) = (instances.a, instances.b, instances.storeA, instances.storeB, instances.clock)
        a.requests.registerExamples()
        b.requests.registerExamples()
        // Requests committed straight to the store, as by an instance that died before
        // processing them: they stay pending until a sweep finds them.
        let acme = try TenantID("acme")
        let writer = CommitProcessor(store: try await storeA.tenant(acme), clock: clock, logger: .discarding)
        var batch = 0
        func commit(_ mutations: [Mutation]) async throws {
            batch += 1
            instances.advance(by: 10)
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
        instances.advance(by: 30_000_000)
        async let sweptA = a.recoverPendingRequests(sharingEvery: period)
        async let sweptB = b.recoverPendingRequests(sharingEvery: period)
        let (fromA, fromB) = await (sweptA, sweptB)
        #expect(fromA + fromB == 1)
        #expect(try await status("r3") == "applied")
        let balance = try await storeA.tenant(acme).documents([P.key("accounts/a")]).documents.values.first?.data["balance"]
        #expect(balance == 200)
    }
}

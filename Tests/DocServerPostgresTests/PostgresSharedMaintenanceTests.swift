import DocModel
import DocServer
import DocServerPostgres
import Synchronization
import Testing

/// Two server instances on one database share the periodic maintenance: each tenant is
/// maintained once per period, by whichever instance comes first.
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
}

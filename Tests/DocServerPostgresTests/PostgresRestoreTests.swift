import DocModel
@testable import DocServer
import DocServerPostgres
import Foundation
import PostgresTestSupport
import Testing

/// `pg_dump` / `pg_restore` of the PostgreSQL store, then
/// ``PostgresServerStore/reincarnateAfterRestore()``: tokens of the dump's incarnation up to
/// the restored version resume, later ones never do.
@Suite struct PostgresRestoreTests {
    /// Runs a PostgreSQL client tool of the test cluster; throws with its output on failure.
    func tool(_ name: String, _ arguments: [String]) async throws {
        try await PostgresCluster.shared().runClientTool(name, arguments)
    }

    @Test func aRestoredDumpGetsNewIncarnationsThatRememberTheDumpsVersion() async throws {
        let url = try await freshDatabase("restore")
        let dump = FileManager.default.temporaryDirectory.appendingPathComponent("doccache-\(UUID().uuidString).dump").path
        defer { try? FileManager.default.removeItem(atPath: dump) }

        var store = try await PostgresServerStore.connect(url: url, options: testOptions())
        var acme = try await store.tenant(TenantID("acme"))
        _ = try await store.tenant(TenantID("beta"))
        for batch in 0..<3 { try await P.touch(acme, "rooms/r\(batch)", batch: batch) }
        let dumped = try await acme.state()
        try await tool("pg_dump", ["--format=custom", "--file=\(dump)", url])
        // Lost by the restore: a commit after the dump, whose version a client's token carries.
        let lost = try await P.touch(acme, "rooms/lost", batch: 3)
        await store.close()

        try await tool("pg_restore", ["--clean", "--dbname=\(url)", dump])
        store = try await PostgresServerStore.connect(url: url, options: testOptions())
        acme = try await store.tenant(TenantID("acme"))
        // As restored: the dump's incarnation, which would resume the lost token as soon as
        // new commits pass its version.
        #expect(try await acme.state() == dumped)

        let tenants = try await store.reincarnateAfterRestore()
        #expect(tenants.map(\.tenant.rawValue) == ["acme", "beta"])
        let state = try await acme.state()
        #expect(state.lastVersion == dumped.lastVersion && state.changeLogFloor == dumped.changeLogFloor)
        #expect(state.incarnation != dumped.incarnation)
        #expect(state.incarnation == tenants[0].incarnation)
        #expect(state.previousIncarnation == .init(incarnation: dumped.incarnation, validThrough: dumped.lastVersion))
        #expect(try await acme.documents([P.key("rooms/lost")]).documents.isEmpty)

        // New commits pass the lost token's version; the resume rule still refuses it.
        let fresh = try await P.touch(acme, "rooms/fresh", batch: 4)
        #expect(fresh > lost)
        let now = try await acme.state()
        #expect(now.previousIncarnation == state.previousIncarnation)
        #expect(!now.resumes(incarnation: dumped.incarnation, version: lost))
        #expect(now.resumes(incarnation: dumped.incarnation, version: dumped.lastVersion))
        #expect(now.resumes(incarnation: now.incarnation, version: fresh))
        await store.close()
    }
}


import DocModel
import DocServer
import DocServerPostgres
import PostgresTestSupport
import Testing

@Suite struct PostgresSchemaTests {
    @Test func firstStartCreatesTheVersionedSchema() async throws {
        let url = try freshDatabase("schema")
        let cluster = try PostgresCluster.shared()
        let db = databaseName(url)
        #expect(try cluster.psql("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'doccache_%'", database: db)
                    .trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        let store = try await PostgresServerStore.connect(url: url, options: testOptions())
        await store.close()
        #expect(try cluster.psql("SELECT value FROM doccache_meta WHERE name = 'schema_version'", database: db)
                    .trimmingCharacters(in: .whitespacesAndNewlines) == "1")
        let tables = try cluster.psql("SELECT tablename FROM pg_tables WHERE tablename LIKE 'doccache_%' ORDER BY 1", database: db)
            .split(separator: "\n").map(String.init)
        #expect(tables == ["doccache_change_log", "doccache_documents", "doccache_meta", "doccache_outcomes", "doccache_tenants"])
        // Every order-significant key column is bytea.
        let types = try cluster.psql("""
            SELECT table_name || '.' || column_name || ':' || data_type FROM information_schema.columns
            WHERE column_name IN ('doc_key', 'path_key', 'group_id', 'client_id') ORDER BY 1
            """, database: db).split(separator: "\n").map(String.init)
        #expect(types == ["doccache_change_log.path_key:bytea", "doccache_documents.doc_key:bytea", "doccache_documents.group_id:bytea",
                          "doccache_documents.path_key:bytea", "doccache_outcomes.client_id:bytea"])
        // Starting again keeps the data and the version.
        let again = try await PostgresServerStore.connect(url: url, options: testOptions())
        let tenant = try await again.tenant(TenantID("acme"))
        try await P.touch(tenant, "a/1", batch: 1)
        await again.close()
        let third = try await PostgresServerStore.connect(url: url, options: testOptions())
        #expect(try await third.tenant(TenantID("acme")).documents([P.key("a/1")]).documents.count == 1)
        await third.close()
    }

    @Test func instancesStartingTogetherMigrateOnce() async throws {
        let url = try freshDatabase("schema")
        let stores = try await withThrowingTaskGroup(of: PostgresServerStore.self) { group in
            for _ in 0..<4 { group.addTask { try await PostgresServerStore.connect(url: url, options: testOptions()) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(stores.count == 4)
        for store in stores { try await store.checkHealth() }
        for store in stores { await store.close() }
        #expect(try PostgresCluster.shared().psql("SELECT value FROM doccache_meta", database: databaseName(url))
                    .trimmingCharacters(in: .whitespacesAndNewlines) == "1")
    }

    @Test func aNewerSchemaIsAClearError() async throws {
        let url = try freshDatabase("schema")
        let store = try await PostgresServerStore.connect(url: url, options: testOptions())
        await store.close()
        try PostgresCluster.shared().psql("UPDATE doccache_meta SET value = '99' WHERE name = 'schema_version'", database: databaseName(url))
        let error = await #expect(throws: DocError.self) { try await PostgresServerStore.connect(url: url, options: testOptions()) }
        #expect(error?.code == .failedPrecondition)
        #expect(error?.message.contains("schema version 99") == true, "\(String(describing: error))")
        #expect(error?.message.contains("upgrade the server") == true)
    }

    @Test func tenantCreationRacesToOneTenant() async throws {
        let url = try freshDatabase("schema")
        let a = try await PostgresServerStore.connect(url: url, options: testOptions())
        let b = try await PostgresServerStore.connect(url: url, options: testOptions())
        async let fromA = a.tenant(TenantID("acme")).state()
        async let fromB = b.tenant(TenantID("acme")).state()
        let (stateA, stateB) = try await (fromA, fromB)
        #expect(stateA == stateB)
        #expect(stateA.incarnation != 0)
        #expect(try await a.tenantIDs() == [try TenantID("acme")])
        await a.close()
        await b.close()
    }
}

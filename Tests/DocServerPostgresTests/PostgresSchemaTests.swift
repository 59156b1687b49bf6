import DocModel
import DocServer
import DocServerPostgres
import PostgresTestSupport
import Testing

@Suite struct PostgresSchemaTests {
    @Test func firstStartCreatesTheVersionedSchema() async throws {
        let url = try await freshDatabase("schema")
        let cluster = try await PostgresCluster.shared()
        let db = databaseName(url)
        #expect(try await cluster.psql("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'doccache_%'", database: db)
                    .trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        let store = try await PostgresServerStore.connect(url: url, options: testOptions())
        await store.close()
        #expect(try await cluster.psql("SELECT value FROM doccache_meta WHERE name = 'schema_version'", database: db)
                    .trimmingCharacters(in: .whitespacesAndNewlines) == "5")
        let tables = try await cluster.psql("SELECT tablename FROM pg_tables WHERE tablename LIKE 'doccache_%' ORDER BY 1", database: db)
            .split(separator: "\n").map(String.init)
        #expect(tables == ["doccache_blob_locks", "doccache_blob_parts", "doccache_blobs", "doccache_change_log", "doccache_composite_indexes",
                           "doccache_documents", "doccache_field_index", "doccache_meta", "doccache_outcomes", "doccache_tenants"])
        // Every order-significant key column is bytea.
        let types = try await cluster.psql("""
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

    /// A tenant row whose last version the next commit could not count on from is reported as
    /// damaged, not trusted.
    @Test func aDamagedTenantRowIsDataLoss() async throws {
        let url = try await freshDatabase("schema")
        let cluster = try await PostgresCluster.shared()
        let store = try await PostgresServerStore.connect(url: url, options: testOptions())
        defer { Task { await store.close() } }
        let tenant = try await store.tenant(TenantID("acme"))
        try await P.touch(tenant, "items/a", client: "c", batch: 1)
        try await cluster.psql("UPDATE doccache_tenants SET last_version = 9223372036854775807 WHERE tenant = 'acme'",
                               database: databaseName(url))
        let error = await #expect(throws: DocError.self) { try await tenant.state() }
        #expect(error?.code == .dataLoss && error?.message.contains("damaged") == true, "\(String(describing: error))")
    }

    @Test func instancesStartingTogetherMigrateOnce() async throws {
        let url = try await freshDatabase("schema")
        let stores = try await withThrowingTaskGroup(of: PostgresServerStore.self) { group in
            for _ in 0..<4 { group.addTask { try await PostgresServerStore.connect(url: url, options: testOptions()) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(stores.count == 4)
        // Every store answers a statement (within the tests' operation timeout: the health
        // probe's own 3 s cap is a product limit, too short for a saturated test run).
        for store in stores { #expect(try await store.tenantIDs().isEmpty) }
        for store in stores { await store.close() }
        #expect(try await PostgresCluster.shared().psql("SELECT value FROM doccache_meta", database: databaseName(url))
                    .trimmingCharacters(in: .whitespacesAndNewlines) == "5")
    }

    /// A database of schema version 1 (no query indexes) holding documents: opening it builds
    /// the index rows of every stored document, and indexed queries answer as before.
    @Test func versionTwoIndexesTheDocumentsAlreadyStored() async throws {
        let url = try await freshDatabase("schema")
        let db = databaseName(url)
        let cluster = try await PostgresCluster.shared()
        let store = try await PostgresServerStore.connect(url: url, options: testOptions())
        let tenant = try await store.tenant(TenantID("acme"))
        for i in 0..<1_200 {
            try await P.touch(tenant, "items/d\(i)", client: "t\(i)", batch: i % 7)
        }
        _ = try await P.touch(try await store.tenant(TenantID("other")), "items/x", batch: 3)
        await store.close()
        let before = try await IndexRowsDump.dump(cluster, database: db)
        #expect(before.count == 1_201)   // one field per document
        try await cluster.psql("DROP TABLE doccache_field_index; UPDATE doccache_meta SET value = '1' WHERE name = 'schema_version'",
                         database: db)

        let reopened = try await PostgresServerStore.connect(url: url, options: testOptions())
        #expect(try await IndexRowsDump.dump(cluster, database: db) == before)
        let query = try DocModel.Query(collection: "items").filter("b", .equal, .integer(3))
            .order(by: FieldPath("b")).limit(to: 500).toTarget()
        let read = try await reopened.tenant(TenantID("acme")).query(query, limit: 500)
        #expect(read.documents.count == (0..<1_200).filter { $0 % 7 == 3 }.count)
        await reopened.close()
    }

    /// A database of schema version 3 (no attachment references) holding documents that refer
    /// to attachments: opening it writes the references of the live ones (not tombstones), and
    /// the collector's lookup finds exactly those.
    @Test func versionFourRecordsTheAttachmentReferencesAlreadyStored() async throws {
        let url = try await freshDatabase("schema")
        let db = databaseName(url)
        let cluster = try await PostgresCluster.shared()
        let store = try await PostgresServerStore.connect(url: url, options: testOptions())
        let tenant = try await store.tenant(TenantID("acme"))
        func attachment(_ n: Int) -> AttachmentID { AttachmentID(digest: [UInt8](repeating: UInt8(n), count: 32)) }
        // 600 documents over 3 statements of the backfill; attachment 9 only in tombstones.
        var writes: [DocumentWrite] = []
        let version = SnapshotVersion(microseconds: ServerClock.system.nowMicros())
        for i in 0..<600 {
            let key = P.key(i % 2 == 0 ? "items/d\(i)" : "other/x/items/d\(i)")
            var fields: [String: Value] = ["n": .integer(Int64(i))]
            if i % 3 == 0 { fields["photos"] = .array([.attachment(attachment(i % 5)), .map(["scan": .attachment(attachment(5 + i % 3))])]) }
            if i % 10 == 0 { fields = ["photo": .attachment(attachment(9)), tombstoneField: .integer(1)] }
            writes.append(DocumentWrite(key: key, document: Document(key: key, data: ObjectValue(fields), version: version)))
        }
        _ = try await tenant.commit(CommitRequest(outcome: P.committed("c", 1, version: version), writes: writes))
        let ids = (0..<12).map(attachment)
        var live = Set<AttachmentID>()
        for document in writes.compactMap(\.document) where !document.isTombstone { document.forEachAttachment { live.insert($0) } }
        #expect(live.count == 6 && !live.contains(attachment(9)))
        #expect(try await tenant.referencedAttachments(among: ids) == live)
        await store.close()
        let before = try await IndexRowsDump.dump(cluster, database: db)
        try await cluster.psql("DELETE FROM doccache_field_index WHERE kind = 8; UPDATE doccache_meta SET value = '3' WHERE name = 'schema_version'",
                               database: db)
        #expect(try await IndexRowsDump.dump(cluster, database: db) != before)

        let reopened = try await PostgresServerStore.connect(url: url, options: testOptions())
        #expect(try await IndexRowsDump.dump(cluster, database: db) == before)
        #expect(try await reopened.tenant(TenantID("acme")).referencedAttachments(among: ids) == live)
        #expect(try await reopened.tenant(TenantID("other")).referencedAttachments(among: ids).isEmpty)
        await reopened.close()
    }

    @Test func aNewerSchemaIsAClearError() async throws {
        let url = try await freshDatabase("schema")
        let store = try await PostgresServerStore.connect(url: url, options: testOptions())
        await store.close()
        try await PostgresCluster.shared().psql("UPDATE doccache_meta SET value = '99' WHERE name = 'schema_version'", database: databaseName(url))
        let error = await #expect(throws: DocError.self) { try await PostgresServerStore.connect(url: url, options: testOptions()) }
        #expect(error?.code == .failedPrecondition)
        #expect(error?.message.contains("schema version 99") == true, "\(String(describing: error))")
        #expect(error?.message.contains("upgrade the server") == true)
    }

    @Test func tenantCreationRacesToOneTenant() async throws {
        let url = try await freshDatabase("schema")
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

import DocModel
import DocServer
import DocTestSupport
import PostgresTestSupport
import Testing
@testable import DocServerPostgres

/// The rows of `doccache_field_index` as text, one per row: tenant, collection, field, kind,
/// value and document id (bytes in hex).
enum IndexRowsDump {
    static func dump(_ cluster: PostgresCluster, database: String) async throws -> [String] {
        try await cluster.psql("""
            SELECT tenant || ' ' || encode(collection, 'hex') || ' ' || encode(field, 'hex') || ' ' || kind || ' '
                   || encode(value, 'hex') || ' ' || encode(doc_id, 'hex')
            FROM doccache_field_index ORDER BY 1
            """, database: database).split(separator: "\n").map(String.init)
    }

    /// The rows the documents of `model` must have in `tenant`, in the dump's format.
    static func expected(_ model: some Sequence<Document>, tenant: String, compositeIndexes: [CompositeIndex] = []) -> [String] {
        func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
        var rows: [String] = []
        for document in model {
            let collection = hex(DocumentKeyBytes.collectionPrefix(document.key.collectionPath))
            let id = hex(DocumentKeyBytes.documentID(document.key.documentID))
            for entry in FieldIndexRows.entries(of: document, compositeIndexes: compositeIndexes) {
                rows.append("\(tenant) \(collection) \(hex(entry.field)) \(entry.kind) \(hex(entry.value)) \(id)")
            }
            // Attachment references of a live document: no collection or field, the whole key.
            var attachments = Set<AttachmentID>()
            if !document.isTombstone { document.forEachAttachment { attachments.insert($0) } }
            for attachment in attachments {
                rows.append("\(tenant)   8 \(hex(Array(attachment.hex.utf8))) \(hex(DocumentKeyBytes.key(document.key)))")
            }
        }
        return rows.sorted()
    }
}

@Suite struct PostgresIndexRowsTests {
    /// Random commits (creates, replacements, hard deletes, tombstones, values too large to
    /// index) keep the index rows exactly those of the stored documents: rows of replaced
    /// values and deleted documents go, in the commit that changes them.
    @Test(arguments: 0..<3 as Range<UInt64>)
    func indexRowsFollowTheDocuments(seed: UInt64) async throws {
        let url = try await freshDatabase("index")
        let db = databaseName(url)
        let store = try await PostgresServerStore.connect(url: url, options: testOptions())
        let tenant = try await store.tenant(TenantID("acme"))
        var data = RandomQueryData(seed: seed)
        var model: [DocumentKey: Document] = [:]
        for batch in 1...60 {
            let version = try await tenant.state().lastVersion.microseconds + 1
            let writes = data.batch(over: model, version: SnapshotVersion(microseconds: version), deletePercent: 25)
            _ = try await tenant.commit(CommitRequest(outcome: P.committed("c", batch, version: SnapshotVersion(microseconds: version)),
                                                      writes: writes.map { DocumentWrite(key: $0.key, document: $0.value) }))
            for (key, document) in writes { model[key] = document }
        }
        let rows = try await IndexRowsDump.dump(PostgresCluster.shared(), database: db)
        #expect(rows == IndexRowsDump.expected(model.values, tenant: "acme"), "seed \(seed)")
        #expect(model.values.contains { !DocumentIndexEntries($0).unindexed.isEmpty }, "seed \(seed) writes values too large to index")
        await store.close()
    }

    /// Composite indexes declared by one instance: connecting builds their rows for the
    /// documents of every tenant, and from then on an instance that never declared them (it
    /// connected before they existed) keeps their rows right in its commits.
    @Test func compositeRowsAreBuiltAndKeptByEveryInstance() async throws {
        let url = try await freshDatabase("composite")
        let db = databaseName(url)
        let plain = try await PostgresServerStore.connect(url: url, options: testOptions())
        var data = RandomQueryData(seed: 77)
        var models: [String: [DocumentKey: Document]] = [:]
        var batch = 0
        func commit(_ tenantName: String, batches: Int, through store: PostgresServerStore) async throws {
            let tenant = try await store.tenant(TenantID(tenantName))
            var model = models[tenantName] ?? [:]
            for _ in 0..<batches {
                batch += 1
                let version = try await tenant.state().lastVersion.microseconds + 1
                let writes = data.batch(over: model, version: SnapshotVersion(microseconds: version), deletePercent: 25)
                _ = try await tenant.commit(CommitRequest(outcome: P.committed("c", batch, version: SnapshotVersion(microseconds: version)),
                                                          writes: writes.map { DocumentWrite(key: $0.key, document: $0.value) }))
                for (key, document) in writes { model[key] = document }
            }
            models[tenantName] = model
        }
        func expectedRows() -> [String] {
            models.flatMap { tenant, model in
                IndexRowsDump.expected(model.values, tenant: tenant, compositeIndexes: RandomQueryData.compositeIndexes)
            }.sorted()
        }
        try await commit("acme", batches: 30, through: plain)
        try await commit("globex", batches: 20, through: plain)

        var options = testOptions()
        options.compositeIndexes = RandomQueryData.compositeIndexes
        let declaring = try await PostgresServerStore.connect(url: url, options: options)
        #expect(try await cluster().psql("SELECT count(*) FROM doccache_composite_indexes WHERE ready", database: db)
                    .trimmingCharacters(in: .whitespacesAndNewlines) == "\(RandomQueryData.compositeIndexes.count)")
        let built = try await IndexRowsDump.dump(cluster(), database: db)
        #expect(built == expectedRows())
        #expect(built.contains { $0.split(separator: " ")[3] == "4" }, "the data has composite rows")

        try await commit("acme", batches: 30, through: plain)
        try await commit("globex", batches: 10, through: declaring)
        #expect(try await IndexRowsDump.dump(cluster(), database: db) == expectedRows())
        await declaring.close()
        await plain.close()
    }

    private func cluster() async throws -> PostgresCluster { try await PostgresCluster.shared() }
}

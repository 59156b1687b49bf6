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
    static func expected(_ model: some Sequence<Document>, tenant: String) -> [String] {
        func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
        var rows: [String] = []
        for document in model {
            let collection = hex(DocumentKeyBytes.collectionPrefix(document.key.collectionPath))
            let id = hex(DocumentKeyBytes.documentID(document.key.documentID))
            for entry in FieldIndexRows.entries(of: document) {
                rows.append("\(tenant) \(collection) \(hex(entry.field)) \(entry.kind) \(hex(entry.value)) \(id)")
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
}

internal import DocModel
internal import DocServer
internal import PostgresNIO

/// Server queries: ``ServerQueryPlanner`` (the embedded store's planner) over a
/// ``PostgresQueryReader`` in one `REPEATABLE READ, READ ONLY` transaction, which also reads
/// the tenant's version and the ready composite indexes — the documents, the version and the
/// indexes a plan may read come from one snapshot.
extension PostgresTenantStore {
    func query(_ target: Target, limit: Int?) async throws(DocError) -> QueryRead {
        let name = self.name
        let databaseName = database.name
        let missing = missingState()
        let compositeIndexes = self.compositeIndexes
        return try await database.transaction(
            "query \(target) of tenant \(tenant)",
            begin: "BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"
        ) { connection, logger in
            let state = try await connection.rows("""
                SELECT last_version,
                       (SELECT array_agg(definition ORDER BY id) FROM doccache_composite_indexes WHERE ready)
                FROM doccache_tenants WHERE tenant = \(name)
                """, logger)
            guard let row = state.first else { throw missing }
            let (last, definitions) = try row.decode((Int64, [String]?).self)
            let version = SnapshotVersion(microseconds: last)
            let indexes = try compositeIndexes.indexes(definitions, database: databaseName)
            let reader = PostgresQueryReader(connection: connection, logger: logger, tenant: name, database: databaseName)
            let execution = try await ServerQueryPlanner(target: target, limit: limit, compositeIndexes: indexes).execute(with: reader)
            return QueryRead(version: version, documents: execution.documents)
        }
    }
}

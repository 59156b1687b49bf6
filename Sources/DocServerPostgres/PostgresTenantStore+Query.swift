internal import DocModel
internal import DocServer
internal import PostgresNIO

/// Server queries: ``ServerQueryPlanner`` (the embedded store's planner) over a
/// ``PostgresQueryReader`` in one `REPEATABLE READ, READ ONLY` transaction, which also reads
/// the tenant's version — the documents and the version come from one snapshot.
extension PostgresTenantStore {
    func query(_ target: Target, limit: Int?) async throws(DocError) -> QueryRead {
        let name = self.name
        let databaseName = database.name
        let missing = missingState()
        return try await database.transaction(
            "query \(target) of tenant \(tenant)",
            begin: "BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"
        ) { connection, logger in
            let state = try await connection.rows("SELECT last_version FROM doccache_tenants WHERE tenant = \(name)", logger)
            guard let row = state.first else { throw missing }
            let version = SnapshotVersion(microseconds: try row.decode(Int64.self))
            let reader = PostgresQueryReader(connection: connection, logger: logger, tenant: name, database: databaseName)
            let execution = try await ServerQueryPlanner(target: target, limit: limit).execute(with: reader)
            return QueryRead(version: version, documents: execution.documents)
        }
    }
}

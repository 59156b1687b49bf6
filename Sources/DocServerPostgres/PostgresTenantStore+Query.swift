internal import DocModel
internal import DocServer
internal import PostgresNIO

/// Server queries and aggregations: ``ServerQueryPlanner`` (the embedded store's planner), or
/// ``QueryFold``, over a ``PostgresQueryReader`` in one `REPEATABLE READ, READ ONLY`
/// transaction, which also reads the tenant's version and the ready composite indexes — the
/// documents, the version and the indexes a plan may read come from one snapshot. A query is
/// bounded by `Options.operationTimeout`, like every other transaction of the store; an
/// aggregation, which reads every matching document, by `Options.aggregationTimeout`.
extension PostgresTenantStore {
    func query(_ target: Target, limit: Int?) async throws(DocError) -> QueryRead {
        try await withSnapshot("query \(target) of tenant \(tenant)") { reader, version, indexes in
            let execution = try await ServerQueryPlanner(target: target, limit: limit, compositeIndexes: indexes).execute(with: reader)
            return QueryRead(version: version, documents: execution.documents)
        }
    }

    /// Folds the documents as ``QueryFold`` reads them, in the snapshot of one transaction.
    func aggregate(_ target: Target, _ fields: [AggregateField]) async throws(DocError) -> AggregateRead {
        try await withSnapshot("aggregate \(target) of tenant \(tenant)", timeout: database.options.aggregationTimeout) { reader, version, indexes in
            AggregateRead(version: version, result: try await QueryFold(target: target, compositeIndexes: indexes).aggregate(fields, with: reader))
        }
    }

    /// Runs `body` with a reader of the tenant in one `REPEATABLE READ, READ ONLY`
    /// transaction, the tenant's version and the ready composite indexes of its snapshot,
    /// within `timeout` (the operation timeout unless given).
    private func withSnapshot<T: Sendable>(
        _ what: String, timeout: Duration? = nil,
        _ body: @escaping @Sendable (PostgresQueryReader, SnapshotVersion, [CompositeIndex]) async throws -> T
    ) async throws(DocError) -> T {
        let name = self.name
        let databaseName = database.name
        let missing = missingState()
        let compositeIndexes = self.compositeIndexes
        return try await database.transaction(what, begin: "BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY",
                                              timeout: timeout) { connection, logger in
            let state = try await connection.rows("""
                SELECT last_version,
                       (SELECT array_agg(definition ORDER BY id) FROM doccache_composite_indexes WHERE ready)
                FROM doccache_tenants WHERE tenant = \(name)
                """, logger)
            guard let row = state.first else { throw missing }
            let (last, definitions) = try row.decode((Int64, [String]?).self)
            let indexes = try compositeIndexes.indexes(definitions, database: databaseName)
            let reader = PostgresQueryReader(connection: connection, logger: logger, tenant: name, database: databaseName)
            return try await body(reader, SnapshotVersion(microseconds: last), indexes)
        }
    }
}

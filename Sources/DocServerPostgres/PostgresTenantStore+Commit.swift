internal import DocModel
internal import DocServer
internal import PostgresNIO

/// ``TenantStore/commit(_:)``: one transaction, in this order —
///
/// 1. lock the tenant's row (`SELECT last_version … FOR UPDATE`): the commits of a tenant
///    queue here, whichever server instance runs them;
/// 2. the batch's outcome exists → ``CommitResult/duplicate(_:)``, nothing written;
/// 3. a committed batch: its version must be above `last_version`, and every document of
///    ``CommitRequest/readVersions`` must still have the version the batch read
///    (`SnapshotVersion.none`: absent) — else `aborted`, nothing written (2 and 3 read in one
///    statement); then the request's ``CommitRequest/recheck``, if any, which an attachment
///    collection holding the same lock cannot come between
///    (`PostgresTenantStore+Attachments.swift`);
/// 4. delete and upsert the documents, replace the index rows that changed (``FieldIndexRows``,
///    computed from the stored bodies read in step 2, with the rows of the composite indexes
///    recorded in `doccache_composite_indexes`, read in the same statement), append their
///    change log rows (the new `Document`, or a `NoDocument` for a hard delete), insert the
///    outcome, set `last_version` (one statement, plus one for deletes); in
///    ``PostgresServerStore/NoticeMode/listen`` mode, `pg_notify(channel, 'TENANT VERSION')`,
///    which PostgreSQL delivers when (and only if) the transaction commits.
///
/// The checks of step 3 read after the lock of step 1: at READ COMMITTED (PostgreSQL's
/// default) each statement sees every commit that held the lock before. At REPEATABLE READ or
/// SERIALIZABLE (CockroachDB, YugabyteDB) a concurrent commit makes the lock fail with a
/// serialization error instead: `aborted` too, and the batch is processed again.
extension PostgresTenantStore {
    /// The rows a committed batch writes, encoded before the transaction starts (the index
    /// rows wait for the documents' previous versions, read in the transaction).
    private struct Rows: Sendable {
        var putKeys: [ByteBuffer] = []
        var putGroups: [ByteBuffer] = []
        var putPaths: [ByteBuffer] = []
        var putVersions: [Int64] = []
        var putBodies: [ByteBuffer] = []
        var deleteKeys: [ByteBuffer] = []
        var logPaths: [ByteBuffer] = []
        var logBodies: [ByteBuffer] = []
        /// Every key written (put or deleted), with its encoding and new document.
        var written: [(key: DocumentKey, bytes: [UInt8], document: Document?)] = []

        init(_ writes: [DocumentWrite], version: SnapshotVersion) {
            // A key written twice keeps its last write, as in the embedded store's write batch.
            var last: [DocumentKey: Int] = [:]
            for (i, write) in writes.enumerated() { last[write.key] = i }
            for (i, write) in writes.enumerated() where last[write.key] == i {
                let bytes = DocumentKeyBytes.key(write.key)
                let key = ByteBuffer(bytes: bytes)
                let path = ByteBuffer(bytes: DocumentKeyBytes.path(write.key))
                let change: MaybeDocument
                if let document = write.document {
                    putKeys.append(key)
                    putGroups.append(ByteBuffer(bytes: DocumentKeyBytes.group(write.key.collectionGroup)))
                    putPaths.append(path)
                    putVersions.append(document.version.microseconds)
                    putBodies.append(ByteBuffer(bytes: document.binaryEncoded()))
                    change = .document(document)
                } else {
                    deleteKeys.append(key)
                    change = .noDocument(NoDocument(key: write.key, version: version))
                }
                logPaths.append(path)
                logBodies.append(ByteBuffer(bytes: change.binaryEncoded()))
                written.append((write.key, bytes, write.document))
            }
        }

        /// The index rows to delete and insert, given the written documents' stored bodies
        /// (by key encoding) and the recorded composite indexes.
        func indexChanges(previous: [[UInt8]: [UInt8]], compositeIndexes: [CompositeIndex]) throws -> (delete: FieldIndexRows, insert: FieldIndexRows) {
            var delete = FieldIndexRows(), insert = FieldIndexRows()
            for write in written {
                let old = try previous[write.bytes].map { try Document(binary: $0) }
                FieldIndexRows.changes(of: write.key, from: old, to: write.document, compositeIndexes: compositeIndexes,
                                       deleting: &delete, inserting: &insert)
            }
            return (delete, insert)
        }
    }

    /// A commit request with everything encoded before the transaction starts.
    private struct Prepared: Sendable {
        let outcome: BatchOutcome
        let version: SnapshotVersion?
        let rows: Rows?
        let rejectedWithWrites: Bool
        let readKeys: [(DocumentKey, [UInt8])]
        let readVersions: [DocumentKey: SnapshotVersion]
        let clientID: ByteBuffer
        let batchID: Int64
        let record: ByteBuffer
        let recheck: (@Sendable () async throws(DocError) -> Void)?

        init(_ request: CommitRequest) {
            outcome = request.outcome
            version = outcome.commitVersion
            rows = version.map { Rows(request.writes, version: $0) }
            rejectedWithWrites = version == nil && !request.writes.isEmpty
            readKeys = request.readVersions.keys.map { ($0, DocumentKeyBytes.key($0)) }
            readVersions = request.readVersions
            clientID = ByteBuffer(bytes: Array(outcome.batch.clientID.utf8))
            batchID = Int64(outcome.batch.batchID)
            record = ByteBuffer(bytes: outcome.record)
            recheck = request.recheck
        }
    }

    /// What the statements of a commit name.
    struct Context: Sendable {
        let name: String
        let tenant: TenantID
        let databaseName: String
        let compositeIndexes: PostgresCompositeIndexes
    }

    var commitContext: Context {
        Context(name: name, tenant: tenant, databaseName: database.name, compositeIndexes: compositeIndexes)
    }

    func commit(_ request: CommitRequest) async throws(DocError) -> CommitResult {
        let prepared = Prepared(request)
        let context = commitContext
        let missing = missingState()
        let channel = notifyChannel
        return try await database.transaction("commit batch \(request.outcome.batch) of tenant \(tenant)") { connection, logger in
            let last = try await Self.lock(context, missing: missing, on: connection, logger)
            let (result, now) = try await Self.apply(prepared, after: last, context, on: connection, logger)
            if now != last, let channel {
                try await connection.run("SELECT pg_notify(\(channel), \(context.name + " " + String(now.microseconds)))", logger)
            }
            return result
        }
    }

    /// Group commit (``TenantStore/commitGroup(_:)``): the requests in order in one
    /// transaction — one lock of the tenant's row, each request checked and written as
    /// ``commit(_:)`` does (its checks see the requests before it), one `COMMIT` (one WAL
    /// flush) and one notice. A request whose batch already has an outcome aborts the whole
    /// transaction.
    func commitGroup(_ requests: [CommitRequest]) async throws(DocError) -> SnapshotVersion {
        let prepared = requests.map(Prepared.init)
        let context = commitContext
        let missing = missingState()
        let channel = notifyChannel
        return try await database.transaction("commit \(requests.count) batches of tenant \(tenant)") { connection, logger in
            let first = try await Self.lock(context, missing: missing, on: connection, logger)
            var last = first
            for request in prepared {
                let (result, now) = try await Self.apply(request, after: last, context, on: connection, logger)
                guard case .stored = result else {
                    throw DocError(.aborted, "batch \(request.outcome.batch) already has an outcome")
                }
                last = now
            }
            if last != first, let channel {
                try await connection.run("SELECT pg_notify(\(channel), \(context.name + " " + String(last.microseconds)))", logger)
            }
            return first
        }
    }

    /// Step 1: the tenant's commit lock; returns its last version.
    static func lock(
        _ context: Context, missing: DocError, on connection: PostgresConnection, _ logger: Logger
    ) async throws -> SnapshotVersion {
        let name = context.name
        let locked = try await connection.rows("""
            SELECT last_version FROM doccache_tenants WHERE tenant = \(name) FOR UPDATE
            """, logger)
        guard let row = locked.first else { throw missing }
        return SnapshotVersion(microseconds: try row.decode(Int64.self))
    }

    /// Steps 2 to 4 for one request, in the transaction that holds the lock, the tenant's last
    /// version being `last`; returns the answer and the tenant's last version after it.
    private static func apply(
        _ request: Prepared, after last: SnapshotVersion, _ context: Context, on connection: PostgresConnection, _ logger: Logger
    ) async throws -> (CommitResult, SnapshotVersion) {
        let (name, tenant, databaseName) = (context.name, context.tenant, context.databaseName)
        let (outcome, version, rows, readKeys, readVersions) = (request.outcome, request.version, request.rows, request.readKeys, request.readVersions)
        let (clientID, batchID, record) = (request.clientID, request.batchID, request.record)
        // 2. and 3. in one statement, read after the lock: the batch's outcome, if any, the
        // current versions of the documents the batch read, the stored bodies of the
        // documents it writes (whose index rows change), and the recorded composite indexes
        // (read after the lock: an index recorded before it is seen, and one recorded after
        // it builds this tenant's rows only once this commit is done).
        let checked = try await connection.rows("""
            SELECT 'o', body, 0::BIGINT, NULL::BYTEA FROM doccache_outcomes
            WHERE tenant = \(name) AND client_id = \(clientID) AND batch_id = \(batchID)
            UNION ALL
            SELECT 'd', doc_key, version, NULL::BYTEA FROM doccache_documents
            WHERE tenant = \(name) AND doc_key = ANY(\(readKeys.map { ByteBuffer(bytes: $0.1) }))
            UNION ALL
            SELECT 'b', doc_key, 0::BIGINT, body FROM doccache_documents
            WHERE tenant = \(name) AND doc_key = ANY(\(rows?.written.map { ByteBuffer(bytes: $0.bytes) } ?? []))
            UNION ALL
            SELECT 'x', convert_to(definition, 'UTF8'), 0::BIGINT, NULL::BYTEA FROM doccache_composite_indexes
            """, logger)
        var current: [[UInt8]: Int64] = [:]
        var previous: [[UInt8]: [UInt8]] = [:]
        var definitions: [String] = []
        for row in checked {
            let (kind, bytes, version, body) = try row.decode((String, ByteBuffer, Int64, ByteBuffer?).self)
            switch kind {
            case "o": return (CommitResult.duplicate(try BatchOutcome(record: bytes.bytes)), last)
            case "b": previous[bytes.bytes] = body?.bytes
            case "x": definitions.append(String(decoding: bytes.readableBytesView, as: UTF8.self))
            default: current[bytes.bytes] = version
            }
        }

        guard let version, let rows else {
            // A rejection stores its outcome only.
            guard !request.rejectedWithWrites else {
                throw DocError(.internal, "a rejected batch cannot write documents (tenant \(tenant) of \(databaseName))")
            }
            try await connection.run("""
                INSERT INTO doccache_outcomes (tenant, client_id, batch_id, recorded_at, body)
                VALUES (\(name), \(clientID), \(batchID), \(outcome.recordedAt), \(record))
                """, logger)
            return (CommitResult.stored(previousVersion: last), last)
        }
        guard version > last else {
            throw DocError(.aborted, "commit version \(version) is not above the last version \(last) of tenant \(tenant)")
        }
        for (key, bytes) in readKeys {
            let now = current[bytes].map { SnapshotVersion(microseconds: $0) } ?? .none
            let expected = readVersions[key] ?? .none
            guard now == expected else {
                throw DocError(.aborted, "\(key) changed since the batch read it (version \(expected), now \(now))")
            }
        }
        try await request.recheck?()

        // 4. Documents, index rows, change log, outcome and version. The deletes go first,
        // in a statement of their own: CockroachDB refuses a statement that modifies one
        // table twice.
        let compositeIndexes = try context.compositeIndexes.indexes(definitions, database: databaseName)
        let index = try rows.indexChanges(previous: previous, compositeIndexes: compositeIndexes)
        let gone = index.delete
        if !rows.deleteKeys.isEmpty || !gone.isEmpty {
            try await connection.run("""
                WITH unindexed AS (
                    DELETE FROM doccache_field_index
                    WHERE (tenant, collection, field, kind, value, doc_id) IN (
                        SELECT \(name), x.c, x.f, x.k, x.v, x.d
                        FROM UNNEST(\(gone.collections)::BYTEA[], \(gone.fields)::BYTEA[], \(gone.kinds)::SMALLINT[],
                                    \(gone.values)::BYTEA[], \(gone.documentIDs)::BYTEA[]) AS x (c, f, k, v, d))
                    RETURNING 1
                )
                DELETE FROM doccache_documents WHERE tenant = \(name) AND doc_key = ANY(\(rows.deleteKeys))
                """, logger)
        }
        let added = index.insert
        // One statement, each table modified once (data-modifying CTEs run whether or not
        // they are referenced).
        try await connection.run("""
            WITH put AS (
                INSERT INTO doccache_documents (tenant, doc_key, group_id, path_key, version, body)
                SELECT \(name), w.k, w.g, w.p, w.v, w.b
                FROM UNNEST(\(rows.putKeys)::BYTEA[], \(rows.putGroups)::BYTEA[], \(rows.putPaths)::BYTEA[],
                            \(rows.putVersions)::BIGINT[], \(rows.putBodies)::BYTEA[]) AS w (k, g, p, v, b)
                ON CONFLICT (tenant, doc_key) DO UPDATE
                SET version = excluded.version, body = excluded.body
                RETURNING 1
            ), indexed AS (
                INSERT INTO doccache_field_index (tenant, collection, field, kind, value, doc_id)
                SELECT \(name), x.c, x.f, x.k, x.v, x.d
                FROM UNNEST(\(added.collections)::BYTEA[], \(added.fields)::BYTEA[], \(added.kinds)::SMALLINT[],
                            \(added.values)::BYTEA[], \(added.documentIDs)::BYTEA[]) AS x (c, f, k, v, d)
                ON CONFLICT DO NOTHING
                RETURNING 1
            ), log AS (
                INSERT INTO doccache_change_log (tenant, version, path_key, body)
                SELECT \(name), \(version.microseconds), l.k, l.b
                FROM UNNEST(\(rows.logPaths)::BYTEA[], \(rows.logBodies)::BYTEA[]) AS l (k, b)
                RETURNING 1
            ), outcome AS (
                INSERT INTO doccache_outcomes (tenant, client_id, batch_id, recorded_at, body)
                VALUES (\(name), \(clientID), \(batchID), \(outcome.recordedAt), \(record))
                RETURNING 1
            )
            UPDATE doccache_tenants SET last_version = \(version.microseconds) WHERE tenant = \(name)
            """, logger)
        return (CommitResult.stored(previousVersion: last), version)
    }
}

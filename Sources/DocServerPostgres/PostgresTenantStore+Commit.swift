internal import DocModel
internal import DocServer
internal import PostgresNIO

/// ``TenantStore/commit(_:)`` and ``TenantStore/commitGroup(_:)``: one transaction of at most
/// four statements between `BEGIN` and `COMMIT`, however many requests it stores, in this
/// order —
///
/// 1. lock the tenant's row (`SELECT last_version … FOR UPDATE`): the commits of a tenant
///    queue here, whichever server instance runs them;
/// 2. one statement reads, after the lock, the outcomes the requests' batches already have (a
///    primary-key probe per batch, as ``readAhead(batches:documents:)`` reads them),
///    the current versions of the documents they read, the stored bodies of the documents
///    they write (whose index rows change), and the recorded composite indexes (an index
///    recorded before the lock is seen; one recorded after it builds this tenant's rows only
///    once this commit is done);
/// 3. the checks, in memory, each request against the state the requests before it leave:
///    a batch with an outcome → ``CommitResult/duplicate(_:)`` for a lone commit, `aborted`
///    for a group; a committed batch's version must be above the last one, and every document
///    of ``CommitRequest/readVersions`` must still have the version the batch read
///    (`SnapshotVersion.none`: absent) — else `aborted`, nothing written; then each request's
///    ``CommitRequest/recheck``, which an attachment collection holding the same lock cannot
///    come between (`PostgresTenantStore+Attachments.swift`);
/// 4. the writes, computed from the documents' last state in the requests against their
///    stored state (a document written by two requests is stored once, and logged once per
///    version): the deleted documents and the index rows that went (one statement, when there
///    are any), then the upserted documents, the new index rows (``FieldIndexRows``), the
///    change log rows (the new `Document`, or a `NoDocument` for a hard delete), the outcomes
///    and `last_version` (one statement), whose update, when the version moves, also calls
///    `pg_notify(channel, 'TENANT VERSION')` in ``PostgresServerStore/NoticeMode/listen`` mode,
///    which PostgreSQL delivers when (and only if) the transaction commits.
///
/// The reads of step 2 come after the lock of step 1: at READ COMMITTED (PostgreSQL's default)
/// each statement sees every commit that held the lock before. At REPEATABLE READ or
/// SERIALIZABLE (CockroachDB, YugabyteDB) a concurrent commit makes the lock fail with a
/// serialization error instead: `aborted` too, and the batch is processed again.
extension PostgresTenantStore {
    /// One document write of a request, encoded before the transaction starts.
    private struct EncodedWrite: Sendable {
        let key: DocumentKey
        /// `doc_key`.
        let bytes: [UInt8]
        let path: ByteBuffer
        /// The new document (`nil`: deleted) and its encoding.
        let document: Document?
        let body: ByteBuffer?
        /// The change log row's body.
        let log: ByteBuffer
    }

    /// A commit request with everything encoded before the transaction starts.
    private struct Prepared: Sendable {
        let outcome: BatchOutcome
        let version: SnapshotVersion?
        /// The last write of each key, in order (a key written twice keeps its last write, as
        /// in the embedded store's write batch).
        let writes: [EncodedWrite]
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
            rejectedWithWrites = version == nil && !request.writes.isEmpty
            var encoded: [EncodedWrite] = []
            if let version {
                var last: [DocumentKey: Int] = [:]
                for (i, write) in request.writes.enumerated() { last[write.key] = i }
                for (i, write) in request.writes.enumerated() where last[write.key] == i {
                    let change: MaybeDocument = write.document.map { .document($0) }
                        ?? .noDocument(NoDocument(key: write.key, version: version))
                    encoded.append(EncodedWrite(
                        key: write.key, bytes: DocumentKeyBytes.key(write.key), path: ByteBuffer(bytes: DocumentKeyBytes.path(write.key)),
                        document: write.document, body: write.document.map { ByteBuffer(bytes: $0.binaryEncoded()) },
                        log: ByteBuffer(bytes: change.binaryEncoded())))
                }
            }
            writes = encoded
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
        let prepared = [Prepared(request)]
        let context = commitContext
        let missing = missingState()
        let channel = notifyChannel
        return try await database.transaction("commit batch \(request.outcome.batch) of tenant \(tenant)") { connection, logger in
            let last = try await Self.lock(context, missing: missing, on: connection, logger)
            if let stored = try await Self.store(prepared, after: last, context, channel: channel, on: connection, logger) {
                return .duplicate(stored)
            }
            return .stored(previousVersion: last)
        }
    }

    /// Group commit (``TenantStore/commitGroup(_:)``): the requests in order in one
    /// transaction — one lock of the tenant's row, one read, each request checked as
    /// ``commit(_:)`` checks one against the state the requests before it leave, one write of
    /// them all, one `COMMIT` (one WAL flush) and one notice. A request whose batch already has
    /// an outcome (stored, or earlier in the group) aborts the whole transaction.
    func commitGroup(_ requests: [CommitRequest]) async throws(DocError) -> SnapshotVersion {
        let prepared = requests.map(Prepared.init)
        let context = commitContext
        let missing = missingState()
        let channel = notifyChannel
        return try await database.transaction("commit \(requests.count) batches of tenant \(tenant)") { connection, logger in
            let first = try await Self.lock(context, missing: missing, on: connection, logger)
            if let stored = try await Self.store(prepared, after: first, context, channel: channel, on: connection, logger) {
                throw DocError(.aborted, "batch \(stored.batch) already has an outcome")
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

    /// What step 2 read.
    private struct Stored {
        /// An outcome one of the batches already has.
        var outcome: BatchOutcome?
        /// The versions of the documents read, by key encoding.
        var versions: [[UInt8]: Int64] = [:]
        /// The bodies of the documents written, by key encoding.
        var bodies: [[UInt8]: [UInt8]] = [:]
        var compositeIndexDefinitions: [String] = []
    }

    /// Steps 2 to 4 for `requests`, in order, in the transaction that holds the lock, the
    /// tenant's last version being `last`. Returns an outcome one of their batches already
    /// has, and then writes nothing.
    private static func store(
        _ requests: [Prepared], after last: SnapshotVersion, _ context: Context, channel: String?,
        on connection: PostgresConnection, _ logger: Logger
    ) async throws -> BatchOutcome? {
        let stored = try await read(requests, context, on: connection, logger)
        if let outcome = stored.outcome { return outcome }
        var changes = Changes(last: last)
        for request in requests { try changes.add(request, stored: stored, context) }
        for request in requests { try await request.recheck?() }
        try await changes.write(stored: stored, context, channel: channel, on: connection, logger)
        return nil
    }

    /// Step 2: one statement, read after the lock.
    private static func read(
        _ requests: [Prepared], _ context: Context, on connection: PostgresConnection, _ logger: Logger
    ) async throws -> Stored {
        let name = context.name
        let readKeys = Set(requests.flatMap { $0.readKeys.map(\.1) }).map { ByteBuffer(bytes: $0) }
        let writtenKeys = Set(requests.flatMap { $0.writes.map(\.bytes) }).map { ByteBuffer(bytes: $0) }
        let rows = try await connection.rows("""
            SELECT 'o', o.body, 0::BIGINT, NULL::BYTEA
            FROM UNNEST(\(requests.map(\.clientID))::BYTEA[], \(requests.map(\.batchID))::BIGINT[]) AS b (c, n),
            LATERAL (SELECT body FROM doccache_outcomes
                     WHERE tenant = \(name) AND client_id = b.c AND batch_id = b.n LIMIT 1) o
            UNION ALL
            SELECT 'd', doc_key, version, NULL::BYTEA FROM doccache_documents
            WHERE tenant = \(name) AND doc_key = ANY(\(readKeys))
            UNION ALL
            SELECT 'b', doc_key, 0::BIGINT, body FROM doccache_documents
            WHERE tenant = \(name) AND doc_key = ANY(\(writtenKeys))
            UNION ALL
            SELECT 'x', convert_to(definition, 'UTF8'), 0::BIGINT, NULL::BYTEA FROM doccache_composite_indexes
            """, logger)
        var stored = Stored()
        for row in rows {
            let (kind, bytes, version, body) = try row.decode((String, ByteBuffer, Int64, ByteBuffer?).self)
            switch kind {
            case "o": stored.outcome = try BatchOutcome(record: bytes.bytes)
            case "b": stored.bodies[bytes.bytes] = body?.bytes
            case "x": stored.compositeIndexDefinitions.append(String(decoding: bytes.readableBytesView, as: UTF8.self))
            default: stored.versions[bytes.bytes] = version
            }
        }
        return stored
    }

    /// Step 3's checks, request by request, and what step 4 writes.
    private struct Changes {
        /// The tenant's last version after the requests added so far.
        var last: SnapshotVersion
        /// The last write of each key, and the keys in the order first written.
        private var latest: [[UInt8]: EncodedWrite] = [:]
        private var keys: [[UInt8]] = []
        private var batches = Set<BatchKey>()
        private var logVersions: [Int64] = [], logPaths: [ByteBuffer] = [], logBodies: [ByteBuffer] = []
        private var outcomeClients: [ByteBuffer] = [], outcomeBatches: [Int64] = [], outcomeTimes: [Int64] = []
        private var outcomeBodies: [ByteBuffer] = []

        init(last: SnapshotVersion) { self.last = last }

        /// Checks `request` against the state the requests before it leave, and adds its rows.
        mutating func add(_ request: Prepared, stored: Stored, _ context: Context) throws {
            guard batches.insert(request.outcome.batch).inserted else {
                throw DocError(.aborted, "batch \(request.outcome.batch) is twice in one group")
            }
            if let version = request.version {
                guard version > last else {
                    throw DocError(.aborted, "commit version \(version) is not above the last version \(last) of tenant \(context.tenant)")
                }
            } else if request.rejectedWithWrites {
                throw DocError(.internal, "a rejected batch cannot write documents (tenant \(context.tenant) of \(context.databaseName))")
            }
            // A rejection rests on the documents it read as a commit does.
            for (key, bytes) in request.readKeys {
                let now: SnapshotVersion
                if let written = latest[bytes] {
                    now = written.document?.version ?? .none
                } else {
                    now = stored.versions[bytes].map { SnapshotVersion(microseconds: $0) } ?? .none
                }
                let expected = request.readVersions[key] ?? .none
                guard now == expected else {
                    throw DocError(.aborted, "\(key) changed since the batch read it (version \(expected), now \(now))")
                }
            }
            if let version = request.version {
                for write in request.writes {
                    if latest.updateValue(write, forKey: write.bytes) == nil { keys.append(write.bytes) }
                    logVersions.append(version.microseconds)
                    logPaths.append(write.path)
                    logBodies.append(write.log)
                }
                last = version
            }
            outcomeClients.append(request.clientID)
            outcomeBatches.append(request.batchID)
            outcomeTimes.append(request.outcome.recordedAt)
            outcomeBodies.append(request.record)
        }

        /// Step 4: the documents' last states against their stored ones; the notice on
        /// `channel` (none when `nil`) when the tenant's last version moves.
        func write(stored: Stored, _ context: Context, channel: String?, on connection: PostgresConnection, _ logger: Logger) async throws {
            let name = context.name
            let compositeIndexes = try context.compositeIndexes.indexes(stored.compositeIndexDefinitions, database: context.databaseName)
            var gone = FieldIndexRows(), added = FieldIndexRows()
            var putKeys: [ByteBuffer] = [], putGroups: [ByteBuffer] = [], putPaths: [ByteBuffer] = []
            var putVersions: [Int64] = [], putBodies: [ByteBuffer] = [], deleteKeys: [ByteBuffer] = []
            for bytes in keys {
                guard let write = latest[bytes] else { continue }
                let old = try stored.bodies[bytes].map { try Document(binary: $0) }
                FieldIndexRows.changes(of: write.key, from: old, to: write.document, compositeIndexes: compositeIndexes,
                                       deleting: &gone, inserting: &added)
                if let document = write.document, let body = write.body {
                    putKeys.append(ByteBuffer(bytes: bytes))
                    putGroups.append(ByteBuffer(bytes: DocumentKeyBytes.group(write.key.collectionGroup)))
                    putPaths.append(write.path)
                    putVersions.append(document.version.microseconds)
                    putBodies.append(body)
                } else {
                    deleteKeys.append(ByteBuffer(bytes: bytes))
                }
            }
            // The deletes go first, in a statement of their own: CockroachDB refuses a
            // statement that modifies one table twice.
            if !deleteKeys.isEmpty || !gone.isEmpty {
                try await connection.run("""
                    WITH unindexed AS (
                        DELETE FROM doccache_field_index
                        WHERE (tenant, collection, field, kind, value, doc_id) IN (
                            SELECT \(name), x.c, x.f, x.k, x.v, x.d
                            FROM UNNEST(\(gone.collections)::BYTEA[], \(gone.fields)::BYTEA[], \(gone.kinds)::SMALLINT[],
                                        \(gone.values)::BYTEA[], \(gone.documentIDs)::BYTEA[]) AS x (c, f, k, v, d))
                        RETURNING 1
                    )
                    DELETE FROM doccache_documents WHERE tenant = \(name) AND doc_key = ANY(\(deleteKeys))
                    """, logger)
            }
            // One statement, each table modified once (data-modifying CTEs run whether or not
            // they are referenced).
            try await connection.run("""
                WITH put AS (
                    INSERT INTO doccache_documents (tenant, doc_key, group_id, path_key, version, body)
                    SELECT \(name), w.k, w.g, w.p, w.v, w.b
                    FROM UNNEST(\(putKeys)::BYTEA[], \(putGroups)::BYTEA[], \(putPaths)::BYTEA[],
                                \(putVersions)::BIGINT[], \(putBodies)::BYTEA[]) AS w (k, g, p, v, b)
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
                    SELECT \(name), l.v, l.k, l.b
                    FROM UNNEST(\(logVersions)::BIGINT[], \(logPaths)::BYTEA[], \(logBodies)::BYTEA[]) AS l (v, k, b)
                    RETURNING 1
                ), outcome AS (
                    INSERT INTO doccache_outcomes (tenant, client_id, batch_id, recorded_at, body)
                    SELECT \(name), o.c, o.n, o.t, o.b
                    FROM UNNEST(\(outcomeClients)::BYTEA[], \(outcomeBatches)::BIGINT[], \(outcomeTimes)::BIGINT[],
                                \(outcomeBodies)::BYTEA[]) AS o (c, n, t, b)
                    RETURNING 1
                )
                UPDATE doccache_tenants SET last_version = \(last.microseconds)
                WHERE tenant = \(name) AND last_version <> \(last.microseconds)
                RETURNING CASE WHEN \(channel ?? "") = '' THEN NULL
                               ELSE pg_notify(\(channel ?? ""), \(name + " " + String(last.microseconds))) END
                """, logger)
        }
    }
}

internal import DocModel
internal import DocServer
internal import PostgresNIO

/// One tenant of a ``PostgresServerStore``: every statement names the tenant (the first
/// column of every primary key), so a tenant store reads and writes its own rows only.
///
/// Reads are single statements that join the tenant's row, so the documents and the version
/// they report come from one snapshot; a query is one read-only transaction
/// (`PostgresTenantStore+Query.swift`). ``commit(_:)`` is one transaction that starts by
/// locking the tenant's row (`SELECT … FOR UPDATE`): the commits of a tenant are serialized
/// by the database, across every server instance (see `PostgresTenantStore+Commit.swift`).
final class PostgresTenantStore: TenantStore {
    let tenant: TenantID
    let database: PostgresDatabase
    /// The `pg_notify` channel commits announce themselves on (`nil`: no `NOTIFY`).
    let notifyChannel: String?
    /// The composite index definitions parsed so far (shared by the store's tenants).
    let compositeIndexes: PostgresCompositeIndexes

    init(tenant: TenantID, database: PostgresDatabase, notifyChannel: String?, compositeIndexes: PostgresCompositeIndexes) {
        self.tenant = tenant
        self.database = database
        self.notifyChannel = notifyChannel
        self.compositeIndexes = compositeIndexes
    }

    var name: String { tenant.rawValue }

    func missingState() -> DocError {
        DocError(.dataLoss, "the state of tenant \(tenant) is missing from \(database.name)")
    }

    /// The tenant's row, with the incarnation a restore replaced if there was one (its
    /// `doccache_meta` row, ``PostgresServerStore/reincarnateAfterRestore()``).
    func state() async throws(DocError) -> TenantState {
        let rows = try await database.rows("read the state of tenant \(tenant)", """
            SELECT t.last_version, t.incarnation, t.log_floor, m.value FROM doccache_tenants t
            LEFT JOIN doccache_meta m ON m.name = \(PostgresServerStore.previousIncarnationKey(tenant))
            WHERE t.tenant = \(name)
            """)
        guard let row = rows.first else { throw missingState() }
        let (last, incarnation, floor, previous) = try PostgresErrorMapping.decode("the state of tenant \(tenant)", in: database.name) {
            try row.decode((Int64, Int64, Int64, String?).self)
        }
        return try state(last: last, incarnation: incarnation, floor: floor, previous: previous)
    }

    /// The state from the columns of the tenant's row and its `doccache_meta` row.
    private func state(last: Int64, incarnation: Int64, floor: Int64, previous: String?) throws(DocError) -> TenantState {
        // Commits count on from the last version: a damaged row must not make the next one
        // overflow (the embedded store checks its state record the same way).
        guard last >= 0, last < Int64.max else {
            throw DocError(.dataLoss, "the state of tenant \(tenant) in \(database.name) is damaged: last version \(last)")
        }
        return TenantState(lastVersion: SnapshotVersion(microseconds: last), incarnation: UInt64(bitPattern: incarnation),
                    changeLogFloor: SnapshotVersion(microseconds: floor),
                    previousIncarnation: try previous.map { text throws(DocError) in
                        try PostgresServerStore.previousIncarnation(text, tenant: tenant, database: database.name)
                    })
    }

    func documents(_ keys: [DocumentKey]) async throws(DocError) -> DocumentsRead {
        let encoded = keys.map { ByteBuffer(bytes: DocumentKeyBytes.key($0)) }
        let rows = try await database.rows("read documents of tenant \(tenant)", """
            SELECT t.last_version, d.body FROM doccache_tenants t
            LEFT JOIN doccache_documents d ON d.tenant = t.tenant AND d.doc_key = ANY(\(encoded))
            WHERE t.tenant = \(name)
            """)
        let (version, bodies) = try versionAndBodies(rows)
        var found: [DocumentKey: Document] = [:]
        found.reserveCapacity(bodies.count)
        for body in bodies {
            let document = try Document(binary: body)
            found[document.key] = document
        }
        return DocumentsRead(version: version, documents: found)
    }

    func changes(after version: SnapshotVersion, maxEntries: Int) async throws(DocError) -> ChangeLogRead {
        // One more than allowed: finding it means "too many".
        let limit = Int64(max(0, min(maxEntries, Int(Int32.max)))) + 1
        let rows = try await database.rows("read the change log of tenant \(tenant)", """
            SELECT t.last_version, t.log_floor, l.version, l.body FROM doccache_tenants t
            LEFT JOIN (
                SELECT version, path_key, body FROM doccache_change_log
                WHERE tenant = \(name) AND version > \(version.microseconds)
                ORDER BY version, path_key LIMIT \(limit)
            ) l ON TRUE
            WHERE t.tenant = \(name)
            ORDER BY l.version, l.path_key
            """)
        guard let first = rows.first else { throw missingState() }
        let (last, floor) = try PostgresErrorMapping.decode("the change log of tenant \(tenant)", in: database.name) {
            let (last, floor, _, _) = try first.decode((Int64, Int64, Int64?, ByteBuffer?).self)
            return (SnapshotVersion(microseconds: last), SnapshotVersion(microseconds: floor))
        }
        guard version >= floor else {
            return .unavailable("version \(version) is older than the change log, which starts after \(floor)")
        }
        guard version <= last else {
            return .unavailable("version \(version) is newer than the last commit \(last)")
        }
        var changes: [ChangeLogEntry] = []
        for row in rows {
            let body = try PostgresErrorMapping.decode("the change log of tenant \(tenant)", in: database.name) { try row.decode((Int64, Int64, Int64?, ByteBuffer?).self).3 }
            guard let body else { continue }
            guard changes.count < maxEntries else {
                return .unavailable("more than \(maxEntries) changes after version \(version)")
            }
            let document = try MaybeDocument(binary: body.bytes)
            changes.append(ChangeLogEntry(version: document.version, document: document))
        }
        return .complete(changes, through: last)
    }

    func scan(after: DocumentKey?, limit: Int) async throws(DocError) -> [Document] {
        let start = ByteBuffer(bytes: after.map(DocumentKeyBytes.key) ?? [])
        let rows = try await database.rows("scan the documents of tenant \(tenant)", """
            SELECT body FROM doccache_documents
            WHERE tenant = \(name) AND doc_key > \(start)
            ORDER BY doc_key LIMIT \(Int64(max(0, limit)))
            """)
        return try PostgresQueryReader.documents(rows, database: database.name)
    }

    func outcome(of batch: BatchKey) async throws(DocError) -> BatchOutcome? {
        let rows = try await database.rows("read the outcome of batch \(batch) of tenant \(tenant)", """
            SELECT body FROM doccache_outcomes
            WHERE tenant = \(name) AND client_id = \(ByteBuffer(bytes: Array(batch.clientID.utf8))) AND batch_id = \(Int64(batch.batchID))
            """)
        guard let row = rows.first else { return nil }
        let body = try PostgresErrorMapping.decode("a batch outcome", in: database.name) { try row.decode(ByteBuffer.self) }
        return try BatchOutcome(record: body.bytes)
    }

    func laterOutcomeExists(after batch: BatchKey) async throws(DocError) -> Bool {
        let rows = try await database.rows("look for a later outcome than batch \(batch) of tenant \(tenant)", """
            SELECT 1 FROM doccache_outcomes
            WHERE tenant = \(name) AND client_id = \(ByteBuffer(bytes: Array(batch.clientID.utf8))) AND batch_id > \(Int64(batch.batchID))
            LIMIT 1
            """)
        return !rows.isEmpty
    }

    /// One statement (one snapshot): the state as ``state()`` reads it, a primary-key probe of
    /// the outcomes per batch (the first of the client's outcomes from the batch's own on: the
    /// batch's, or a later one, ``laterOutcomeExists(after:)``), whatever the table's
    /// statistics say (a lateral subquery with `LIMIT` is not flattened into a join, so it is
    /// never a filter over all of the tenant's outcomes, which `(client_id, batch_id) IN (…)`
    /// became while the table was young: 1.8 million rows fetched to sync 10,000 batches), and
    /// the documents by key.
    func readAhead(batches: [BatchKey], documents keys: [DocumentKey]) async throws(DocError) -> GroupReadAhead {
        let clients = batches.map { ByteBuffer(bytes: Array($0.clientID.utf8)) }
        let numbers = batches.map { Int64($0.batchID) }
        let encoded = keys.map { ByteBuffer(bytes: DocumentKeyBytes.key($0)) }
        let rows = try await database.rows("read ahead for \(batches.count) batches of tenant \(tenant)", """
            SELECT 's', t.last_version, t.incarnation, t.log_floor, convert_to(m.value, 'UTF8') FROM doccache_tenants t
            LEFT JOIN doccache_meta m ON m.name = \(PostgresServerStore.previousIncarnationKey(tenant))
            WHERE t.tenant = \(name)
            UNION ALL
            SELECT 'o', o.batch_id, b.n, 0::BIGINT, o.body FROM UNNEST(\(clients)::BYTEA[], \(numbers)::BIGINT[]) AS b (c, n),
            LATERAL (SELECT batch_id, body FROM doccache_outcomes
                     WHERE tenant = \(name) AND client_id = b.c AND batch_id >= b.n ORDER BY batch_id LIMIT 1) o
            UNION ALL
            SELECT 'd', 0::BIGINT, 0::BIGINT, 0::BIGINT, body FROM doccache_documents
            WHERE tenant = \(name) AND doc_key = ANY(\(encoded))
            """)
        var state: TenantState?
        var outcomes: [BatchKey: BatchOutcome] = [:]
        var processedBefore = Set<BatchKey>()
        var documents: [DocumentKey: Document] = [:]
        for row in rows {
            let (kind, last, incarnation, floor, bytes) = try PostgresErrorMapping.decode("a read-ahead row", in: database.name) {
                try row.decode((String, Int64, Int64, Int64, ByteBuffer?).self)
            }
            switch kind {
            case "s":
                state = try self.state(last: last, incarnation: incarnation, floor: floor,
                                       previous: bytes.map { String(decoding: $0.readableBytesView, as: UTF8.self) })
            case "o":
                // `last`: the batch id found; `incarnation`: the one asked for.
                guard let bytes else { continue }
                let outcome = try BatchOutcome(record: bytes.bytes)
                if last == incarnation {
                    outcomes[outcome.batch] = outcome
                } else {
                    processedBefore.insert(BatchKey(clientID: outcome.batch.clientID, batchID: Int(incarnation)))
                }
            default:
                guard let bytes else { continue }
                let document = try Document(binary: bytes.bytes)
                documents[document.key] = document
            }
        }
        guard let state else { throw missingState() }
        return GroupReadAhead(state: state, outcomes: outcomes, documents: documents, processedBefore: processedBefore)
    }

    func pruneOutcomes(recordedBefore cutoff: Int64) async throws(DocError) -> Int {
        let rows = try await database.rows("prune the outcomes of tenant \(tenant)", """
            WITH gone AS (
                DELETE FROM doccache_outcomes o WHERE tenant = \(name) AND recorded_at < \(cutoff)
                AND EXISTS (SELECT 1 FROM doccache_outcomes later
                            WHERE later.tenant = o.tenant AND later.client_id = o.client_id AND later.batch_id > o.batch_id)
                RETURNING 1
            )
            SELECT count(*) FROM gone
            """)
        return try count(rows)
    }

    func pruneChangeLog(before cutoff: SnapshotVersion) async throws(DocError) -> Int {
        let name = self.name
        let tenant = self.tenant
        let missing = missingState()
        return try await database.transaction("prune the change log of tenant \(tenant)") { connection, logger in
            let state = try await connection.rows("""
                SELECT last_version, log_floor FROM doccache_tenants WHERE tenant = \(name) FOR UPDATE
                """, logger)
            guard let row = state.first else { throw missing }
            let (last, floor) = try row.decode((Int64, Int64).self)
            let deleted = try await connection.rows("""
                WITH gone AS (
                    DELETE FROM doccache_change_log WHERE tenant = \(name) AND version < \(cutoff.microseconds) RETURNING 1
                )
                SELECT count(*) FROM gone
                """, logger)
            let newFloor = min(cutoff.microseconds - 1, last)
            if newFloor > floor {
                try await connection.run("""
                    UPDATE doccache_tenants SET log_floor = \(newFloor) WHERE tenant = \(name)
                    """, logger)
            }
            return Int(try deleted.first?.decode(Int64.self) ?? 0)
        }
    }

    /// A row of `doccache_meta`, `CHORE_claim:TENANT` (`maintenance_claim:acme`), holds the
    /// time of the chore's last claim; the upsert replaces it only when it is at least
    /// `interval` old, so of instances claiming at once one inserts or updates it and the
    /// others find it fresh.
    func claim(_ chore: TenantChore, at now: Int64, every interval: Int64) async throws(DocError) -> Bool {
        let rows = try await database.rows("claim the \(chore) of tenant \(tenant)", """
            INSERT INTO doccache_meta (name, value) VALUES (\(PostgresServerStore.claimKey(chore, tenant)), \(String(now)))
            ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value
            WHERE doccache_meta.value::BIGINT <= \(now - interval)
            RETURNING 1
            """)
        return !rows.isEmpty
    }

    /// Deletes the claim's row if it still holds `time`.
    func releaseClaim(_ chore: TenantChore, claimedAt time: Int64) async throws(DocError) {
        _ = try await database.rows("release the claim of the \(chore) of tenant \(tenant)", """
            DELETE FROM doccache_meta WHERE name = \(PostgresServerStore.claimKey(chore, tenant)) AND value = \(String(time))
            """)
    }

    // MARK: Row helpers

    /// The tenant's version and the non-null bodies of rows `(last_version, body?)`.
    func versionAndBodies(_ rows: [PostgresRow]) throws(DocError) -> (SnapshotVersion, [[UInt8]]) {
        guard !rows.isEmpty else { throw missingState() }
        var version: Int64 = 0
        var bodies: [[UInt8]] = []
        bodies.reserveCapacity(rows.count)
        for row in rows {
            let (last, body) = try PostgresErrorMapping.decode("documents of tenant \(tenant)", in: database.name) { try row.decode((Int64, ByteBuffer?).self) }
            version = last
            if let body { bodies.append(body.bytes) }
        }
        return (SnapshotVersion(microseconds: version), bodies)
    }

    /// The value of a `SELECT count(*)`.
    func count(_ rows: [PostgresRow]) throws(DocError) -> Int {
        guard let row = rows.first else { return 0 }
        return Int(try PostgresErrorMapping.decode("a count", in: database.name) { try row.decode(Int64.self) })
    }
}

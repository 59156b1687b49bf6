internal import DocModel
internal import DocServer
internal import Logging
internal import PostgresNIO

/// The store's tables, created on first start and versioned in `doccache_meta`
/// (`name = 'schema_version'`).
///
/// Every table has the tenant in its primary key (first column): tenants share tables but no
/// row, and every statement of a ``PostgresTenantStore`` names its tenant.
///
/// ```
/// doccache_meta       (name TEXT PK, value TEXT)   -- schema_version; previous_incarnation:TENANT after a restore; CHORE_claim:TENANT (maintenance, request_sweep)
/// doccache_tenants    (tenant TEXT PK, last_version BIGINT, incarnation BIGINT, log_floor BIGINT)
/// doccache_documents  (tenant, doc_key BYTEA, group_id BYTEA, path_key BYTEA, version BIGINT, body BYTEA)
///                     PK (tenant, doc_key); INDEX doccache_documents_group (tenant, group_id, path_key)
/// doccache_change_log (tenant, version BIGINT, path_key BYTEA, body BYTEA)  PK (tenant, version, path_key)
/// doccache_outcomes   (tenant, client_id BYTEA, batch_id BIGINT, recorded_at BIGINT, body BYTEA)
///                     PK (tenant, client_id, batch_id); INDEX doccache_outcomes_age (tenant, recorded_at)
/// doccache_field_index (tenant, collection BYTEA, field BYTEA, kind SMALLINT, value BYTEA, doc_id BYTEA)
///                     PK (tenant, collection, field, kind, value, doc_id)          -- version 2
/// doccache_composite_indexes (id TEXT PK, definition TEXT, ready BOOLEAN)          -- version 3
/// doccache_blobs      (tenant, id BYTEA, size BIGINT, content_type TEXT, received BIGINT,
///                     complete BOOLEAN, created_at BIGINT)  PK (tenant, id)               -- version 5
/// doccache_blob_parts (tenant, id BYTEA, start BIGINT, bytes BYTEA)  PK (tenant, id, start)
/// doccache_blob_locks (tenant, id BYTEA, holder BYTEA, token BYTEA, expires_at BIGINT)  PK (tenant, id)
/// ```
///
/// Version 5's tables are ``PostgresBlobStore``'s: attachments kept in the database.
///
/// Version 4 adds no table: the attachment references are rows of `doccache_field_index`
/// (kind 8, ``FieldIndexRows/referenceKind``), so the attachment collector asks whether an
/// attachment is referenced with one probe of the primary key.
///
/// `doccache_composite_indexes` records the declared composite indexes
/// (``PostgresCompositeIndexes``): every commit maintains the rows of each (ready or being
/// built), queries read the ready ones.
///
/// `doccache_field_index` holds the query indexes (``FieldIndexRows``): one row per entry of
/// ``DocumentIndexEntries`` of every stored document, written in the commit that writes the
/// document. Its primary key is the index a query reads: one range of it per (collection,
/// field, kind), in (value, document id) order — keyset pagination, no sort.
///
/// `doc_key` and `path_key` are ordered code (``DocumentKeyBytes``): a collection's documents
/// are a `doc_key` range, a collection group's under a parent a `path_key` range of its
/// `group_id`, and the change log is in the embedded store's order (version, then path).
/// `body` is DocModel's binary encoding
/// (`Document`, `MaybeDocument`) or the outcome record (`BatchOutcome.record`, shared with the embedded store). Every
/// order-significant key is `bytea` (memcmp order on every engine below), never collated text;
/// names that come from clients (collection ids, client ids) are `bytea` too, since `text`
/// cannot hold NUL. Tenant names (no control characters) are `text`, compared only for equality.
///
/// SQL relied on, chosen to run unchanged on PostgreSQL (≥ 12), CockroachDB and YugabyteDB
/// (YSQL):
/// - `CREATE TABLE/INDEX IF NOT EXISTS`, composite primary keys, `BIGINT`, `BYTEA`, `TEXT`;
///   every migration statement is idempotent, so an engine that runs DDL outside the
///   transaction (YugabyteDB) or a crash half-way only repeats it;
/// - `SELECT … FOR UPDATE` (the tenant row: the commit lock), `INSERT … ON CONFLICT DO NOTHING`
///   and `ON CONFLICT (…) DO UPDATE SET … = excluded.…`;
/// - `UNNEST` of several array parameters (`$n::bytea[]`, `$n::bigint[]`), `= ANY($n)`;
/// - `LEFT JOIN` of a subquery with `LIMIT`, `UNION ALL`, `count(*)`;
/// - data-modifying CTEs (`WITH x AS (INSERT|DELETE … RETURNING 1) UPDATE …`), each table
///   modified at most once per statement (CockroachDB refuses more);
/// - `BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY` (CockroachDB runs it as
///   SERIALIZABLE unless repeatable read is enabled: still one snapshot);
/// - row-value comparisons (`(value, doc_id) > ($1, $2)`, keyset pagination) and
///   `(…) IN (SELECT … FROM UNNEST(…))`;
/// - `LEFT JOIN LATERAL (… LIMIT 1) ON TRUE`, `row_number() OVER (ORDER BY …)`, scalar
///   subqueries in `CASE`, `bytea || bytea` (the probing index walk, `PostgresQueryReader`);
/// - `pg_notify(channel, payload)` and `LISTEN`, in ``PostgresServerStore/NoticeMode/listen``
///   mode only (CockroachDB and YugabyteDB use ``PostgresServerStore/NoticeMode/poll(milliseconds:)``).
///
/// - `set_config('synchronous_commit', 'off', TRUE)` and `ALTER … SET STORAGE EXTERNAL`, for
///   the attachment parts of ``PostgresBlobStore`` only.
///
/// Not used: PL/pgSQL, triggers, advisory locks, sequences, `pg_*` functions (but
/// `pg_notify`), `SKIP LOCKED`, collations, `SERIAL`/identity columns, JSON types.
enum PostgresSchema {
    /// One step of the schema: statements, then (optionally) code that fills what the
    /// statements created from the rows already there.
    struct Migration: Sendable {
        var statements: [PostgresQuery]
        var backfill: (@Sendable (PostgresConnection, Logger) async throws -> Void)? = nil
    }

    /// The schema version this code reads and writes.
    static let version = 5

    /// The migrations: `migrations[n - 1]` takes the schema from version `n - 1` to `n`.
    /// Append only; never edit a released migration.
    static let migrations: [Migration] = [
        Migration(statements: [
            """
            CREATE TABLE IF NOT EXISTS doccache_tenants (
                tenant TEXT NOT NULL PRIMARY KEY,
                last_version BIGINT NOT NULL,
                incarnation BIGINT NOT NULL,
                log_floor BIGINT NOT NULL
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS doccache_documents (
                tenant TEXT NOT NULL,
                doc_key BYTEA NOT NULL,
                group_id BYTEA NOT NULL,
                path_key BYTEA NOT NULL,
                version BIGINT NOT NULL,
                body BYTEA NOT NULL,
                PRIMARY KEY (tenant, doc_key)
            )
            """,
            "CREATE INDEX IF NOT EXISTS doccache_documents_group ON doccache_documents (tenant, group_id, path_key)",
            """
            CREATE TABLE IF NOT EXISTS doccache_change_log (
                tenant TEXT NOT NULL,
                version BIGINT NOT NULL,
                path_key BYTEA NOT NULL,
                body BYTEA NOT NULL,
                PRIMARY KEY (tenant, version, path_key)
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS doccache_outcomes (
                tenant TEXT NOT NULL,
                client_id BYTEA NOT NULL,
                batch_id BIGINT NOT NULL,
                recorded_at BIGINT NOT NULL,
                body BYTEA NOT NULL,
                PRIMARY KEY (tenant, client_id, batch_id)
            )
            """,
            "CREATE INDEX IF NOT EXISTS doccache_outcomes_age ON doccache_outcomes (tenant, recorded_at)",
        ]),
        // 2: query indexes, filled from the documents already stored.
        Migration(statements: [
            """
            CREATE TABLE IF NOT EXISTS doccache_field_index (
                tenant TEXT NOT NULL,
                collection BYTEA NOT NULL,
                field BYTEA NOT NULL,
                kind SMALLINT NOT NULL,
                value BYTEA NOT NULL,
                doc_id BYTEA NOT NULL,
                PRIMARY KEY (tenant, collection, field, kind, value, doc_id)
            )
            """,
        ], backfill: backfillFieldIndex),
        // 3: the declared composite indexes (PostgresCompositeIndexes); their rows live in
        // doccache_field_index (kinds 4 and 6).
        Migration(statements: [
            """
            CREATE TABLE IF NOT EXISTS doccache_composite_indexes (
                id TEXT NOT NULL PRIMARY KEY,
                definition TEXT NOT NULL,
                ready BOOLEAN NOT NULL
            )
            """,
        ]),
        // 4: attachment references, rows of doccache_field_index (kind 8), filled from the
        // documents already stored.
        Migration(statements: [], backfill: backfillAttachmentReferences),
        // 5: attachments stored in the database (PostgresBlobStore), for instances that share
        // no file system.
        Migration(statements: [
            """
            CREATE TABLE IF NOT EXISTS doccache_blobs (
                tenant TEXT NOT NULL,
                id BYTEA NOT NULL,
                size BIGINT NOT NULL,
                content_type TEXT NOT NULL,
                received BIGINT NOT NULL,
                complete BOOLEAN NOT NULL,
                created_at BIGINT NOT NULL,
                PRIMARY KEY (tenant, id)
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS doccache_blob_parts (
                tenant TEXT NOT NULL,
                id BYTEA NOT NULL,
                start BIGINT NOT NULL,
                bytes BYTEA NOT NULL,
                PRIMARY KEY (tenant, id, start)
            )
            """,
            // Photos and PDFs do not compress: PostgreSQL stores the parts without trying.
            "ALTER TABLE doccache_blob_parts ALTER COLUMN bytes SET STORAGE EXTERNAL",
            """
            CREATE TABLE IF NOT EXISTS doccache_blob_locks (
                tenant TEXT NOT NULL,
                id BYTEA NOT NULL,
                holder BYTEA NOT NULL,
                token BYTEA NOT NULL,
                expires_at BIGINT NOT NULL,
                PRIMARY KEY (tenant, id)
            )
            """,
        ]),
    ]

    /// Writes the index rows of every stored document, 500 documents per statement (run
    /// inside the migration's transaction, with the meta row locked: no commit of this
    /// version's code runs before it is done). An older server checks the schema version only
    /// when it starts, so it refuses to start on version 2 — but an older instance already
    /// running would go on committing without index rows: stop every one before upgrading.
    static func backfillFieldIndex(_ connection: PostgresConnection, logger: Logger) async throws {
        try await backfill(connection, logger: logger, built: "query indexes built") { index, document in
            index.add(FieldIndexRows.entries(of: document), of: document.key)
        }
    }

    /// Writes the attachment reference rows of every stored document, as
    /// ``backfillFieldIndex(_:logger:)`` does the query index rows (the same caveat for older
    /// instances already running: version 4).
    static func backfillAttachmentReferences(_ connection: PostgresConnection, logger: Logger) async throws {
        try await backfill(connection, logger: logger, built: "attachment references built") { index, document in
            index.addReferences(document.keptAttachments, of: document.key)
        }
    }

    /// Reads every stored document, 500 per statement, and inserts the rows `add` gives for
    /// each.
    private static func backfill(_ connection: PostgresConnection, logger: Logger, built message: Logger.Message,
                                 _ add: (inout FieldIndexRows, Document) -> Void) async throws {
        var after: (tenant: String, key: ByteBuffer) = ("", ByteBuffer())
        var total = 0
        while true {
            let rows = try await connection.rows("""
                SELECT tenant, doc_key, body FROM doccache_documents
                WHERE (tenant, doc_key) > (\(after.tenant), \(after.key))
                ORDER BY tenant, doc_key LIMIT 500
                """, logger)
            guard !rows.isEmpty else { break }
            var tenants: [String] = []
            var index = FieldIndexRows()
            for row in rows {
                let (tenant, key, body) = try row.decode((String, ByteBuffer, ByteBuffer).self)
                after = (tenant, key)
                let document = try Document(binary: body.bytes)
                let before = index.count
                add(&index, document)
                tenants.append(contentsOf: repeatElement(tenant, count: index.count - before))
            }
            if !index.isEmpty {
                try await connection.run("""
                    INSERT INTO doccache_field_index (tenant, collection, field, kind, value, doc_id)
                    SELECT * FROM UNNEST(\(tenants)::TEXT[], \(index.collections)::BYTEA[], \(index.fields)::BYTEA[],
                                         \(index.kinds)::SMALLINT[], \(index.values)::BYTEA[], \(index.documentIDs)::BYTEA[])
                    ON CONFLICT DO NOTHING
                    """, logger)
            }
            total += rows.count
        }
        if total > 0 { logger.info(message, metadata: ["documents": "\(total)"]) }
    }

    static let versionKey = "schema_version"

    /// Brings the database to ``version``, one migration per transaction, with the meta row
    /// locked so that instances starting together migrate once.
    ///
    /// - Throws: `failedPrecondition` when the database has a newer schema than this code
    ///   knows; `unavailable` when the database fails.
    static func migrate(_ connection: PostgresConnection, database: String, logger: Logger) async throws(DocError) {
        func map(_ error: any Error) -> DocError {
            PostgresErrorMapping.map(error, doing: "schema set-up", database: database)
        }
        // Creating the meta table races with another instance doing the same (PostgreSQL's
        // catalog can report a duplicate even with IF NOT EXISTS): try again.
        var attempt = 0
        while true {
            do {
                try await connection.run(
                    "CREATE TABLE IF NOT EXISTS doccache_meta (name TEXT NOT NULL PRIMARY KEY, value TEXT NOT NULL)", logger)
                try await connection.run(
                    "INSERT INTO doccache_meta (name, value) VALUES (\(versionKey), '0') ON CONFLICT DO NOTHING", logger)
                break
            } catch {
                attempt += 1
                if attempt >= 5 { throw map(error) }
                try? await Task.sleep(for: .milliseconds(50 * attempt))
            }
        }
        while true {
            let done: Bool
            do {
                try await connection.run("BEGIN", logger)
                do {
                    done = try await step(connection, database: database, logger: logger)
                    try await connection.run("COMMIT", logger)
                } catch {
                    _ = try? await connection.run("ROLLBACK", logger)
                    throw error
                }
            } catch {
                throw map(error)
            }
            if done { return }
        }
    }

    /// Applies the next migration, if any; returns whether the schema is current.
    private static func step(_ connection: PostgresConnection, database: String, logger: Logger) async throws -> Bool {
        let rows = try await connection.rows(
            "SELECT value FROM doccache_meta WHERE name = \(versionKey) FOR UPDATE", logger)
        guard let row = rows.first, let current = Int(try row.decode(String.self)) else {
            throw DocError(.dataLoss, "the schema version in doccache_meta of \(database) is missing or not a number")
        }
        if current > version {
            throw DocError(.failedPrecondition,
                           "the database \(database) has schema version \(current); this server knows versions up to \(version): upgrade the server (or point it at another database)")
        }
        if current == version { return true }
        let migration = migrations[current]
        for statement in migration.statements {
            try await connection.run(statement, logger)
        }
        try await migration.backfill?(connection, logger)
        try await connection.run("UPDATE doccache_meta SET value = \(String(current + 1)) WHERE name = \(versionKey)", logger)
        logger.info("schema migrated", metadata: ["database": "\(database)", "version": "\(current + 1)"])
        return false
    }
}

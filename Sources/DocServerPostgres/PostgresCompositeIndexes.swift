internal import DocModel
internal import Logging
internal import PostgresNIO
internal import Synchronization

/// The composite indexes of a PostgreSQL database, which every server instance on it shares.
///
/// The database is the record: `doccache_composite_indexes` holds each declared index's
/// definition (``DocModel/CompositeIndex/configurationJSON``) and whether its rows are complete
/// (`ready`). Its rows are in `doccache_field_index` (kind 4, markers 6; ``FieldIndexRows``).
///
/// - **Commits** read the definitions after locking the tenant, and maintain the rows of every
///   recorded index, ready or not: from the moment an index is recorded, every commit after it
///   keeps its rows right, whichever instance runs it and whether or not that instance
///   declared it.
/// - **Declaring** (``declare(_:on:database:logger:)``, when an instance connects): an index
///   not yet recorded is inserted not ready, then built (those of one collection group in one
///   pass over its documents) tenant by tenant in chunks of
///   ``documentsPerChunk`` documents of its collection group, each chunk in a transaction that
///   holds the tenant's commit lock (so it reads every commit before it, and none runs
///   meanwhile: a commit waits for one chunk at most), then marked ready. Rows are inserted
///   with `ON CONFLICT DO NOTHING`, so a build interrupted part way, or run by two instances at
///   once, only repeats work.
/// - **Queries** read the ready definitions in the snapshot they read the documents in.
///
/// An index is never dropped automatically: another instance may still declare it. Its rows
/// stay maintained until it is deleted from `doccache_composite_indexes` with its rows.
final class PostgresCompositeIndexes: Sendable {
    /// Documents read per chunk while building.
    static let documentsPerChunk = 500

    /// Definitions already parsed, by text.
    private let parsed = Mutex<[String: CompositeIndex]>([:])

    /// The indexes of `definitions` (`nil`: none), each text parsed once.
    func indexes(_ definitions: [String]?, database: String) throws(DocError) -> [CompositeIndex] {
        guard let definitions, !definitions.isEmpty else { return [] }
        var out: [CompositeIndex] = []
        out.reserveCapacity(definitions.count)
        for text in definitions {
            if let known = parsed.withLock({ $0[text] }) {
                out.append(known)
                continue
            }
            let index: CompositeIndex
            do {
                index = try CompositeIndex.configurationEntry(json: text, at: "a composite index of doccache_composite_indexes")
            } catch {
                throw DocError(.dataLoss, "a composite index recorded in \(database) cannot be read: \(error.message)")
            }
            parsed.withLock { $0[text] = index }
            out.append(index)
        }
        return out
    }

    /// Records the indexes of `declared` that the database lacks and builds the rows of those
    /// not ready; returns the ids built. Runs on `connection` outside any transaction.
    @discardableResult
    static func declare(
        _ declared: [CompositeIndex], on connection: PostgresConnection, database: String, logger: Logger
    ) async throws(DocError) -> [String] {
        guard !declared.isEmpty else { return [] }
        do {
            var pending: [CompositeIndex] = []
            for index in declared {
                let rows = try await connection.rows("""
                    INSERT INTO doccache_composite_indexes (id, definition, ready)
                    VALUES (\(index.id), \(index.configurationJSON), FALSE)
                    ON CONFLICT (id) DO UPDATE SET id = excluded.id
                    RETURNING ready
                    """, logger)
                guard let row = rows.first, try !row.decode(Bool.self),
                      !pending.contains(where: { $0.id == index.id }) else { continue }
                pending.append(index)
            }
            // The indexes of one collection group are built in one pass over its documents.
            for (_, indexes) in Dictionary(grouping: pending, by: \.collectionGroup).sorted(by: { $0.key < $1.key }) {
                try await build(indexes, on: connection, logger: logger)
                for index in indexes {
                    try await connection.run("UPDATE doccache_composite_indexes SET ready = TRUE WHERE id = \(index.id)", logger)
                    logger.info("composite index built", metadata: ["index": "\(index.id)", "database": "\(database)"])
                }
            }
            return pending.map(\.id)
        } catch let error as DocError {
            throw error
        } catch {
            throw PostgresErrorMapping.map(error, doing: "build the declared composite indexes", database: database)
        }
    }

    /// Inserts the rows of `indexes` (all over one collection group) for every document of the
    /// group, tenant by tenant, chunk by chunk, each chunk under the tenant's commit lock.
    private static func build(_ indexes: [CompositeIndex], on connection: PostgresConnection, logger: Logger) async throws {
        guard let first = indexes.first else { return }
        let tenants = try await connection.rows("SELECT tenant FROM doccache_tenants ORDER BY tenant", logger)
        let group = ByteBuffer(bytes: DocumentKeyBytes.group(first.collectionGroup))
        for tenantRow in tenants {
            let tenant = try tenantRow.decode(String.self)
            var after = ByteBuffer()
            while true {
                try await connection.run("BEGIN", logger)
                do {
                    try await connection.run("SELECT 1 FROM doccache_tenants WHERE tenant = \(tenant) FOR UPDATE", logger)
                    let documents = try await connection.rows("""
                        SELECT path_key, body FROM doccache_documents
                        WHERE tenant = \(tenant) AND group_id = \(group) AND path_key > \(after)
                        ORDER BY path_key LIMIT \(Int64(documentsPerChunk))
                        """, logger)
                    var rows = FieldIndexRows()
                    for row in documents {
                        let (path, body) = try row.decode((ByteBuffer, ByteBuffer).self)
                        after = path
                        let document = try Document(binary: body.bytes)
                        rows.add(FieldIndexRows.compositeEntries(of: document, in: indexes), of: document.key)
                    }
                    if !rows.isEmpty {
                        try await connection.run("""
                            INSERT INTO doccache_field_index (tenant, collection, field, kind, value, doc_id)
                            SELECT \(tenant), x.c, x.f, x.k, x.v, x.d
                            FROM UNNEST(\(rows.collections)::BYTEA[], \(rows.fields)::BYTEA[], \(rows.kinds)::SMALLINT[],
                                        \(rows.values)::BYTEA[], \(rows.documentIDs)::BYTEA[]) AS x (c, f, k, v, d)
                            ON CONFLICT DO NOTHING
                            """, logger)
                    }
                    try await connection.run("COMMIT", logger)
                    if documents.count < documentsPerChunk { break }
                } catch {
                    _ = try? await connection.run("ROLLBACK", logger)
                    throw error
                }
            }
        }
    }
}

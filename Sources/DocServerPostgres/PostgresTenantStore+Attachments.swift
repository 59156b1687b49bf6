internal import DocModel
internal import DocServer
internal import PostgresNIO

/// The attachment reference index (rows of ``FieldIndexRows/referenceKind`` in
/// `doccache_field_index`, written by every commit) as the attachment collector reads it.
///
/// ``deleteUnreferencedAttachments(among:_:)`` is one transaction that locks the tenant's row
/// as a commit does (step 1 of `PostgresTenantStore+Commit.swift`), looks the ids up and calls
/// the deletion for each unreferenced one before it commits. A commit of any server instance
/// that newly refers to an attachment rechecks that the attachment is stored under the same
/// lock (``CommitRequest/recheck``): it is either stored before the lookup, which then sees its
/// reference, or rechecks after the deletion. If this instance dies while deleting, the
/// transaction is rolled back (it wrote nothing) and the lock released; the rechecks that
/// follow see what was deleted.
extension PostgresTenantStore {
    /// How many ids one lookup statement names.
    private static let lookupChunk = 1_000

    func referencedAttachments(among ids: [AttachmentID]) async throws(DocError) -> Set<AttachmentID> {
        var referenced = Set<AttachmentID>()
        for start in stride(from: 0, to: ids.count, by: Self.lookupChunk) {
            let chunk = ids[start..<min(ids.count, start + Self.lookupChunk)]
            let rows = try await database.rows("read the attachment references of tenant \(tenant)", referenceLookup(chunk))
            referenced.formUnion(try referencedIDs(rows))
        }
        return referenced
    }

    func deleteUnreferencedAttachments(
        among ids: [AttachmentID], _ delete: @escaping @Sendable (AttachmentID) async throws(DocError) -> Bool
    ) async throws(DocError) -> [AttachmentID] {
        let context = commitContext
        let missing = missingState()
        let lookups = stride(from: 0, to: ids.count, by: Self.lookupChunk).map {
            referenceLookup(ids[$0..<min(ids.count, $0 + Self.lookupChunk)])
        }
        let decode = referencedIDs
        return try await database.transaction("collect the attachments of tenant \(tenant)") { connection, logger in
            _ = try await Self.lock(context, missing: missing, on: connection, logger)
            var referenced = Set<AttachmentID>()
            for lookup in lookups { referenced.formUnion(try decode(try await connection.rows(lookup, logger))) }
            var deleted: [AttachmentID] = []
            for id in ids where !referenced.contains(id) {
                if try await delete(id) { deleted.append(id) }
            }
            return deleted
        }
    }

    /// The statement that returns which of `ids` a reference row names: an index probe of the
    /// reference rows per id.
    private func referenceLookup(_ ids: ArraySlice<AttachmentID>) -> PostgresQuery {
        let hex = ids.map { ByteBuffer(string: $0.hex) }
        return """
            SELECT r.id FROM UNNEST(\(hex)::BYTEA[]) AS r (id)
            WHERE EXISTS (SELECT 1 FROM doccache_field_index
                          WHERE tenant = \(name) AND collection = \(ByteBuffer()) AND field = \(ByteBuffer())
                            AND kind = \(FieldIndexRows.referenceKind) AND value = r.id)
            """
    }

    /// The ids the rows of ``referenceLookup(_:)`` name.
    private func referencedIDs(_ rows: [PostgresRow]) throws(DocError) -> Set<AttachmentID> {
        var referenced = Set<AttachmentID>()
        for row in rows {
            let hex = try PostgresErrorMapping.decode("an attachment reference", in: database.name) { try row.decode(ByteBuffer.self) }
            referenced.insert(try AttachmentID(String(decoding: hex.readableBytesView, as: UTF8.self)))
        }
        return referenced
    }
}

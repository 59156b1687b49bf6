public import DocModel
public import DocServer
internal import PostgresNIO

extension PostgresServerStore {
    /// Gives every tenant a new incarnation after the database was restored from a dump
    /// (`pg_restore`), recording the previous one with the tenant's restored last version
    /// (``TenantState/PreviousIncarnation``), as a restore of the embedded store does.
    ///
    /// Why: a dump brings back the tenants' incarnations as they were, and clients may hold
    /// resume tokens from after the dump (commits the restore lost). New commits soon carry
    /// the tenants past those tokens' versions (versions come from a clock), and such a token
    /// would then be resumed over data it never saw. After this call, tokens of the previous
    /// incarnation up to the restored version resume; later ones get a `reset`.
    ///
    /// Run it once per restore, with every server instance stopped (an instance keeps the
    /// incarnations it read), before starting them: `docctl restore --store URL
    /// --after-pg-restore`. One transaction; the previous incarnation is kept in a
    /// `doccache_meta` row per tenant (`previous_incarnation:TENANT`, value `INCARNATION
    /// VERSION`), which servers without this code ignore (they then reset those tokens).
    ///
    /// - Returns: every tenant's new identity, by tenant name.
    public func reincarnateAfterRestore() async throws(DocError) -> [TenantReincarnation] {
        try await database.transaction("give the tenants new incarnations") { connection, logger in
            let rows = try await connection.rows(
                "SELECT tenant, incarnation, last_version FROM doccache_tenants ORDER BY tenant FOR UPDATE", logger)
            var done: [TenantReincarnation] = []
            for row in rows {
                let (name, incarnation, last) = try row.decode((String, Int64, Int64).self)
                guard let tenant = try? TenantID(name) else { continue }
                let previous = TenantState.PreviousIncarnation(incarnation: UInt64(bitPattern: incarnation),
                                                               validThrough: SnapshotVersion(microseconds: last))
                let next = TenantState.newIncarnation(other: previous.incarnation)
                try await connection.run("""
                    UPDATE doccache_tenants SET incarnation = \(Int64(bitPattern: next)) WHERE tenant = \(name)
                    """, logger)
                try await connection.run("""
                    INSERT INTO doccache_meta (name, value)
                    VALUES (\(Self.previousIncarnationKey(tenant)), \(Self.previousIncarnationValue(previous)))
                    ON CONFLICT (name) DO UPDATE SET value = excluded.value
                    """, logger)
                done.append(TenantReincarnation(tenant: tenant, incarnation: next, previous: previous))
            }
            return done
        }
    }

    /// The `doccache_meta` row of a tenant's previous incarnation.
    static func previousIncarnationKey(_ tenant: TenantID) -> String { "previous_incarnation:" + tenant.rawValue }

    /// The `doccache_meta` row of the last claim of a tenant's chore
    /// (``PostgresTenantStore/claim(_:at:every:)``).
    static func claimKey(_ chore: TenantChore, _ tenant: TenantID) -> String { chore.name + "_claim:" + tenant.rawValue }

    /// `INCARNATION VERSION`, both decimal (the incarnation unsigned).
    static func previousIncarnationValue(_ previous: TenantState.PreviousIncarnation) -> String {
        "\(previous.incarnation) \(previous.validThrough.microseconds)"
    }

    /// Reads a value of ``previousIncarnationValue(_:)``.
    static func previousIncarnation(_ text: String, tenant: TenantID, database: String) throws(DocError) -> TenantState.PreviousIncarnation {
        let parts = text.split(separator: " ")
        guard parts.count == 2, let incarnation = UInt64(parts[0]), let version = Int64(parts[1]) else {
            throw DocError(.dataLoss, "the previous incarnation of tenant \(tenant) in \(database) cannot be read: \(text)")
        }
        return TenantState.PreviousIncarnation(incarnation: incarnation, validThrough: SnapshotVersion(microseconds: version))
    }
}

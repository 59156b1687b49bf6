#if canImport(FoundationEssentials)
internal import FoundationEssentials
#else
internal import Foundation
#endif
public import DocModel

/// What a backup file says about itself before its records: the store layout it was taken
/// from, when, and the state of every tenant in it — the version each tenant's data is
/// consistent at (the backup is one snapshot: for every tenant, exactly the commits up to
/// that version).
public struct BackupHeader: Sendable, Hashable {
    /// The store's key layout (``LevelDBServerStore/formatVersion`` of the server that took it).
    public var layoutVersion: String
    /// When the snapshot was taken (microseconds since the epoch).
    public var createdAt: Timestamp
    /// Every tenant in the backup, by name.
    public var tenants: [Tenant]

    /// One tenant's state in the backup.
    public struct Tenant: Sendable, Hashable {
        /// The tenant.
        public var tenant: TenantID
        /// Its last commit version in the backup: the backup holds exactly its commits up to
        /// this version.
        public var lastVersion: SnapshotVersion
        /// Its incarnation when the backup was taken (a restore gives it a new one).
        public var incarnation: UInt64

        /// Creates a tenant's entry as given; `lastVersion` is what its data in the backup is
        /// consistent at.
        public init(tenant: TenantID, lastVersion: SnapshotVersion, incarnation: UInt64) {
            self.tenant = tenant
            self.lastVersion = lastVersion
            self.incarnation = incarnation
        }
    }

    /// Creates a header as given (not checked against the records that follow).
    public init(layoutVersion: String, createdAt: Timestamp, tenants: [Tenant]) {
        self.layoutVersion = layoutVersion
        self.createdAt = createdAt
        self.tenants = tenants
    }

    /// The header's JSON, e.g.
    /// `{"createdAt":"2026-11-25T12:00:00.000000Z","createdAtMicros":1795…,"layout":"2","tenants":[{"incarnation":"…","lastVersion":1795…,"tenant":"acme"}]}`
    /// (the incarnation as a decimal string: it does not fit a JSON number everywhere).
    var json: [UInt8] {
        let wire = Wire(layout: layoutVersion, createdAt: createdAt.rfc3339, createdAtMicros: createdAt.microseconds,
                        tenants: tenants.map {
                            Wire.Tenant(tenant: $0.tenant.rawValue, lastVersion: $0.lastVersion.microseconds,
                                        incarnation: String($0.incarnation))
                        })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Encoding plain strings and integers cannot fail.
        return Array((try? encoder.encode(wire)) ?? Data("{}".utf8))
    }

    /// Reads a header's JSON.
    /// - Throws: `dataLoss` when it is not a backup header.
    init(json bytes: [UInt8]) throws(DocError) {
        let wire: Wire
        do {
            wire = try JSONDecoder().decode(Wire.self, from: Data(bytes))
        } catch {
            throw DocError(.dataLoss, "the backup's header cannot be read: \(error)")
        }
        var tenants: [Tenant] = []
        for tenant in wire.tenants {
            guard let name = try? TenantID(tenant.tenant), let incarnation = UInt64(tenant.incarnation) else {
                throw DocError(.dataLoss, "the backup's header names a tenant that cannot be read: \(tenant.tenant)")
            }
            tenants.append(Tenant(tenant: name, lastVersion: SnapshotVersion(microseconds: tenant.lastVersion), incarnation: incarnation))
        }
        self.init(layoutVersion: wire.layout, createdAt: Timestamp(microseconds: wire.createdAtMicros), tenants: tenants)
    }

    private struct Wire: Codable {
        var layout: String
        var createdAt: String
        var createdAtMicros: Int64
        var tenants: [Tenant]

        struct Tenant: Codable {
            var tenant: String
            var lastVersion: Int64
            var incarnation: String
        }
    }
}

public import DocProtocol

/// What ``DocServerCore/health()`` reports (the HTTP layer serves it at `/health`).
public struct ServerHealth: Sendable, Hashable, Codable {
    /// `ok` when the store answers and the server accepts connections; `unavailable` otherwise.
    public var status: String
    /// Why the server is not ok, when it is not.
    public var reason: String?
    /// Tenants with live state in this process.
    public var tenants: Int
    /// Open connections.
    public var connections: Int
    /// Targets listened to, over all connections.
    public var targets: Int
    /// The protocol version the server speaks.
    public var protocolVersion: ProtocolVersion

    /// Whether the status is `ok`.
    public var isOK: Bool { status == "ok" }
}

/// What ``DocServerCore/runMaintenance(sharingEvery:)`` pruned.
public struct MaintenanceReport: Sendable, Hashable {
    /// Batch outcomes older than their retention, deleted.
    public var outcomesPruned = 0
    /// Change log entries older than their retention, deleted.
    public var changesPruned = 0
    /// Attachments no live document refers to, older than their grace period, deleted.
    public var attachmentsDeleted = 0
    /// Tenants left out because another server instance sharing the store (or an earlier run)
    /// claimed their maintenance within the shared interval
    /// (``DocServerCore/runMaintenance(sharingEvery:)``).
    public var tenantsMaintainedElsewhere = 0
    /// Tenants whose maintenance failed, with the error.
    public var failures: [String: String] = [:]
}

public import DocModel

/// The server's storage: one database per tenant. This is the seam between the server core
/// and its storage engine: the embedded ``LevelDBServerStore`` is the default, and a
/// PostgreSQL store can implement the same two protocols.
///
/// Isolation is structural: everything is reached through a ``TenantStore`` obtained for one
/// ``TenantID``, and a tenant store can only name keys of its own tenant.
public protocol ServerStore: Sendable {
    /// The database of `tenant`, created (empty) on first use.
    func tenant(_ tenant: TenantID) async throws(DocError) -> any TenantStore
    /// Every tenant that has a database in the store (for work that must resume after a
    /// restart, such as pending request documents).
    func tenantIDs() async throws(DocError) -> [TenantID]
    /// Checks that the store can serve requests; throws `unavailable` when it cannot.
    func checkHealth() async throws(DocError)
    /// Closes the store; calls made afterwards throw `unavailable`.
    func close() async
}

/// One tenant's database: documents, the change log ordered by commit version, and the
/// outcome of every batch.
///
/// Reads are consistent: each returns data as of one version, which it reports. ``commit(_:)``
/// is one atomic transaction. The server core serializes the commits of a tenant, but a store
/// must still refuse a commit whose version is not above the last one, or whose batch already
/// has an outcome (see ``commit(_:)``), so that these invariants hold whatever calls it.
public protocol TenantStore: Sendable {
    /// The tenant.
    var tenant: TenantID { get }

    /// The tenant's versions and identity.
    func state() async throws(DocError) -> TenantState

    /// The documents with the given keys that exist (tombstones included), at one version.
    func documents(_ keys: [DocumentKey]) async throws(DocError) -> DocumentsRead

    /// The documents matching `target` (``Target/matches(_:)``: path, filters, cursors, the
    /// tombstone filter), in target order, at most `limit` of them (`nil`: all), at one version.
    func query(_ target: Target, limit: Int?) async throws(DocError) -> QueryRead

    /// The change log after `version`: every document change with a greater commit version,
    /// in version order, or ``ChangeLogRead/unavailable`` when the log no longer reaches back
    /// to `version` or holds more than `maxEntries` entries after it.
    func changes(after version: SnapshotVersion, maxEntries: Int) async throws(DocError) -> ChangeLogRead

    /// The stored outcome of a batch, if any.
    func outcome(of batch: BatchKey) async throws(DocError) -> BatchOutcome?

    /// Applies a commit atomically: documents, change log entries, the batch outcome and the
    /// new last version all, or nothing.
    ///
    /// Returns ``CommitResult/duplicate(_:)`` without changing anything when the batch already
    /// has an outcome. Throws `aborted` when a committed request's version is not above the
    /// tenant's last version.
    func commit(_ request: CommitRequest) async throws(DocError) -> CommitResult

    /// Deletes batch outcomes recorded before `cutoff` (microseconds since the epoch); returns
    /// how many.
    func pruneOutcomes(recordedBefore cutoff: Int64) async throws(DocError) -> Int

    /// Deletes change log entries with a version below `cutoff`; tokens older than that can no
    /// longer be resumed. Returns how many.
    func pruneChangeLog(before cutoff: SnapshotVersion) async throws(DocError) -> Int
}

/// The versions and identity of a tenant's database.
public struct TenantState: Sendable, Hashable {
    /// The last commit version (at creation: the creation time, so it is never `none`).
    public var lastVersion: SnapshotVersion
    /// Random bytes chosen when the database was created; resume tokens carry them, so a token
    /// from another database (or an earlier one of the same name) is never resumed.
    public var incarnation: UInt64
    /// The change log holds every change with a version above this one.
    public var changeLogFloor: SnapshotVersion

    public init(lastVersion: SnapshotVersion, incarnation: UInt64, changeLogFloor: SnapshotVersion) {
        self.lastVersion = lastVersion
        self.incarnation = incarnation
        self.changeLogFloor = changeLogFloor
    }
}

/// Documents read at one version.
public struct DocumentsRead: Sendable {
    /// The version the read is consistent at (the tenant's last commit then).
    public var version: SnapshotVersion
    /// The documents found, by key.
    public var documents: [DocumentKey: Document]

    public init(version: SnapshotVersion, documents: [DocumentKey: Document]) {
        self.version = version
        self.documents = documents
    }
}

/// Query results at one version, in target order.
public struct QueryRead: Sendable {
    /// The version the read is consistent at (the tenant's last commit then).
    public var version: SnapshotVersion
    /// The results, in target order.
    public var documents: [Document]

    public init(version: SnapshotVersion, documents: [Document]) {
        self.version = version
        self.documents = documents
    }
}

/// One change log entry: the new state of a document at a commit version (a ``Document`` or
/// a ``NoDocument`` for a hard delete).
public struct ChangeLogEntry: Sendable, Hashable {
    /// The version the read is consistent at (the tenant's last commit then).
    public var version: SnapshotVersion
    /// The new state: a document, or a `NoDocument` for a hard delete.
    public var document: MaybeDocument

    public init(version: SnapshotVersion, document: MaybeDocument) {
        self.version = version
        self.document = document
    }

    /// The document changed.
    public var key: DocumentKey { document.key }
}

/// The answer of ``TenantStore/changes(after:maxEntries:)``.
public enum ChangeLogRead: Sendable {
    /// Every change after the requested version, in order, complete through `through`.
    case complete([ChangeLogEntry], through: SnapshotVersion)
    /// The log cannot answer (too old, or too many changes): start over.
    case unavailable(String)
}

/// A document written by a commit: its new contents, or `nil` for a hard delete.
public struct DocumentWrite: Sendable, Hashable {
    /// The document written.
    public var key: DocumentKey
    /// Its new contents (version = the commit version), or `nil` for a hard delete.
    public var document: Document?

    public init(key: DocumentKey, document: Document?) {
        self.key = key
        self.document = document
    }
}

/// What ``TenantStore/commit(_:)`` stores: the outcome of a batch and, when it committed, the
/// documents it changed (each also becomes a change log entry at the commit version).
public struct CommitRequest: Sendable {
    /// The batch's outcome, stored for deduplication.
    public var outcome: BatchOutcome
    /// The changed documents; empty for a rejection.
    public var writes: [DocumentWrite]

    public init(outcome: BatchOutcome, writes: [DocumentWrite]) {
        self.outcome = outcome
        self.writes = writes
    }
}

/// The answer of ``TenantStore/commit(_:)``.
public enum CommitResult: Sendable, Hashable {
    /// Stored.
    case stored
    /// The batch already had this outcome; nothing was stored.
    case duplicate(BatchOutcome)
}

public import DocModel

/// The server's storage: one database per tenant. This is the seam between the server core
/// and its storage engine: the embedded ``LevelDBServerStore`` is the default, and
/// `PostgresServerStore` (module `DocServerPostgres`) implements the same two protocols for
/// several server instances on one database.
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

    /// Commits made to the store by any process (server instances sharing one database), as
    /// they become visible: each instance's ``DocServerCore`` reads the change log of a
    /// tenant it serves listeners for when it hears of a commit beyond what it has delivered.
    /// A notice is a wake-up, not the data: notices may be late, coalesced or lost (the core
    /// also checks on its tick), and the change log is the source of truth.
    ///
    /// `nil` (the default) when no other process can write the store (the embedded store):
    /// every commit then goes through this process's core.
    func commitNotices() -> AsyncStream<CommitNotice>?
}

extension ServerStore {
    /// The default: `nil`, for a store no other process writes.
    public func commitNotices() -> AsyncStream<CommitNotice>? { nil }
}

extension TenantStore {
    /// The default: runs ``query(_:limit:)`` with the target's limit and folds its results with
    /// ``AggregateAccumulator``, so every matching document is in memory at once. Throws what the
    /// query throws.
    public func aggregate(_ target: Target, _ fields: [AggregateField]) async throws(DocError) -> AggregateRead {
        let read = try await query(target, limit: target.limit)
        var accumulator = AggregateAccumulator(fields)
        for document in read.documents { accumulator.add(document.data) }
        return AggregateRead(version: read.version, result: accumulator.result)
    }

    /// The default: ``state()``, then ``outcome(of:)`` for each batch (and
    /// ``laterOutcomeExists(after:)`` for each without one), then ``documents(_:)``, as separate
    /// reads rather than one snapshot.
    public func readAhead(batches: [BatchKey], documents keys: [DocumentKey]) async throws(DocError) -> GroupReadAhead {
        let state = try await state()
        var outcomes: [BatchKey: BatchOutcome] = [:]
        var processedBefore = Set<BatchKey>()
        for batch in batches {
            if let outcome = try await outcome(of: batch) {
                outcomes[batch] = outcome
            } else if try await laterOutcomeExists(after: batch) {
                processedBefore.insert(batch)
            }
        }
        return GroupReadAhead(state: state, outcomes: outcomes, documents: try await documents(keys).documents,
                              processedBefore: processedBefore)
    }

    /// The default, for stores that cannot group: ``commit(_:)`` for each request in order, not
    /// atomic. Throws `aborted` when a batch already has an outcome (the requests before it stay
    /// stored); returns the tenant's last version when `requests` is empty.
    public func commitGroup(_ requests: [CommitRequest]) async throws(DocError) -> SnapshotVersion {
        var first: SnapshotVersion?
        for request in requests {
            switch try await commit(request) {
            case .stored(let previous):
                first = first ?? previous
            case .duplicate:
                throw DocError(.aborted, "batch \(request.outcome.batch) already has an outcome")
            }
        }
        guard let first else { return try await state().lastVersion }
        return first
    }

    /// Grants every claim: for a store that no other server instance shares, each run of a
    /// chore is its own.
    public func claim(_ chore: TenantChore, at now: Int64, every interval: Int64) async throws(DocError) -> Bool { true }

    /// Nothing to give back: every claim is granted.
    public func releaseClaim(_ chore: TenantChore, claimedAt time: Int64) async throws(DocError) {}
}

/// Periodic work on a tenant that the server instances sharing a store take turns at
/// (``TenantStore/claim(_:at:every:)``): whichever claims it first in a period does it.
public struct TenantChore: Sendable, Hashable, CustomStringConvertible {
    /// What names the chore's claims in a store: lowercase letters and `_`.
    public let name: String

    package init(_ name: String) { self.name = name }

    /// The periodic maintenance (``DocServerCore/runMaintenance(sharingEvery:)``): outcomes
    /// and change log pruned, unreferenced attachments collected.
    public static let maintenance = TenantChore("maintenance")
    /// The sweep for request documents left pending
    /// (``DocServerCore/recoverPendingRequests(sharingEvery:)``).
    public static let requestSweep = TenantChore("request_sweep")

    public var description: String { name }
}

/// What ``TenantStore/readAhead(batches:documents:)`` read.
public struct GroupReadAhead: Sendable {
    /// The tenant's state.
    public var state: TenantState
    /// The stored outcomes of the batches that have one.
    public var outcomes: [BatchKey: BatchOutcome]
    /// The documents that exist (tombstones included).
    public var documents: [DocumentKey: Document]
    /// The batches without a stored outcome for which a later batch of the same client has
    /// one (``TenantStore/laterOutcomeExists(after:)``).
    public var processedBefore: Set<BatchKey>

    /// Collects what a read-ahead found; `processedBefore` defaults to none.
    public init(state: TenantState, outcomes: [BatchKey: BatchOutcome], documents: [DocumentKey: Document],
                processedBefore: Set<BatchKey> = []) {
        self.state = state
        self.outcomes = outcomes
        self.documents = documents
        self.processedBefore = processedBefore
    }
}

/// A commit to a tenant's database, heard by ``ServerStore/commitNotices()``.
public struct CommitNotice: Sendable, Hashable {
    /// The tenant.
    public var tenant: TenantID
    /// The tenant's last commit version when the notice was sent (later commits may have
    /// followed).
    public var version: SnapshotVersion

    /// A notice that `tenant` has committed up to `version`.
    public init(tenant: TenantID, version: SnapshotVersion) {
        self.tenant = tenant
        self.version = version
    }
}

/// One tenant's database: documents, the change log ordered by commit version, and the
/// outcome of every batch.
///
/// Reads are consistent: each returns data as of one version, which it reports. ``commit(_:)``
/// is one atomic transaction. One server process serializes the commits of a tenant, but
/// several processes may share one store (PostgreSQL), so the store itself refuses a commit
/// whose version is not above the last one, whose batch already has an outcome, or whose
/// documents changed since the batch read them (see ``commit(_:)``): these invariants hold
/// whatever calls it, in the store's own transaction.
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

    /// The aggregations `fields` over the documents matching `target` (at most its limit), at
    /// one version. A store folds the documents as it reads them rather than keeping them
    /// (``QueryFold``), so that counting a large collection takes one page of memory; the
    /// default implementation folds the results of ``query(_:limit:)``.
    func aggregate(_ target: Target, _ fields: [AggregateField]) async throws(DocError) -> AggregateRead

    /// The change log after `version`: every document change with a greater commit version,
    /// in version order, or ``ChangeLogRead/unavailable`` when the log no longer reaches back
    /// to `version` or holds more than `maxEntries` entries after it.
    func changes(after version: SnapshotVersion, maxEntries: Int) async throws(DocError) -> ChangeLogRead

    /// The stored outcome of a batch, if any.
    func outcome(of batch: BatchKey) async throws(DocError) -> BatchOutcome?

    /// Whether a later batch of the same client (a higher id) has a stored outcome. A client
    /// numbers its batches in queue order and the server attempts them in that order, so the
    /// batch was then processed too; when its own outcome is not stored, it was pruned
    /// (``pruneOutcomes(recordedBefore:)`` keeps each client's latest outcome for this).
    func laterOutcomeExists(after batch: BatchKey) async throws(DocError) -> Bool

    /// What a commit group reads before it processes its batches (and the commit processor for
    /// one batch, with no documents, to look up its outcome in one read): the tenant's state, the
    /// stored outcomes of `batches` that have one (and which of the others have a later
    /// outcome, ``laterOutcomeExists(after:)``), and the documents `keys` that exist
    /// (tombstones included), in one read where the store can (PostgreSQL: one statement, one
    /// snapshot). The default implementation calls ``state()``, ``outcome(of:)`` for each batch
    /// (``laterOutcomeExists(after:)`` for each without one) and ``documents(_:)``.
    func readAhead(batches: [BatchKey], documents keys: [DocumentKey]) async throws(DocError) -> GroupReadAhead

    /// A page of every stored document (tombstones included), in the store's own key order
    /// (not query order): the documents after `after` (`nil`: from the first), at most
    /// `limit`. Pass the last key of a page to read the next; a page shorter than `limit` is
    /// the last. Each page is read at its own version: for maintenance and tools that visit
    /// every document (checks of a restored store), not for answering clients.
    func scan(after: DocumentKey?, limit: Int) async throws(DocError) -> [Document]

    /// Which of `ids` a live stored document (not a tombstone) refers to now, read from the
    /// store's reference index (one lookup per id, not a scan): for the attachment collector.
    func referencedAttachments(among ids: [AttachmentID]) async throws(DocError) -> Set<AttachmentID>

    /// Calls `delete` for each of `ids` that no live stored document refers to, in order, while
    /// the commits that carry a ``CommitRequest/recheck`` wait (whichever server instance runs
    /// them); returns the ids for which `delete` returned `true`. For the attachment collector:
    /// a commit that newly refers to one of `ids` is either stored before the lookup (and the
    /// id is kept) or rechecks after the deletion (and is refused), never stored in between.
    /// Commits without a recheck need not wait, as they add no reference the lookup could miss
    /// (the embedded store lets them through; in PostgreSQL every commit takes the row lock).
    ///
    /// `delete` runs inside the tenant's critical section (the embedded store: an asynchronous
    /// lock its rechecking commits take; PostgreSQL: a transaction holding the tenant's row
    /// lock), so it must be short: the caller passes a few hundred ids at a time. When it
    /// throws, the ids deleted before stay deleted and its error is thrown.
    func deleteUnreferencedAttachments(
        among ids: [AttachmentID], _ delete: @escaping @Sendable (AttachmentID) async throws(DocError) -> Bool
    ) async throws(DocError) -> [AttachmentID]

    /// Applies a commit atomically: documents, change log entries, the batch outcome and the
    /// new last version all, or nothing.
    ///
    /// Returns ``CommitResult/duplicate(_:)`` without changing anything when the batch already
    /// has an outcome. Throws `aborted` (nothing stored; the caller processes the batch again
    /// on fresh reads) when a committed request's version is not above the tenant's last
    /// version, or when a document of ``CommitRequest/readVersions`` (of a committed or a
    /// rejected request) no longer has the version the batch was decided on. These checks and
    /// the writes are one critical section of the tenant (a lock in the embedded store; the
    /// tenant's state row locked in the transaction in PostgreSQL). The request's ``CommitRequest/recheck`` runs in the same critical
    /// section, after the duplicate check.
    func commit(_ request: CommitRequest) async throws(DocError) -> CommitResult

    /// Applies several commits, in order, as one atomic transaction (group commit: one synced
    /// write for all of them): each request's documents, change log entries, outcome and
    /// version, checked as ``commit(_:)`` checks one, each against the state the requests
    /// before it leave. Returns the tenant's last version just before the first request.
    ///
    /// Throws `aborted` with nothing stored when any request would not be stored on its own
    /// (its batch already has an outcome, its version is not above the one before it, a
    /// document it read changed), or throws what a request's ``CommitRequest/recheck`` throws,
    /// nothing stored: the caller then commits the batches one by one. The default
    /// implementation, for stores that cannot group, calls ``commit(_:)`` for each request in
    /// order and is not atomic: after a failure the requests before it stay stored, which is
    /// safe because a batch processed again is answered from its stored outcome.
    func commitGroup(_ requests: [CommitRequest]) async throws(DocError) -> SnapshotVersion

    /// Deletes batch outcomes recorded before `cutoff` (microseconds since the epoch), except
    /// each client's latest (highest batch id), which ``laterOutcomeExists(after:)`` needs;
    /// returns how many.
    func pruneOutcomes(recordedBefore cutoff: Int64) async throws(DocError) -> Int

    /// Deletes change log entries with a version below `cutoff`; tokens older than that can no
    /// longer be resumed. Returns how many.
    func pruneChangeLog(before cutoff: SnapshotVersion) async throws(DocError) -> Int

    /// Claims the tenant's periodic `chore` for the caller: `false` when a claim of it was
    /// granted less than `interval` microseconds before `now`, to this or to another server
    /// instance sharing the store (that one does the chore); otherwise records `now` as the
    /// chore's last claim and returns `true`. Of claims made at once, one is granted; each
    /// chore and each tenant is claimed on its own. The default grants every claim (a store no
    /// other instance shares may keep it).
    func claim(_ chore: TenantChore, at now: Int64, every interval: Int64) async throws(DocError) -> Bool

    /// Gives back the claim of `chore` granted at `time` (``claim(_:at:every:)``), when the
    /// chore failed: the next claim, by any instance, is granted at once rather than a period
    /// later. Nothing changes when the chore's last claim is another one. The default does
    /// nothing.
    func releaseClaim(_ chore: TenantChore, claimedAt time: Int64) async throws(DocError)
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
    /// The incarnation this one replaced when the database was restored from a backup, if it
    /// was (`nil` otherwise): its resume tokens are still resumed up to the backup's version.
    public var previousIncarnation: PreviousIncarnation?

    /// Creates a state as given (not checked); a store makes a new tenant's with the creation
    /// time as both `lastVersion` and `changeLogFloor`, and a random non-zero `incarnation`.
    public init(lastVersion: SnapshotVersion, incarnation: UInt64, changeLogFloor: SnapshotVersion,
                previousIncarnation: PreviousIncarnation? = nil) {
        self.lastVersion = lastVersion
        self.incarnation = incarnation
        self.changeLogFloor = changeLogFloor
        self.previousIncarnation = previousIncarnation
    }

    /// The incarnation of a tenant database before a restore, and the last version its data
    /// is known to hold: the version of the backup (or dump) it was restored from. A resume
    /// token of that incarnation up to this version describes data the restored database
    /// has; one past it describes commits the restore lost.
    public struct PreviousIncarnation: Sendable, Hashable {
        /// The incarnation before the restore.
        public var incarnation: UInt64
        /// The tenant's last version in the backup: tokens of ``incarnation`` up to it resume.
        public var validThrough: SnapshotVersion

        /// Records the replaced `incarnation`, whose tokens resume up to `validThrough`.
        public init(incarnation: UInt64, validThrough: SnapshotVersion) {
            self.incarnation = incarnation
            self.validThrough = validThrough
        }
    }
}

/// Documents read at one version.
public struct DocumentsRead: Sendable {
    /// The version the read is consistent at (the tenant's last commit then).
    public var version: SnapshotVersion
    /// The documents found, by key.
    public var documents: [DocumentKey: Document]

    /// Documents read at `version`; keys that do not exist are absent from `documents`.
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

    /// Results read at `version`, already in target order.
    public init(version: SnapshotVersion, documents: [Document]) {
        self.version = version
        self.documents = documents
    }
}

/// The answer of ``TenantStore/aggregate(_:_:)``.
public struct AggregateRead: Sendable {
    /// The version the read is consistent at (the tenant's last commit then).
    public var version: SnapshotVersion
    /// The aggregations' values by alias (``AggregateAccumulator/result``).
    public var result: [String: Value]

    /// Aggregation values by alias, read at `version`.
    public init(version: SnapshotVersion, result: [String: Value]) {
        self.version = version
        self.result = result
    }
}

/// One change log entry: the new state of a document at a commit version (a ``Document`` or
/// a ``NoDocument`` for a hard delete).
public struct ChangeLogEntry: Sendable, Hashable {
    /// The commit version of the change.
    public var version: SnapshotVersion
    /// The new state: a document, or a `NoDocument` for a hard delete.
    public var document: MaybeDocument

    /// The change of `document` committed at `version`.
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

    /// A write of `key`: `document` is its new contents, or `nil` for a hard delete.
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
    /// The version of every document the batch was applied to or its rules read (written or
    /// not), as it read them
    /// (``SnapshotVersion/none`` for a document that did not exist). The store commits only if
    /// each still has that version, so a commit never overwrites a change it did not see (two
    /// server instances applying an increment to the same document: one commits, the other is
    /// `aborted` and applies it again on the new value). A rejection carries them too, and is
    /// stored only on the state it was decided on: a denial or a failed precondition is never
    /// remembered for a document another instance changed meanwhile. Empty: nothing to verify.
    public var readVersions: [DocumentKey: SnapshotVersion]
    /// A check the store runs again inside the tenant's critical section, after the checks of
    /// other commits and of ``TenantStore/deleteUnreferencedAttachments(among:_:)`` and before
    /// anything is written; when it throws, nothing is stored and its error is thrown (a
    /// ``CommitProcessor`` throws `aborted`, and processes the batch again). `nil`: nothing to
    /// check.
    ///
    /// The ``CommitProcessor`` checks here that the attachments a batch newly refers to are
    /// still stored: another server instance's collector may have deleted one since the batch
    /// was processed.
    public var recheck: (@Sendable () async throws(DocError) -> Void)?

    /// Creates a request as given; the defaults verify no read versions and run no recheck.
    public init(outcome: BatchOutcome, writes: [DocumentWrite], readVersions: [DocumentKey: SnapshotVersion] = [:],
                recheck: (@Sendable () async throws(DocError) -> Void)? = nil) {
        self.outcome = outcome
        self.writes = writes
        self.readVersions = readVersions
        self.recheck = recheck
    }
}

/// The answer of ``TenantStore/commit(_:)``.
public enum CommitResult: Sendable, Hashable {
    /// Stored. `previousVersion` is the tenant's last version just before this commit: when
    /// it is the last version a server instance delivered to its listeners, no other commit
    /// came between and the instance can fan this one out directly; otherwise it reads the
    /// change log first.
    case stored(previousVersion: SnapshotVersion)
    /// The batch already had this outcome; nothing was stored.
    case duplicate(BatchOutcome)
}

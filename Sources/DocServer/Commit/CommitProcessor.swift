public import DocModel
public import Logging

/// Commits write batches for one tenant, exactly once.
///
/// For each batch:
/// 1. The outcome table first: a batch whose `(clientId, batchId)` already has an outcome is
///    answered with it and nothing is applied (exactly once). If the stored outcome belongs to
///    another user, or to a batch with other mutations (``BatchDigest``), the batch is refused
///    (`permissionDenied` / `failedPrecondition`) and that refusal is not stored.
/// 2. A commit version: `max(now, last + 1)` microseconds, so versions strictly increase.
/// 3. The mutations in order, each with `Mutation.applyOnServer` against the documents as the
///    batch's earlier mutations left them: validation, preconditions (`notFound`,
///    `alreadyExists`, `failedPrecondition`), transforms (server timestamps are the commit
///    time; increments; array union and remove), tombstones (`deletedAt` and `updatedAt` =
///    commit time), document size and depth limits (`invalidArgument`).
/// 4. With rules (an ``AccessContext``), every write is authorized (``AccessControl``): the
///    method follows from the document before the write (`create`, `update`, `delete`; a
///    tombstone is a `delete`), `request.resource` is the document after the write and its
///    transforms, `request.time` the commit time, `getAfter()` sees the whole batch applied and
///    `get()` the state before it. A denied write rejects the batch with `permissionDenied`.
///    The documents the rules read are verified at the commit like the written ones (step 6):
///    an allowed batch is committed only while they are as the rules saw them.
///    The rules are checked before failed preconditions are reported, so a caller the rules
///    refuse cannot learn from `notFound` / `alreadyExists` / `failedPrecondition` whether a
///    document exists.
/// 4b. Every attachment the batch writes a reference to, and every attachment of a tombstone
///    the batch brings back to life, must be complete in the tenant's blob store
///    (``attachments``): a missing one rejects the batch with `failedPrecondition` naming it,
///    so no live document on the server refers to bytes the server does not have.
/// 5. All or nothing: the first failing mutation rejects the whole batch and no document is
///    written. A rejection with a permanent code is *remembered* as the batch's outcome, so
///    a re-sent rejected batch gets the same rejection (and is not applied later, when it
///    might succeed: the client has already reverted it). Transient failures (`unavailable`,
///    `aborted`, `internal`, …) are not remembered: the client retries them. A rejection is
///    remembered under the same version check as a commit (step 6) of the documents it was
///    decided on: a denial or a failed precondition on a document another instance changed
///    meanwhile is decided again.
/// 6. One atomic store commit: the changed documents, their change log entries, the outcome
///    and the new version, on the condition that every document the batch was applied to, or
///    its rules read, still has the version it read (``CommitRequest/readVersions``) and that
///    the version is above the tenant's last one. When another server instance on the same
///    database committed in between, the store answers `aborted` and the batch is processed
///    again on fresh reads, after a short random pause that grows with each attempt
///    (``retryPause(after:)``: two instances that keep colliding fall out of step), up to
///    ``maxAttempts`` times; then `aborted` goes to the client, which retries it.
///
/// The caller serializes calls for one tenant within a process (``DocServerCore`` does: one
/// commit at a time per tenant, tenants in parallel); across processes the store's checks
/// keep commits exactly once and free of lost updates.
public struct CommitProcessor: Sendable {
    /// The tenant's store.
    public let store: any TenantStore
    /// The clock of commit versions and outcome records.
    public let clock: ServerClock
    /// The most mutations in one batch.
    public let maxWritesPerBatch: Int
    /// Where the tenant's attachments are stored; `nil`: the server stores none, and a batch
    /// that writes an attachment reference is refused.
    public let attachments: (any BlobStore)?
    let logger: Logger

    /// A processor committing to `store`. Without `attachments`, a batch that writes an
    /// attachment reference is refused.
    public init(store: any TenantStore, clock: ServerClock = .system, maxWritesPerBatch: Int = DocumentLimits.maxWritesPerBatch,
                attachments: (any BlobStore)? = nil, logger: Logger) {
        self.store = store
        self.clock = clock
        self.maxWritesPerBatch = maxWritesPerBatch
        self.attachments = attachments
        self.logger = logger
    }

    /// The same processor on another view of the tenant's store (a commit group's).
    func on(_ store: any TenantStore) -> CommitProcessor {
        CommitProcessor(store: store, clock: clock, maxWritesPerBatch: maxWritesPerBatch, attachments: attachments, logger: logger)
    }

    /// What a processed batch came to.
    public struct Processed: Sendable {
        /// The outcome to report to the client.
        public var outcome: BatchOutcome
        /// Whether this call applied the batch now (`false`: answered from the outcome table,
        /// or rejected).
        public var applied: Bool
        /// The documents the batch changed, in their new state at the commit version, for
        /// listeners (empty unless ``applied``).
        public var changes: [MaybeDocument]
        /// The tenant's last version just before this commit (when ``applied``): a caller
        /// that delivered exactly up to it to its listeners can fan this commit out directly.
        public var previousVersion: SnapshotVersion? = nil
        /// Whether this call stored the batch's outcome: committed now (``applied``) or rejected
        /// now (`false` for a re-sent batch and for a transient failure).
        public var recorded = false
    }

    /// How often a batch is processed again when the store reports that another commit came
    /// between its reads and its commit.
    public static let maxAttempts = 16

    /// The pause before processing a batch again after its `attempt`-th commit lost a race:
    /// a random time up to 0.5 ms × 2^(attempt−1), at most 32 ms (≤ 0.4 s over all attempts).
    /// Without it two instances committing to one tenant as fast as they can may collide on
    /// every attempt (both read the same last version, one commit wins): a test of 2 × 40
    /// concurrent increments saw one batch abort 16 times in a row.
    static func retryPause(after attempt: Int) -> Duration {
        let ceiling = 500 << min(attempt - 1, 6)   // 32,000 µs from the 7th attempt on
        return .microseconds(Int.random(in: 0...ceiling))
    }

    /// Whether a rejection with `code` is the batch's final answer (and so remembered).
    public static func isPermanent(_ code: DocError.Code) -> Bool {
        switch code {
        case .invalidArgument, .notFound, .alreadyExists, .permissionDenied, .failedPrecondition, .outOfRange,
             .unimplemented:
            return true
        default:
            return false
        }
    }

    /// Processes one batch sent by `uid`, authorizing every write against `access` (`nil`: no
    /// rules, tenant isolation only). Throws for transient failures (storage unavailable, a
    /// lost race) and, for a client's batch (`fromClient`), two answers about its batch id:
    /// ``DocModel/DocError/batchIDCollision(_:)`` when the id was answered for other mutations,
    /// and ``DocModel/DocError/batchProcessedBefore(_:)`` when it has no stored outcome but a
    /// later batch of its client has one (it was processed, and its outcome pruned; or another
    /// store writes under the client id: the client tells which). Every permanent failure, a
    /// rules denial included, is a rejected outcome (so is the server's own batch re-made with
    /// other mutations; the server's batches number theirs otherwise and are not checked for a
    /// later outcome). Its lines go to `batchLogger` when given (the caller's, with the batch
    /// in its metadata), else to the processor's logger with `batch` added.
    public func process(
        batch key: BatchKey, mutations: [Mutation], uid: String, access: AccessContext? = nil, logger batchLogger: Logger? = nil,
        fromClient: Bool = true
    ) async throws(DocError) -> Processed {
        var logger = logger
        if let batchLogger { logger = batchLogger } else { logger[metadataKey: "batch"] = "\(key)" }
        // Denials are logged with the batch's key.
        let access = access.map { context -> AccessContext in
            var context = context
            context.logger = logger
            return context
        }
        let digest = BatchDigest.of(mutations)

        // Its outcome, or whether a later batch of its client has one, in one read (one round
        // trip on PostgreSQL; a commit group's view answers from what it read ahead).
        let known = try await store.readAhead(batches: [key], documents: [])
        if let stored = known.outcomes[key] {
            guard stored.uid == uid else {
                logger.warning("batch re-sent by another user", metadata: ["uid": "\(uid)", "owner": "\(stored.uid)"])
                throw DocError(.permissionDenied, "batch \(key) belongs to another user")
            }
            guard BatchDigest.matches(stored: stored.digest, digest: digest, mutations: mutations) else {
                if fromClient {
                    // Thrown, not a rejection: the batches after it are not attempted, and the
                    // client sends them all again under a new client id.
                    logger.warning("batch id already used for other mutations: two stores share the client id")
                    throw DocError.batchIDCollision(key.batchID)
                }
                logger.warning("batch re-made with other mutations")
                return Processed(
                    outcome: BatchOutcome(
                        batch: key, uid: uid, digest: digest, recordedAt: stored.recordedAt,
                        result: .rejected(DocError(.failedPrecondition,
                            "batch \(key) was already processed with other mutations; batch ids must not be reused"))),
                    applied: false, changes: [])
            }
            logger.debug("batch already processed: answering with its stored outcome")
            return Processed(outcome: stored, applied: false, changes: [])
        }
        if fromClient, known.processedBefore.contains(key) {
            // Thrown, as a collision is: nothing more of the connection is attempted, and the
            // client tells a re-send of its own (kept as a failed write) from another store.
            logger.warning("batch without an outcome after a later one of its client: processed before, not applied again")
            throw DocError.batchProcessedBefore(key.batchID)
        }

        var attempt = 1
        while true {
            do {
                return try await processOnce(batch: key, mutations: mutations, uid: uid, digest: digest, access: access,
                                             logger: logger)
            } catch where error.code == .aborted && attempt < Self.maxAttempts {
                // Another commit (another server instance) came between the reads and the commit.
                logger.debug("commit raced another; processing the batch again", metadata: [
                    "attempt": "\(attempt)", "error": "\(error.message)",
                ])
                try? await Task.sleep(for: Self.retryPause(after: attempt))
                attempt += 1
            }
        }
    }

    /// One attempt: the mutations on fresh reads, then the conditional commit (in which the
    /// store checks the outcome table again).
    private func processOnce(
        batch key: BatchKey, mutations: [Mutation], uid: String, digest: UInt64, access: AccessContext?, logger: Logger
    ) async throws(DocError) -> Processed {
        let now = clock.nowMicros()
        let result: Result<Applied, DocError>
        var reads: [DocumentKey: SnapshotVersion] = [:]
        do {
            result = .success(try await apply(mutations, now: now, access: access, reads: &reads))
        } catch {
            guard Self.isPermanent(error.code) else { throw error }
            result = .failure(error)
        }

        switch result {
        case .failure(let error):
            let outcome = BatchOutcome(batch: key, uid: uid, digest: digest, recordedAt: now, result: .rejected(error))
            // Remembered only on the documents it was decided on, as a commit is.
            if case .duplicate(let stored) = try await store.commit(CommitRequest(outcome: outcome, writes: [], readVersions: reads)) {
                return Processed(outcome: stored, applied: false, changes: [])
            }
            logger.info("batch rejected", metadata: ["code": "\(error.code)", "error": "\(error.message)"])
            return Processed(outcome: outcome, applied: false, changes: [], recorded: true)

        case .success(let applied):
            let (writes, version) = (applied.writes, applied.version)
            let outcome = BatchOutcome(
                batch: key, uid: uid, digest: digest, recordedAt: now, result: .committed(version: version, results: applied.results))
            let previous: SnapshotVersion
            let request = CommitRequest(outcome: outcome, writes: writes, readVersions: reads, recheck: applied.recheck)
            switch try await store.commit(request) {
            case .duplicate(let stored):
                return Processed(outcome: stored, applied: false, changes: [])
            case .stored(let previousVersion):
                previous = previousVersion
            }
            logger.debug("batch committed", metadata: ["version": "\(version)", "documents": "\(writes.count)"])
            let changes: [MaybeDocument] = writes.map { write in
                write.document.map { .document($0) } ?? .noDocument(NoDocument(key: write.key, version: version))
            }
            return Processed(outcome: outcome, applied: true, changes: changes, previousVersion: previous, recorded: true)
        }
    }

    /// A batch applied, ready to commit.
    private struct Applied {
        /// The documents to write (only those that changed).
        var writes: [DocumentWrite]
        var version: SnapshotVersion
        var results: [MutationResult]
        /// The attachment check again, for the store's critical section (``recheck(_:)``).
        var recheck: (@Sendable () async throws(DocError) -> Void)?
    }

    /// Applies the mutations in order on the stored documents at a fresh commit version and
    /// authorizes them against `access`. `reads` gets the version of every document read (by
    /// the batch or its rules) as it is read, so that a rejection thrown after them carries
    /// what it rests on.
    private func apply(
        _ mutations: [Mutation], now: Int64, access: AccessContext?, reads: inout [DocumentKey: SnapshotVersion]
    ) async throws(DocError) -> Applied {
        guard mutations.count <= maxWritesPerBatch else {
            throw DocError(.invalidArgument, "a batch has at most \(maxWritesPerBatch) writes, this one has \(mutations.count)")
        }
        let state = try await store.state()
        let version = SnapshotVersion(microseconds: max(now, state.lastVersion.microseconds + 1))
        var keys: [DocumentKey] = []
        var seen = Set<DocumentKey>()
        for m in mutations where seen.insert(m.key).inserted { keys.append(m.key) }
        let read = try await store.documents(keys)
        reads.reserveCapacity(keys.count)
        // Spelled out: `?? .none` assigned to the optional subscript means `Optional.none`, which
        // left the documents read as absent out of the store's check (a create or an increment
        // of a missing document racing another instance's then overwrote it).
        for key in keys { reads[key] = read.documents[key]?.version ?? SnapshotVersion.none }
        var documents: [DocumentKey: MaybeDocument] = [:]
        for (key, document) in read.documents { documents[key] = .document(document) }
        var changed = Set<DocumentKey>()
        var results: [MutationResult] = []
        results.reserveCapacity(mutations.count)
        var planned: [PlannedWrite] = []
        var references = AttachmentReferences()
        var deferred: DocError?
        for (i, mutation) in mutations.enumerated() {
            let before = documents[mutation.key]
            let after: MaybeDocument?
            do {
                let (applied, result) = try mutation.applyOnServer(before, commitVersion: version)
                after = applied
                results.append(result)
            } catch {
                let located = DocError(error.code, error.message, at: "write \(i): " + (error.location ?? mutation.key.description))
                guard access != nil, Self.isPreconditionFailure(error.code) else { throw located }
                // Reported after the rules allowed the batch; until then the write is decided
                // as if it had no precondition.
                deferred = deferred ?? located
                var unconditional = mutation
                unconditional.precondition = .none
                do {
                    after = try unconditional.applyOnServer(before, commitVersion: version).0
                } catch {
                    throw DocError(error.code, error.message, at: "write \(i): " + (error.location ?? mutation.key.description))
                }
            }
            if case .verify = mutation.kind {} else {
                // A delete of a missing document changes nothing.
                if after?.document != nil || before?.document != nil || changed.contains(mutation.key) {
                    changed.insert(mutation.key)
                }
            }
            documents[mutation.key] = after
            references.note(index: i, mutation: mutation, before: before?.document, after: after?.document)
            if access != nil {
                planned.append(PlannedWrite(index: i, mutation: mutation, before: before?.document, after: after?.document))
            }
        }
        if let access {
            var stored: [DocumentKey: Document?] = [:]
            var final: [DocumentKey: Document?] = [:]
            for key in keys {
                stored.updateValue(read.documents[key], forKey: key)
                final.updateValue(documents[key]?.document, forKey: key)
            }
            let decision = try await AccessControl(context: access, store: store)
                .authorize(writes: planned, stored: stored, after: final, time: version.timestamp)
            // The rules' decision rests on the documents they read too: verified with the
            // batch's, so a decision on a document another instance has changed since is made
            // again, whether it allowed the batch or refused it.
            for (key, document) in decision.reads where reads[key] == nil {
                reads[key] = document?.version ?? SnapshotVersion.none
            }
            if let refusal = decision.refusal { throw refusal }
        }
        try await check(references)
        if let deferred { throw deferred }
        let writes = keys.filter(changed.contains).map { key in DocumentWrite(key: key, document: documents[key]?.document) }
        return Applied(writes: writes, version: version, results: results, recheck: recheck(references))
    }

    /// The codes of failed preconditions, which must not tell a caller the rules refuse
    /// whether (or in which version) a document exists.
    static func isPreconditionFailure(_ code: DocError.Code) -> Bool {
        code == .notFound || code == .alreadyExists || code == .failedPrecondition
    }
}

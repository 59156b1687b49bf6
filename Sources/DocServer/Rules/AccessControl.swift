internal import DocModel
internal import DocRules
internal import Logging

/// One write of a batch as the rules see it: the mutation and its document before and after
/// it (before: as the stored document after the batch's earlier writes to it, if any).
struct PlannedWrite: Sendable {
    /// The write's position in the batch.
    let index: Int
    let mutation: Mutation
    /// The document before the write (a tombstone is a document); `nil` when there is none.
    let before: Document?
    /// The document after the write and its transforms; `nil` after a hard delete.
    let after: Document?
}

/// Decides reads, writes and listen targets against the rules (docs/rules.md, "Enforcement in
/// the server").
///
/// Every denial is a `permissionDenied` ``DocError`` located at the write, target or read that
/// was refused. Its message tells the client what Firestore tells it, "Missing or insufficient
/// permissions.", with the operation and path only; the rules' detail (each `allow` statement
/// tried, its line, match path and result) goes to the server log at `info`, and to the client
/// too when ``AccessContext/explainDenials`` is set (development).
struct AccessControl {
    let context: AccessContext
    let store: any TenantStore

    // MARK: Writes

    /// The rules request of a write (Firestore's mapping, with tombstones):
    ///
    /// | mutation | method | `resource` | `request.resource` |
    /// |---|---|---|---|
    /// | set / patch of a missing document | `create` | `null` | the new document |
    /// | set / patch of an existing document (a tombstone too) | `update` | the document | the merged document |
    /// | delete (hard) | `delete` | the document or `null` | `null` |
    /// | tombstone (soft delete) | `delete` | the document or `null` | `null` |
    /// | verify (a transaction's read precondition) | `get` | the document or `null` | `null` |
    static func request(for write: PlannedWrite, auth: RulesAuth?, time: Timestamp, database: String) -> RulesRequest {
        let method: RulesMethod
        var requestResource: Document?
        switch write.mutation.kind {
        case .set, .patch:
            method = write.before == nil ? .create : .update
            requestResource = write.after
        case .delete, .tombstone:
            method = .delete
        case .verify:
            method = .get
        }
        return RulesRequest(method: method, path: write.mutation.key.path, auth: auth, resource: write.before,
                            requestResource: requestResource, time: time, database: database)
    }

    /// What the rules decided for a batch's writes.
    struct BatchDecision {
        /// The other documents the rules read from the store (`get()`, `exists()`, and
        /// `getAfter()` of a document the batch does not write; absent ones as `nil`): the
        /// decision, allowed or not, holds only while they keep the version read, which the
        /// caller's commit (or its rejection's record) verifies.
        var reads: [DocumentKey: Document?]
        /// `permissionDenied` for the first write the rules deny (located at
        /// `write N: path`); `nil` when every write is allowed.
        var refusal: DocError?
    }

    /// Checks every write of a batch (10 lookups each, 20 together): `stored` holds the
    /// documents before the batch (absent ones as `nil`), read by the caller; `after` the
    /// state after the whole batch of every document it writes (for `getAfter()`).
    ///
    /// - Throws: a storage error when a lookup cannot be read.
    func authorize(writes: [PlannedWrite], stored: [DocumentKey: Document?], after: [DocumentKey: Document?],
                   time: Timestamp) async throws(DocError) -> BatchDecision {
        guard !writes.isEmpty else { return BatchDecision(reads: [:], refusal: nil) }
        let requests = writes.map {
            Self.request(for: $0, auth: context.auth, time: time, database: context.database)
        }
        let lookup = PrefetchedLookup(stored: stored, after: after)
        let decisions = try await lookup.resolve(reading: store) { lookup in
            context.rules.evaluate(batch: requests, lookup: lookup)
        }
        let denied = decisions.indices.first { !decisions[$0].isAllowed }
        return BatchDecision(reads: lookup.fetched, refusal: denied.map { i in
            refusal(decisions[i], requests[i], at: "write \(writes[i].index): \(writes[i].mutation.key)")
        })
    }

    /// The client's error for a denied `request`, and the operator's log line with the detail.
    func refusal(_ decision: RulesDecision, _ request: RulesRequest, at location: String) -> DocError {
        context.logger.info("permission denied", metadata: [
            "uid": "\(context.auth?.uid ?? "(unauthenticated)")", "at": "\(location)", "detail": "\(decision.message)",
        ])
        if context.explainDenials { return DocError(.permissionDenied, decision.message, at: location) }
        return DocError(.permissionDenied, "Missing or insufficient permissions. (\(request.method) on \(request.path))",
                        at: location)
    }

    // MARK: Reads

    /// Whether the caller may read (`get`) the document at `key` whose stored state is
    /// `document` (`nil`: none; a tombstone is a document). Returns the denial, or `nil` when
    /// allowed.
    ///
    /// - Throws: a storage error when a lookup cannot be read.
    func denial(get key: DocumentKey, document: Document?, time: Timestamp, location: String) async throws(DocError) -> DocError? {
        let request = RulesRequest(method: .get, path: key.path, auth: context.auth, resource: document, time: time,
                                   database: context.database)
        let lookup = PrefetchedLookup(stored: [key: document])
        let decision = try await lookup.resolve(reading: store) { lookup in
            context.rules.evaluate(request, lookup: lookup)
        }
        return decision.isAllowed ? nil : refusal(decision, request, at: location)
    }

    /// Whether the caller may run the query `target` (`list`), decided from the query's
    /// constraints: allowed only if the rules allow every document the query could return
    /// (rules are not filters). Returns the denial, or `nil` when allowed.
    ///
    /// - Throws: a storage error when a lookup cannot be read.
    func denial(list target: Target, time: Timestamp, location: String) async throws(DocError) -> DocError? {
        let request = RulesRequest(listing: target, auth: context.auth, time: time, database: context.database)
        let lookup = PrefetchedLookup()
        let decision = try await lookup.resolve(reading: store) { lookup in
            context.rules.evaluate(request, lookup: lookup)
        }
        return decision.isAllowed ? nil : refusal(decision, request, at: location)
    }

    /// Whether the caller may listen to `target` now: a document target is a `get` of its
    /// document (read here), a query target a `list`. Returns the denial, or `nil` when allowed.
    func denial(listen target: Target, time: Timestamp) async throws(DocError) -> DocError? {
        let location = target.errorLocation
        if target.isDocumentQuery, let key = try? DocumentKey(path: target.path) {
            let stored = try await store.documents([key]).documents[key]
            return try await denial(get: key, document: stored, time: time, location: location)
        }
        return try await denial(list: target, time: time, location: location)
    }
}

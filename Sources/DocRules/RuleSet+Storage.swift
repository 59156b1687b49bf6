internal import DocModel

// Deciding attachment requests with the `service firebase.storage` block.
//
// Paths are matched as `/b/<bucket>/o/<object path>`, so rules are written as in Firebase:
// `match /b/{bucket}/o { match /attachments/{id} { … } }`. `request` is `{auth, method, path,
// time, resource}` (`path` is the full `/b/…/o/…` path), `resource` and `request.resource` are
// ``StorageObject`` maps or `null`. Storage rules cannot read Firestore documents: `get()`,
// `exists()`, `getAfter()`, `existsAfter()` and `firestore.*` are evaluation errors.

extension RuleSet {
    /// Whether the file has a `service firebase.storage` block.
    public var hasStorageRules: Bool { storageRoot != nil }

    /// Decides a storage (attachment) request with the `service firebase.storage` block. The
    /// decision has the same form as for documents; ``RuleOutcome/matchPath`` is the storage
    /// match path (`/b/{bucket}/o/attachments/{id}`).
    ///
    /// Without a storage block every request is denied, with a message that says so; so is a
    /// request whose path or bucket is empty or has an empty segment.
    public func evaluate(storage request: StorageRulesRequest) -> RulesDecision {
        let segments = request.path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        let what = "\(request.method) on /b/\(request.bucket)/o/\(request.path)"
        guard let storageRoot else {
            return RulesDecision(isAllowed: false, outcomes: [],
                                 message: "permission denied: \(what): \(file) has no 'service firebase.storage' block")
        }
        guard !request.bucket.isEmpty, !request.bucket.contains("/"), !segments.contains(where: \.isEmpty) else {
            return RulesDecision(isAllowed: false, outcomes: [],
                                 message: "permission denied: \(what): not an object path (empty bucket or path segment)")
        }
        let prefix = ["b", request.bucket, "o"]
        let requestValue = RulesValue.map([
            "auth": Evaluator.authValue(request.auth, database: Self.storageDatabase, time: request.time),
            "method": .string(request.method.rawValue),
            "path": .path(RulesPath(segments: prefix + segments)),
            "time": .timestamp(request.time),
            "resource": request.requestResource.map(\.rulesValue) ?? .null,
        ])
        let ev = Evaluator(request: nil, requestValue: requestValue, resourceValue: request.resource.map(\.rulesValue) ?? .null,
                           database: Self.storageDatabase, time: request.time, lookup: InMemoryDocumentLookup(),
                           budget: LookupBudget(limit: 0), symbolic: false)
        let (allowed, outcomes) = run(ev, storageRoot, (prefix + segments).map(TargetSegment.known), request.method)
        return decision(allowed, outcomes, what: what)
    }

    /// The database references in `request.auth.token` point into.
    private static let storageDatabase = "(default)"
}

extension StorageObject {
    /// The object as the rules see it (Firebase Storage's field names, plus `sha256`).
    var rulesValue: RulesValue {
        .map([
            "name": .string(name),
            "bucket": .string(bucket),
            "size": .int(size),
            "contentType": .string(contentType),
            "sha256": .string(sha256),
            "timeCreated": .timestamp(timeCreated),
            "updated": .timestamp(updated),
            "metadata": .map(metadata.mapValues(RulesValue.string)),
        ])
    }
}

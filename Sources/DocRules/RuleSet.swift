internal import DocModel

/// A loaded rules file: parse once, evaluate many requests (it is immutable and `Sendable`).
///
/// ```swift
/// let rules = try RuleSet.parse(source: text, file: "firestore.rules")
/// let decision = rules.evaluate(request, lookup: store)
/// if let error = decision.error { throw error }   // permissionDenied
/// ```
///
/// A file holds a `service cloud.firestore` block (documents, decided by
/// ``evaluate(_:lookup:)``), a `service firebase.storage` block (attachments, decided by
/// ``evaluate(storage:)``), or both.
public struct RuleSet: Sendable {
    /// The file name given to ``parse(source:file:)`` (used in messages).
    public let file: String
    /// The declared `rules_version`.
    public let version: RulesVersion
    /// Problems that do not stop the file from loading (a call of an unknown function, a
    /// version 1 recursive wildcard that is not at the end of its path, …).
    public let warnings: [RulesError]
    /// Whether the file has a `service cloud.firestore` block. Without one every document
    /// request is denied.
    public let hasFirestoreRules: Bool
    /// The body of `service cloud.firestore` (an empty block when the file has none).
    let root: MatchBlock
    /// The body of `service firebase.storage`, if the file has one.
    let storageRoot: MatchBlock?

    /// Parses and checks a rules file. Throws the first problem, with its line and column;
    /// a file that does not parse is never loaded.
    public static func parse(source: String, file: String = "firestore.rules") throws(RulesError) -> RuleSet {
        let parsed = try Parser.parse(source: source, file: file)
        let root = parsed.firestore
            ?? MatchBlock(pattern: [], patternText: "", location: SourceLocation(line: 1, column: 1, offset: 0),
                          rules: [], functions: [:], children: [])
        return RuleSet(file: file, version: parsed.version, warnings: parsed.warnings,
                       hasFirestoreRules: parsed.firestore != nil, root: root, storageRoot: parsed.storage)
    }

    /// Decides one request. Lookups (`get()`, `exists()`, …) are limited to 10 distinct
    /// documents.
    public func evaluate(_ request: RulesRequest, lookup: some DocumentLookup) -> RulesDecision {
        decide(request, lookup: lookup, budget: LookupBudget(limit: LookupBudget.singleRequestLimit))
    }

    /// Decides one request reading nothing: every `get()` finds no document.
    public func evaluate(_ request: RulesRequest) -> RulesDecision {
        evaluate(request, lookup: InMemoryDocumentLookup())
    }

    /// Decides the writes of one batch (or transaction). Each request may read 10 distinct
    /// documents and the batch 20 together; lookups are shared. `lookup.documentAfter(at:)`
    /// should answer with the state after the whole batch.
    public func evaluate(batch requests: [RulesRequest], lookup: some DocumentLookup) -> [RulesDecision] {
        let shared = LookupBudget(limit: LookupBudget.batchLimit, isBatch: true)
        return requests.map { request in
            decide(request, lookup: lookup, budget: LookupBudget(limit: LookupBudget.singleRequestLimit, parent: shared))
        }
    }

    // MARK: - Deciding

    private func documentsPrefix(_ r: RulesRequest) -> [TargetSegment] {
        [.known("databases"), .known(r.database), .known("documents")]
    }

    private func describe(_ r: RulesRequest) -> String {
        let base = "/databases/\(r.database)/documents"
        if r.method == .list, r.query?.collectionGroup == true {
            let parent = r.path.segments.dropLast().map { "/" + $0 }.joined()
            return "collection group '\(r.path.lastSegment ?? "")' under \(base)\(parent)"
        }
        return "\(base)/\(r.path.canonicalString)"
    }

    private func decide(_ request: RulesRequest, lookup: any DocumentLookup, budget: LookupBudget) -> RulesDecision {
        let what = "\(request.method) on \(describe(request))"
        guard hasFirestoreRules else {
            return RulesDecision(isAllowed: false, outcomes: [],
                                 message: "permission denied: \(what): \(file) has no 'service cloud.firestore' block")
        }
        if request.method == .list {
            let group = request.query?.collectionGroup == true
            guard request.path.count % 2 == 1 else {
                return RulesDecision(isAllowed: false, outcomes: [], message: "permission denied: \(what): a list needs a collection path")
            }
            if group, version == .v1 {
                return RulesDecision(isAllowed: false, outcomes: [],
                                     message: "permission denied: \(what): collection-group queries need rules_version = '2'")
            }
            return decideList(request, lookup: lookup, budget: budget, what: what)
        }
        guard request.path.count >= 2, request.path.count % 2 == 0 else {
            return RulesDecision(isAllowed: false, outcomes: [], message: "permission denied: \(what): not a document path")
        }
        let ev = Evaluator(request: request, lookup: lookup, budget: budget, symbolic: false)
        let target = documentsPrefix(request) + request.path.segments.map(TargetSegment.known)
        let (allowed, outcomes) = run(ev, root, target, request.method)
        return decision(allowed, outcomes, what: what)
    }

    private func decideList(_ request: RulesRequest, lookup: any DocumentLookup, budget: LookupBudget, what: String) -> RulesDecision {
        let query = request.query ?? RulesQuery()
        let cases: [ListQueryPlan.Case]
        do {
            cases = try ListQueryPlan.cases(for: query, collection: request.path, database: request.database, time: request.time)
        } catch {
            let why: String
            switch error {
            case .tooManyCombinations(let n): why = "the query's in/array-contains-any filters make \(n) cases (at most \(ListQueryPlan.maxCombinations))"
            case .invalid(let m): why = m
            }
            return RulesDecision(isAllowed: false, outcomes: [], message: "permission denied: \(what): \(why)")
        }
        var last: [RuleOutcome] = []
        for c in cases {
            let ev = Evaluator(request: request, lookup: lookup, budget: budget, symbolic: true)
            var target = documentsPrefix(request)
            var name: RulesValue = .anyUnknown
            if query.collectionGroup {
                target += request.path.segments.dropLast().map(TargetSegment.known)
                target += [.anyPrefix, .known(request.path.lastSegment!), .anyID]
            } else {
                target += request.path.segments.map(TargetSegment.known)
                if let id = c.documentID {
                    target.append(.known(id))
                    name = .path(RulesPath(segments: ["databases", request.database, "documents"] + request.path.segments + [id]))
                } else {
                    target.append(.anyID)
                }
            }
            ev.resourceValue = .map([
                "__name__": name,
                "id": c.documentID.map(RulesValue.string) ?? .anyUnknown,
                "data": c.data,
            ])
            let (allowed, outcomes) = run(ev, root, target, .list)
            last = outcomes
            if !allowed {
                var d = decision(false, outcomes, what: what)
                if outcomes.contains(where: { $0.result == .undecided }) {
                    d.message += " (rules are not filters: the query must constrain what the rules check)"
                }
                return d
            }
        }
        return decision(true, last, what: what)
    }

    /// Evaluates the `allow` statements for `method` of every block of the service `root` that
    /// matches `target`, in order, until one grants.
    func run(_ ev: Evaluator, _ root: MatchBlock, _ target: [TargetSegment], _ method: RulesMethod) -> (Bool, [RuleOutcome]) {
        var outcomes: [RuleOutcome] = []
        for scope in Matcher(version: version).matches(root, target) {
            let level = scope.levels.count - 1
            let block = scope.levels[level].block
            let matchPath = scope.levels.map(\.block.patternText).joined()
            for rule in block.rules where rule.methods.contains(method) {
                var result = RuleOutcome.Result.allowed
                if let c = rule.condition {
                    switch ev.condition(c, scope: scope, level: level) {
                    case .allowed: result = .allowed
                    case .denied: result = .denied
                    case .undecided: result = .undecided
                    case .error(let e): result = .error(e.description)
                    }
                }
                outcomes.append(RuleOutcome(matchPath: matchPath, methods: rule.methodsText,
                                            line: rule.location.line, column: rule.location.column, result: result))
                if result == .allowed { return (true, outcomes) }
            }
        }
        return (false, outcomes)
    }

    /// The decision and its one-line message (`what` names the method and the path).
    func decision(_ allowed: Bool, _ outcomes: [RuleOutcome], what: String) -> RulesDecision {
        if allowed {
            let by = outcomes.last.map { " by \($0.description)" } ?? ""
            return RulesDecision(isAllowed: true, outcomes: outcomes, message: "allowed: \(what)\(by)")
        }
        if outcomes.isEmpty {
            return RulesDecision(isAllowed: false, outcomes: [], message: "permission denied: \(what): no rule allows it")
        }
        let reasons = outcomes.map(\.description).joined(separator: "; ")
        return RulesDecision(isAllowed: false, outcomes: outcomes, message: "permission denied: \(what): \(reasons)")
    }
}

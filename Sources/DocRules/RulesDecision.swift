public import DocModel

/// What one `allow` statement gave for a request.
public struct RuleOutcome: Sendable, Hashable, CustomStringConvertible {
    /// The result of evaluating the condition.
    public enum Result: Sendable, Hashable {
        /// The condition was `true` (or there was none): the rule grants.
        case allowed
        /// The condition was `false`.
        case denied
        /// Evaluating the condition failed (a missing field, a type error, too many lookups, …).
        case error(String)
        /// For a `list`: the condition depends on document values the query does not
        /// constrain, so it cannot hold for every document the query could return.
        case undecided
    }

    /// The full match path of the block (`/databases/{database}/documents/users/{userId}`).
    public var matchPath: String
    /// The methods as written in the statement (`read, update`).
    public var methods: String
    /// The 1-based line of the `allow` statement.
    public var line: Int
    /// The 1-based column of the `allow` statement.
    public var column: Int
    /// What the statement gave.
    public var result: Result

    public var description: String {
        let what = "allow \(methods) at line \(line) (match \(matchPath))"
        switch result {
        case .allowed: return "\(what): granted"
        case .denied: return "\(what): false"
        case .error(let m): return "\(what): error: \(m)"
        case .undecided: return "\(what): depends on document values the query does not constrain"
        }
    }
}

/// The answer to a ``RulesRequest``: allowed or denied, and why.
public struct RulesDecision: Sendable, CustomStringConvertible {
    /// Whether the request is allowed.
    public var isAllowed: Bool
    /// Every `allow` statement that applied to the request, in evaluation order, with its
    /// result. Empty when no statement applied. For a `list`, the outcomes of the first case
    /// that was not allowed.
    public var outcomes: [RuleOutcome]
    /// A one-line explanation, fit for a `permissionDenied` message.
    public var message: String

    /// A decision (the evaluator makes these; public for callers that combine decisions).
    public init(isAllowed: Bool, outcomes: [RuleOutcome], message: String) {
        self.isAllowed = isAllowed
        self.outcomes = outcomes
        self.message = message
    }

    /// The statement that granted the request, if allowed by one.
    public var grantingRule: RuleOutcome? { outcomes.first { $0.result == .allowed } }

    /// The first evaluation error among the outcomes, if any.
    public var firstError: String? {
        for o in outcomes { if case .error(let m) = o.result { return m } }
        return nil
    }

    /// `nil` when allowed; otherwise a `permissionDenied` error carrying ``message``.
    public var error: DocError? {
        isAllowed ? nil : DocError(.permissionDenied, message)
    }

    public var description: String { message }
}

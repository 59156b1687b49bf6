public import DocRules

/// What an operation is authorized against: the rule set in force and who asks
/// (`request.auth`).
public struct AccessContext: Sendable {
    /// The rules.
    public var rules: RuleSet
    /// The caller: uid and token claims (`request.auth`); `nil` for an unauthenticated caller.
    public var auth: RulesAuth?
    /// The database id in rules paths (`/databases/{database}/documents/…`). Every tenant is
    /// its own database and answers to `(default)`, as a single Firestore database does.
    public var database: String

    /// A context for `auth` under `rules`.
    public init(rules: RuleSet, auth: RulesAuth?, database: String = "(default)") {
        self.rules = rules
        self.auth = auth
        self.database = database
    }
}

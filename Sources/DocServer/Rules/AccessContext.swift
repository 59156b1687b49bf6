public import DocRules
public import Logging

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
    /// Whether a denial tells the client the rules' detail (which `allow` statements were tried,
    /// their lines and results) instead of only "Missing or insufficient permissions." with the
    /// operation and path: for development (``ServerConfiguration/explainDenials``).
    public var explainDenials: Bool
    /// Where denials are logged with their detail: the caller's logger, whose metadata names
    /// the tenant and, where known, the connection, the batch and the request id.
    public var logger: Logger

    /// A context for `auth` under `rules`.
    public init(rules: RuleSet, auth: RulesAuth?, database: String = "(default)", explainDenials: Bool,
                logger: Logger) {
        self.rules = rules
        self.auth = auth
        self.database = database
        self.explainDenials = explainDenials
        self.logger = logger
    }
}

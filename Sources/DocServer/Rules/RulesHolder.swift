internal import DocRules
internal import Logging
internal import Synchronization

/// The rule set the server enforces, swapped atomically when rules are reloaded.
///
/// Every operation takes the current rule set once, when it starts, and is decided entirely by
/// it: a reload never mixes two rule sets in one decision. `nil`: no rules are enforced
/// (tenant isolation only).
final class RulesHolder: Sendable {
    private let state: Mutex<RuleSet?>
    /// Whether denials carry the rules' detail to clients (``ServerConfiguration/explainDenials``).
    let explainDenials: Bool

    init(_ rules: RuleSet?, explainDenials: Bool = false) {
        state = Mutex(rules)
        self.explainDenials = explainDenials
    }

    /// The rule set in force now.
    var current: RuleSet? { state.withLock { $0 } }

    /// Installs `rules` (or none).
    func replace(with rules: RuleSet?) { state.withLock { $0 = rules } }

    /// The context for a caller under the current rules, or `nil` when none are enforced;
    /// denials are logged to `logger`.
    func context(for auth: RulesAuth?, logger: Logger) -> AccessContext? {
        current.map { context($0, for: auth, logger: logger) }
    }

    /// The context for a caller under `ruleSet` (one the caller took from ``current`` to decide
    /// several things by the same rules).
    func context(_ ruleSet: RuleSet, for auth: RulesAuth?, logger: Logger) -> AccessContext {
        AccessContext(rules: ruleSet, auth: auth, explainDenials: explainDenials, logger: logger)
    }
}

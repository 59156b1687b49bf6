internal import DocRules
internal import Synchronization

/// The rule set the server enforces, swapped atomically when rules are reloaded.
///
/// Every operation takes the current rule set once, when it starts, and is decided entirely by
/// it: a reload never mixes two rule sets in one decision. `nil`: no rules are enforced
/// (tenant isolation only).
final class RulesHolder: Sendable {
    private let state: Mutex<RuleSet?>

    init(_ rules: RuleSet?) { state = Mutex(rules) }

    /// The rule set in force now.
    var current: RuleSet? { state.withLock { $0 } }

    /// Installs `rules` (or none).
    func replace(with rules: RuleSet?) { state.withLock { $0 = rules } }

    /// The context for a caller under the current rules, or `nil` when none are enforced.
    func context(for auth: RulesAuth?) -> AccessContext? {
        current.map { AccessContext(rules: $0, auth: auth) }
    }
}

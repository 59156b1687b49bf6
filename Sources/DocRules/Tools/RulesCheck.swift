/// `docctl rules check FILE`: loads a rules file and says whether it loads, with every
/// problem at `file:line:column`.
///
/// ```swift
/// let report = RulesCheck.run(file: "Rules/firestore.rules")
/// for line in report.lines { print(line) }
/// exit(report.exitStatus)
/// ```
public enum RulesCheck {
    /// The outcome of checking one file.
    public struct Report: Sendable {
        /// The file checked, as given.
        public var file: String
        /// The loaded rules, when the file loads.
        public var ruleSet: RuleSet?
        /// Why the file does not load (the parser stops at the first problem).
        public var error: RulesError?
        /// Problems that do not stop the file from loading.
        public var warnings: [RulesError]

        /// Whether the file loads.
        public var succeeded: Bool { error == nil }
        /// The process exit status for the CLI: 0 when the file loads, 1 otherwise.
        public var exitStatus: Int32 { succeeded ? 0 : 1 }

        /// The lines to print, in order: one per warning (`file:line:column: warning: …`),
        /// the error if any (`file:line:column: error: …`, with what was expected), then a
        /// summary: `rules-check: FILE loaded (rules_version '2', 0 warnings)` or
        /// `rules-check: FILE did not load (1 error, 0 warnings)`.
        public var lines: [String] {
            var out = warnings.map { RulesCheck.line($0, severity: "warning") }
            let w = warnings.count == 1 ? "1 warning" : "\(warnings.count) warnings"
            if let error {
                out.append(RulesCheck.line(error, severity: "error"))
                out.append("rules-check: \(file) did not load (1 error, \(w))")
            } else if let ruleSet {
                out.append("rules-check: \(file) loaded (rules_version '\(ruleSet.version.rawValue)', \(w))")
            }
            return out
        }
    }

    /// Loads `file` and reports.
    public static func run(file path: String) -> Report {
        do {
            let rules = try RuleSet.load(path: path)
            return Report(file: path, ruleSet: rules, error: nil, warnings: rules.warnings)
        } catch {
            return Report(file: path, ruleSet: nil, error: error, warnings: [])
        }
    }

    /// `file:line:column: severity: message`, with the expected alternatives when the message
    /// does not already name them; `file: severity: message` for errors without a position.
    static func line(_ e: RulesError, severity: String) -> String {
        var message = e.message
        if !e.expected.isEmpty, !message.contains("expected") {
            message += " (expected " + e.expected.joined(separator: " or ") + ")"
        }
        let position = e.line > 0 ? "\(e.file):\(e.line):\(e.column)" : e.file
        return "\(position): \(severity): \(message)"
    }
}

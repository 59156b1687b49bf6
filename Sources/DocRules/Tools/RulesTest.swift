public import DocModel

/// `docctl rules test PATH`: runs the conformance suite in PATH, or every suite folder under
/// it (see ``RulesConformance``).
///
/// ```swift
/// let report = RulesTest.run(path: "../shared/conformance/rules")
/// for line in report.lines { print(line) }
/// exit(report.exitStatus)
/// ```
public enum RulesTest {
    /// The outcome of a run: ``RulesConformance/Report``, whose ``RulesConformance/Report/lines``
    /// are the lines to print.
    public typealias Report = RulesConformance.Report

    /// Runs the suite in `path` (a folder with `cases.json`) or every suite folder under
    /// `path`. `time` is `request.time` (default: now).
    public static func run(path: String, time: Timestamp? = nil) -> Report {
        RulesConformance.run(path: path, time: time)
    }
}

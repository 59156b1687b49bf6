public import DocModel
#if canImport(FoundationEssentials)
internal import FoundationEssentials
#else
internal import Foundation
#endif

/// Runs rules conformance suites: folders holding a rules file and a `cases.json` of
/// allow/deny outcomes (format: `conformance/rules/FORMAT.md`).
///
/// ```swift
/// let report = RulesConformance.run(path: "../shared/conformance/rules")
/// print(report)                 // failing cases, then "rules-conformance: P passed, F failed, S skipped"
/// exit(report.succeeded ? 0 : 1)
/// ```
public enum RulesConformance {
    /// One case whose outcome differed from the expected one (or could not be run).
    public struct Failure: Sendable, CustomStringConvertible {
        /// The suite's name.
        public var suite: String
        /// The case's name (`-` for a suite-level problem).
        public var caseName: String
        /// `"allow"` or `"deny"`; empty when the case could not be read.
        public var expected: String
        /// `"allow"`, `"deny"`, or what went wrong before deciding.
        public var actual: String
        /// The decision's explanation or the error.
        public var detail: String

        public var description: String {
            "FAIL \(suite) › \(caseName): expected \(expected.isEmpty ? "?" : expected), got \(actual) — \(detail)"
        }
    }

    /// An assertion of the original suite that the format cannot express.
    public struct Skip: Sendable, CustomStringConvertible {
        /// The suite's name.
        public var suite: String
        /// The skipped assertion's name.
        public var caseName: String
        /// Why the format cannot express it.
        public var why: String

        public var description: String { "skip \(suite) › \(caseName): \(why)" }
    }

    /// The outcome of a run.
    public struct Report: Sendable, CustomStringConvertible {
        /// Cases whose outcome was the expected one.
        public var passed = 0
        /// Cases that failed (or could not be run).
        public var failed: Int { failures.count }
        /// Assertions listed as skipped by the suites.
        public var skipped: Int { skips.count }
        /// The suites run, by folder name.
        public var suites: [String] = []
        /// The failing cases, in suite order.
        public var failures: [Failure] = []
        /// The skipped assertions, in suite order.
        public var skips: [Skip] = []

        /// `rules-conformance: P passed, F failed, S skipped`.
        public var summary: String { "rules-conformance: \(passed) passed, \(failed) failed, \(skipped) skipped" }

        /// Whether nothing failed.
        public var succeeded: Bool { failures.isEmpty }

        /// The process exit status for the CLI: 0 when nothing failed, 1 otherwise.
        public var exitStatus: Int32 { succeeded ? 0 : 1 }

        /// The lines to print: one per failing case (`FAIL suite › case: expected allow, got
        /// deny — error`), then the summary line.
        public var lines: [String] { failures.map(\.description) + [summary] }

        /// ``lines``, joined with line breaks.
        public var description: String { lines.joined(separator: "\n") }

        mutating func merge(_ other: Report) {
            passed += other.passed
            suites += other.suites
            failures += other.failures
            skips += other.skips
        }
    }

    /// Runs the suite in `path` (a folder with `cases.json`), or every suite folder directly
    /// under `path`, in name order. `time` is `request.time` (and the value of
    /// `$serverTimestamp`); it defaults to now.
    public static func run(path: String, time: Timestamp? = nil) -> Report {
        let now = time ?? currentTime()
        let fm = FileManager.default
        if fm.fileExists(atPath: join(path, "cases.json")) {
            return runSuite(folder: path, time: now)
        }
        var report = Report()
        guard let entries = try? fm.contentsOfDirectory(atPath: path) else {
            report.failures.append(Failure(suite: path, caseName: "-", expected: "", actual: "not run",
                                           detail: "cannot read directory \(path)"))
            return report
        }
        let suites = entries.sorted().filter { fm.fileExists(atPath: join(join(path, $0), "cases.json")) }
        if suites.isEmpty {
            report.failures.append(Failure(suite: path, caseName: "-", expected: "", actual: "not run",
                                           detail: "no suite folders (with cases.json) under \(path)"))
        }
        for s in suites {
            report.merge(runSuite(folder: join(path, s), time: now))
        }
        return report
    }

    // MARK: - One suite

    static func runSuite(folder: String, time: Timestamp) -> Report {
        var report = Report()
        let fallbackName = folder.split(separator: "/").last.map(String.init) ?? folder
        func fail(_ message: String) -> Report {
            var r = report
            r.failures.append(Failure(suite: fallbackName, caseName: "-", expected: "", actual: "not run", detail: message))
            return r
        }
        guard let data = FileManager.default.contents(atPath: join(folder, "cases.json")) else {
            return fail("cannot read \(join(folder, "cases.json"))")
        }
        let root: [String: Value]
        do {
            guard case .map(let m) = try Value(jsonBytes: Array(data)) else { return fail("cases.json is not a JSON object") }
            root = m
        } catch {
            return fail("cases.json: \(error)")
        }
        let suite = root["suite"]?.stringValue ?? fallbackName
        report.suites = [suite]
        for s in root["skipped"]?.arrayValue ?? [] {
            report.skips.append(Skip(suite: suite, caseName: s.mapValue?["name"]?.stringValue ?? "?",
                                     why: s.mapValue?["why"]?.stringValue ?? ""))
        }
        let cases = root["cases"]?.arrayValue ?? []
        let rulesFile = root["rulesFile"]?.stringValue ?? "firestore.rules"
        let rules: RuleSet
        do {
            guard let bytes = FileManager.default.contents(atPath: join(folder, rulesFile)) else {
                throw RulesError(.io, "cannot read \(join(folder, rulesFile))", file: rulesFile, line: 0, column: 0)
            }
            rules = try RuleSet.parse(source: String(decoding: bytes, as: UTF8.self), file: rulesFile)
        } catch let error as RulesError {
            for c in cases {
                let m = c.mapValue ?? [:]
                report.failures.append(Failure(suite: suite, caseName: m["name"]?.stringValue ?? "?",
                                               expected: m["expect"]?.stringValue ?? "", actual: "rules did not load",
                                               detail: error.description))
            }
            return report
        } catch {
            return fail("\(error)")
        }
        let seed = root["seed"]?.mapValue ?? [:]
        for (index, c) in cases.enumerated() {
            let m = c.mapValue ?? [:]
            let name = m["name"]?.stringValue ?? "case \(index + 1)"
            let expected = m["expect"]?.stringValue ?? ""
            do {
                let outcome = try ConformanceCase(m, seed: seed, time: time).run(rules)
                let actual = outcome.allowed ? "allow" : "deny"
                if actual == expected {
                    report.passed += 1
                } else {
                    report.failures.append(Failure(suite: suite, caseName: name, expected: expected, actual: actual,
                                                   detail: outcome.detail))
                }
            } catch {
                report.failures.append(Failure(suite: suite, caseName: name, expected: expected, actual: "not run",
                                               detail: "malformed case: \(error.message)"))
            }
        }
        return report
    }

    private static func join(_ a: String, _ b: String) -> String {
        a.hasSuffix("/") ? a + b : a + "/" + b
    }

    /// Now, truncated to microseconds (the precision of commit versions).
    static func currentTime() -> Timestamp {
        let us = Int64((Date().timeIntervalSince1970 * 1_000_000).rounded(.down))
        return Timestamp(microseconds: us)
    }
}

import Foundation
import Testing
@testable import DocCache
import DocModel
import DocTestSupport
import DocTestTraits

/// Runs the Firestore client spec tests against the sync engine (the runner's contract:
/// docs/contracts.md, "Spec-test runner"): every `*_spec_test.json` in `SPEC_TESTS_DIR`
/// (default `../shared/spec-tests` from the package root). Prints one line per file and a
/// total line
///
///     spec-tests FILE: P passed, F failed, S skipped
///     spec-tests total: P passed, F failed, S skipped
///
/// and, for every failing test, the step and a short diff. With the default directory the test
/// fails on any failure not listed in `known-failures.txt`; with another directory it only
/// reports. `SPEC_TEST_FILTER=text` runs only the tests whose name contains `text` (the others
/// count as skipped), for debugging. Without the directory the test is skipped, or fails under
/// `CI=true` or when `SPEC_TESTS_DIR` names a missing folder (``ExternalSuite``).
@Suite("Firestore spec tests", .cpuBound)
struct FirestoreSpecTests {
    @Test(.enabled(if: ExternalSuite.specTests.isEnabled))
    func firestoreSpecTests() throws {
        let folder = try ExternalSuite.specTests.folder()
        let (directory, isDefault) = (URL(fileURLWithPath: folder.path), folder.isDefault)
        let known = isDefault ? try KnownFailures.load(SpecPaths.knownFailuresFile) : KnownFailures()
        for problem in known.problems { Issue.record(Comment(rawValue: problem)) }

        let runner = SpecRunner(filter: ProcessInfo.processInfo.environment["SPEC_TEST_FILTER"])
        let report = try runner.run(directory: directory)
        print(report.text)

        guard isDefault else { return }
        #expect(report.total.total > 0, "no spec tests found in \(directory.path)")
        for failure in report.failures where known.reason(file: failure.file, test: failure.test) == nil {
            Issue.record(Comment(rawValue: "\(failure.file) :: \(failure.test): \(failure.summary)"))
        }
        let failed = Set(report.failures.map { "\($0.file) :: \($0.test)" })
        for entry in known.entries.keys.sorted() where !failed.contains(entry) && report.ran.contains(entry) {
            print("spec-tests: known failure now passes, remove it from known-failures.txt: \(entry)")
        }
    }
}

/// `known-failures.txt`: one line per test, `FILE :: TEST NAME :: reason`; `#` starts a comment.
struct KnownFailures {
    /// `FILE :: TEST NAME` → reason.
    var entries: [String: String] = [:]
    /// Malformed lines.
    var problems: [String] = []

    static func load(_ url: URL) throws -> KnownFailures {
        guard FileManager.default.fileExists(atPath: url.path) else { return KnownFailures() }
        return parse(try String(contentsOf: url, encoding: .utf8))
    }

    static func parse(_ text: String) -> KnownFailures {
        var known = KnownFailures()
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let parts = line.components(separatedBy: " :: ")
            guard parts.count >= 3 else {
                known.problems.append("known-failures.txt line \(number + 1): expected FILE :: TEST NAME :: reason")
                continue
            }
            let reason = parts[2...].joined(separator: " :: ").trimmingCharacters(in: .whitespaces)
            guard !reason.isEmpty else {
                known.problems.append("known-failures.txt line \(number + 1): a known failure needs a reason")
                continue
            }
            known.entries["\(parts[0]) :: \(parts[1])"] = reason
        }
        return known
    }

    func reason(file: String, test: String) -> String? { entries["\(file) :: \(test)"] }
}

/// The outcome of a run.
struct SpecReport {
    struct Counts {
        var passed = 0
        var failed = 0
        var skipped = 0
        var total: Int { passed + failed + skipped }

        mutating func add(_ other: Counts) {
            passed += other.passed
            failed += other.failed
            skipped += other.skipped
        }
    }

    struct Failure {
        var file: String
        var test: String
        /// One line: the step and its first problem.
        var summary: String
    }

    var total = Counts()
    var failures: [Failure] = []
    /// `FILE :: TEST NAME` of every test that ran (passed or failed).
    var ran: Set<String> = []
    /// Everything printed: per-test failures and skips, per-file and total lines.
    var text = ""
}

/// Decodes and runs spec files.
struct SpecRunner {
    /// Only tests whose name contains this text run.
    var filter: String?

    /// Why a test is not run, or `nil` to run it.
    static func skipReason(_ test: SpecTest) -> String? {
        if test.tags.contains("multi-client") { return "multi-client: the web SDK's multi-tab mode" }
        if test.tags.contains("no-ios") { return "no-ios: excluded from Firestore's iOS runs" }
        if test.tags.contains("eager-gc") {
            return "eager-gc: assumes memory persistence with eager GC; we always run LevelDB with LRU GC "
                + "(Firestore's LevelDB runs skip it too)"
        }
        if test.tags.contains("benchmark") { return "benchmark: a performance test" }
        if test.config.numClients > 1 { return "multi-client: config numClients \(test.config.numClients)" }
        guard case .success(let steps) = test.steps else { return nil }
        for step in steps {
            if case .unsupported(let kind) = step.action { return "unsupported step \(kind)" }
            if step.clientIndex.map({ $0 != 0 }) ?? false { return "multi-client: step on client \(step.clientIndex!)" }
            if case .writeAck(_, true) = step.action { return "multi-client: writeAck keepInQueue" }
            if let keys = step.expectedState?.multiClientKeys, !keys.isEmpty {
                return "multi-client expectations: " + keys.joined(separator: ", ")
            }
        }
        return nil
    }

    func run(directory: URL) throws -> SpecReport {
        var report = SpecReport()
        var lines: [String] = []
        for url in try SpecPaths.specFiles(in: directory) {
            var counts = SpecReport.Counts()
            let fileName = url.lastPathComponent
            let file: SpecFile
            do {
                file = try SpecDecoder.decodeFile(name: fileName, bytes: Array(try Data(contentsOf: url)))
            } catch {
                counts.failed += 1
                report.failures.append(.init(file: fileName, test: "(file)", summary: "cannot decode: \(error)"))
                lines.append("FAIL \(fileName): cannot decode: \(error)")
                lines.append("spec-tests \(fileName): 0 passed, 1 failed, 0 skipped")
                report.total.add(counts)
                continue
            }
            for test in file.tests {
                let id = "\(fileName) :: \(test.name)"
                if let filter, !filter.isEmpty, !test.name.contains(filter) {
                    counts.skipped += 1
                    continue
                }
                if let reason = Self.skipReason(test) {
                    counts.skipped += 1
                    lines.append("skip \(id): \(reason)")
                    continue
                }
                report.ran.insert(id)
                switch Self.runTest(test) {
                case nil:
                    counts.passed += 1
                case let (summary, details)?:
                    counts.failed += 1
                    report.failures.append(.init(file: fileName, test: test.name, summary: summary))
                    lines.append("FAIL \(id)")
                    lines += details.map { "    " + $0 }
                }
            }
            lines.append("spec-tests \(fileName): \(counts.passed) passed, \(counts.failed) failed, \(counts.skipped) skipped")
            report.total.add(counts)
        }
        lines.append(
            "spec-tests total: \(report.total.passed) passed, \(report.total.failed) failed, \(report.total.skipped) skipped")
        report.text = lines.joined(separator: "\n")
        return report
    }

    /// Runs one test in a fresh directory; returns `nil` when it passes, otherwise a one-line
    /// summary and the lines of the diff.
    static func runTest(_ test: SpecTest) -> (summary: String, details: [String])? {
        let steps: [SpecStep]
        switch test.steps {
        case .success(let decoded): steps = decoded
        case .failure(let error): return ("cannot decode: \(error)", ["cannot decode: \(error)"])
        }
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("doccache-spec-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let driver: SpecDriver
        do {
            driver = try SpecDriver(directory: directory, config: test.config)
        } catch {
            return ("cannot open the store: \(error)", ["cannot open the store: \(error)"])
        }
        defer { driver.shutdown() }
        do throws(SpecStepFailure) {
            try driver.run(steps)
            return nil
        } catch {
            let summary = "step \(error.stepIndex): \(error.problems.first ?? "failed")"
            return (summary, ["step \(error.stepIndex): \(error.step)"] + error.problems.map { "  " + $0 })
        }
    }
}

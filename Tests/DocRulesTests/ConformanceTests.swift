import DocModel
@testable import DocRules
import DocTestSupport
import DocTestTraits
import Foundation
import Testing

/// The rules conformance suites: `../shared/conformance/rules` beside the repository, or
/// `RULES_CONFORMANCE_DIR`; skipped when absent, a failure under `CI=true` (``ExternalSuite``).
let rulesSuites = ExternalSuite.rulesConformance

@Suite(.cpuBound) struct ConformanceTests {
    @Test(.enabled(if: rulesSuites.isEnabled))
    func sharedSuitesPass() throws {
        let report = RulesConformance.run(path: try rulesSuites.folder().path)
        print(report)
        #expect(report.suites.count >= 11, "suites found: \(report.suites)")
        #expect(report.passed > 0)
        #expect(report.failed == 0, "\(report)")
        #expect(report.summary == "rules-conformance: \(report.passed) passed, 0 failed, \(report.skipped) skipped")
    }

    @Test(.enabled(if: rulesSuites.isEnabled))
    func runsOneSuiteFolder() throws {
        let report = RulesConformance.run(path: try rulesSuites.folder().path + "/quickstart-v9")
        #expect(report.suites == ["quickstart-v9"])
        #expect(report.passed + report.failed == 7)
    }

    @Test func missingDirectoryFails() {
        let report = RulesConformance.run(path: packageRoot + "/does-not-exist")
        #expect(!report.succeeded)
        #expect(report.description.hasSuffix("rules-conformance: 0 passed, 1 failed, 0 skipped"))
    }
}

/// Where an external suite is, or why its tests are skipped or fail, for each environment.
@Suite(.cpuBound) struct ExternalSuiteTests {
    let suite = ExternalSuite.specTests

    /// `ROOT/repo` (the package root) and, with `shared`, `ROOT/shared/spec-tests` beside it.
    static func layout(shared: Bool) throws -> (root: String, package: String) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("external-suite-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root + "/repo", withIntermediateDirectories: true)
        if shared { try FileManager.default.createDirectory(atPath: root + "/shared/spec-tests", withIntermediateDirectories: true) }
        return (root, root + "/repo")
    }

    @Test func absentInAPlainCloneIsSkippedWithOneLine() throws {
        let (root, package) = try Self.layout(shared: false)
        defer { try? FileManager.default.removeItem(atPath: root) }
        for environment in [[:], ["CI": "false"], ["CI": ""], ["SPEC_TESTS_DIR": ""]] {
            #expect(suite.locate(packageRoot: package, environment: environment, currentDirectory: package)
                == .skipped(line: "spec-tests: ../shared/spec-tests not found, skipped"), "\(environment)")
        }
    }

    @Test func absentUnderCIFails() throws {
        let (root, package) = try Self.layout(shared: false)
        defer { try? FileManager.default.removeItem(atPath: root) }
        for ci in ["true", "1"] {
            guard case .missing(let message) = suite.locate(packageRoot: package, environment: ["CI": ci], currentDirectory: package) else {
                Issue.record("CI=\(ci): expected a failure")
                continue
            }
            #expect(message.hasPrefix("spec-tests: ../shared/spec-tests not found (\(root)/shared/spec-tests) and CI=\(ci) requires it"))
            #expect(message.contains("SPEC_TESTS_DIR"))
        }
    }

    @Test func aMissingOverrideFailsEvenWhenTheDefaultExists() throws {
        let (root, package) = try Self.layout(shared: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        guard case .missing(let message) = suite.locate(packageRoot: package, environment: ["SPEC_TESTS_DIR": "/nonexistent"],
                                                        currentDirectory: package) else {
            Issue.record("expected a failure")
            return
        }
        #expect(message.hasPrefix("spec-tests: SPEC_TESTS_DIR=/nonexistent names no folder (/nonexistent)"))
        // A file is not a folder either.
        _ = FileManager.default.createFile(atPath: root + "/file", contents: Data())
        guard case .missing = suite.locate(packageRoot: package, environment: ["SPEC_TESTS_DIR": root + "/file"], currentDirectory: package) else {
            Issue.record("a file accepted as the spec folder")
            return
        }
    }

    @Test func foundByDefaultOrThroughTheVariable() throws {
        let (root, package) = try Self.layout(shared: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let expected = URL(fileURLWithPath: root).standardizedFileURL.path + "/shared/spec-tests"
        let byDefault = suite.locate(packageRoot: package, environment: ["CI": "true"], currentDirectory: "/")
        guard case .found(let folder) = byDefault else {
            Issue.record("not found by default: \(byDefault)")
            return
        }
        #expect(folder.path == expected && folder.isDefault)
        // Relative to the current directory, not to the package root.
        let named = suite.locate(packageRoot: "/", environment: ["SPEC_TESTS_DIR": "../shared/spec-tests"], currentDirectory: package)
        guard case .found(let moved) = named else {
            Issue.record("not found through SPEC_TESTS_DIR: \(named)")
            return
        }
        #expect(moved.path == expected && !moved.isDefault)
    }
}

import DocModel
@testable import DocRules
import Testing

/// The package root, from this file's path (`<root>/Tests/DocRulesTests/ConformanceTests.swift`).
let packageRoot: String = {
    var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(3)
    return parts.joined(separator: "/")
}()

/// `../shared/conformance/rules`, relative to the package root.
let conformanceDirectory = packageRoot + "/../shared/conformance/rules"

@Suite struct ConformanceTests {
    @Test func sharedSuitesPass() throws {
        let report = RulesConformance.run(path: conformanceDirectory)
        print(report)
        #expect(report.suites.count >= 11, "suites found: \(report.suites)")
        #expect(report.passed > 0)
        #expect(report.failed == 0, "\(report)")
        #expect(report.summary == "rules-conformance: \(report.passed) passed, 0 failed, \(report.skipped) skipped")
    }

    @Test func runsOneSuiteFolder() throws {
        let report = RulesConformance.run(path: conformanceDirectory + "/quickstart-v9")
        #expect(report.suites == ["quickstart-v9"])
        #expect(report.passed + report.failed == 7)
    }

    @Test func missingDirectoryFails() {
        let report = RulesConformance.run(path: conformanceDirectory + "/does-not-exist")
        #expect(!report.succeeded)
        #expect(report.description.hasSuffix("rules-conformance: 0 passed, 1 failed, 0 skipped"))
    }
}

import DocModel
import DocTestSupport
import DocTestTraits
import Foundation
import Testing
@testable import DocRules

/// `RulesCheck` and `RulesTest`, the library side of `docctl rules check` and `docctl rules test`.
@Suite(.cpuBound) struct RulesToolTests {
    /// Removes the directory of a file made by ``temporaryFile(_:_:)``.
    static func remove(_ path: String) {
        try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent)
    }

    static func temporaryFile(_ name: String, _ contents: String) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rules-tool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent(name).path
        try contents.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func checkReportsAGoodFile() {
        let path = packageRoot + "/Rules/firestore.rules"
        let report = RulesCheck.run(file: path)
        #expect(report.succeeded && report.exitStatus == 0 && report.ruleSet != nil)
        #expect(report.lines == ["rules-check: \(path) loaded (rules_version '2', 0 warnings)"])
    }

    @Test func checkReportsSyntaxErrorsWithTheirPosition() throws {
        let path = try Self.temporaryFile("broken.rules", """
            service cloud.firestore {
              match /databases/{db}/documents {
                match /a/{b} { allow read: if request.auth != null &&; }
              }
            }
            """)
        defer { Self.remove(path) }
        let report = RulesCheck.run(file: path)
        #expect(!report.succeeded && report.exitStatus == 1 && report.ruleSet == nil)
        #expect(report.error?.line == 3 && report.error?.column == 58)
        #expect(report.lines.count == 2)
        #expect(report.lines.first?.hasPrefix("\(path):3:58: error: expected ") == true)
        #expect(report.lines.last == "rules-check: \(path) did not load (1 error, 0 warnings)")
    }

    @Test func checkAddsWhatWasExpectedAndListsWarnings() throws {
        let version = try Self.temporaryFile("version.rules", "rules_version = '3';\nservice cloud.firestore {}\n")
        defer { Self.remove(version) }
        let bad = RulesCheck.run(file: version)
        #expect(bad.lines.first == "\(version):1:17: error: unsupported rules_version '3' (expected '1' or '2')")
        let warned = try Self.temporaryFile("warned.rules", """
            service cloud.firestore {
              match /databases/{db}/documents {
                match /a/{b} { allow read: if undefinedHelper(); }
              }
            }
            """)
        defer { Self.remove(warned) }
        let report = RulesCheck.run(file: warned)
        #expect(report.succeeded && report.warnings.count == 1)
        #expect(report.lines.count == 2)
        #expect(report.lines[0].hasPrefix("\(warned):3:35: warning: "))
        #expect(report.lines[1] == "rules-check: \(warned) loaded (rules_version '1', 1 warning)")
    }

    @Test func checkReportsFilesThatCannotBeRead() {
        let report = RulesCheck.run(file: "/nonexistent/firestore.rules")
        #expect(report.error?.code == .io && report.exitStatus == 1)
        #expect(report.lines == [
            "/nonexistent/firestore.rules: error: cannot read the rules file: no such file",
            "rules-check: /nonexistent/firestore.rules did not load (1 error, 0 warnings)",
        ])
        let directory = RulesCheck.run(file: packageRoot + "/Rules")
        #expect(directory.error?.message.contains("is a directory") == true)
    }

    @Test(.enabled(if: rulesSuites.isEnabled))
    func testRunsTheSharedSuites() throws {
        let all = RulesTest.run(path: try rulesSuites.folder().path)
        #expect(all.exitStatus == 0 && all.lines.count == 1)
        #expect(all.lines.last == "rules-conformance: \(all.passed) passed, 0 failed, \(all.skipped) skipped")
    }

    @Test func testPrintsFailuresThenTheSummary() throws {
        // A suite of our own with one wrong expectation.
        let rulesPath = try Self.temporaryFile("firestore.rules", """
            service cloud.firestore {
              match /databases/{db}/documents {
                match /notes/{id} { allow get: if request.auth.uid == resource.data.owner; }
              }
            }
            """)
        defer { Self.remove(rulesPath) }
        let folder = (rulesPath as NSString).deletingLastPathComponent
        try """
            {"suite": "notes", "cases": [
              {"name": "owner reads", "op": "get", "path": "notes/n1", "auth": {"uid": "ann"}, "expect": "allow",
               "extraSeed": {"notes/n1": {"owner": "ann"}}},
              {"name": "stranger reads", "op": "get", "path": "notes/n1", "auth": {"uid": "bob"}, "expect": "allow",
               "extraSeed": {"notes/n1": {"owner": "ann"}}}
            ]}
            """.write(toFile: folder + "/cases.json", atomically: true, encoding: .utf8)
        let report = RulesTest.run(path: folder)
        #expect(report.passed == 1 && report.failed == 1 && report.exitStatus == 1)
        #expect(report.lines.count == 2)
        #expect(report.lines[0].hasPrefix("FAIL notes › stranger reads: expected allow, got deny — permission denied: get on"))
        #expect(report.lines[1] == "rules-conformance: 1 passed, 1 failed, 0 skipped")
    }
}

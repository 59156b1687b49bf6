import ArgumentParser
import DocRules
import Foundation

/// `docctl rules`: check a rules file, run rules conformance suites.
struct RulesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rules",
        abstract: "Check rules files and run rules test suites.",
        discussion: """
            Examples:
              docctl rules check Rules/firestore.rules
              docctl rules test ../shared/conformance/rules
            """,
        subcommands: [Check.self, Test.self]
    )

    /// `docctl rules check FILE`.
    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check",
            abstract: "Parse a rules file and report errors (file:line:column) and warnings.",
            discussion: """
                Example:
                  docctl rules check Rules/firestore.rules

                Exit status 0 when the file parses, 1 when it does not.
                """
        )

        @Argument(help: "The rules file.")
        var file: String

        func run() async throws {
            let report = RulesCheck.run(file: file)
            for line in report.lines { Output.line(line) }
            if !report.succeeded { throw ExitCode(report.exitStatus) }
        }
    }

    /// `docctl rules test PATH`.
    struct Test: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "test",
            abstract: "Run a rules conformance suite folder, or every suite folder under PATH.",
            discussion: """
                A suite folder holds a rules file and cases.json (format: FORMAT.md of the
                conformance suites). Prints each failing case (suite, case, expected, actual,
                error), then `rules-conformance: P passed, F failed, S skipped`.

                Example:
                  docctl rules test ../shared/conformance/rules

                Exit status 0 only when no case failed.
                """
        )

        @Argument(help: "A suite folder or a folder of suite folders.")
        var path: String

        func run() async throws {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw CommandFailure(code: "notFound", message: "\(path) is not a folder")
            }
            let report = RulesTest.run(path: path)
            for line in report.lines { Output.line(line) }
            if !report.succeeded { throw ExitCode(report.exitStatus) }
        }
    }
}

public import DocModel
import Foundation
import Synchronization

/// The package root: the nearest folder above this file holding `Package.swift`.
public let packageRoot: String = {
    var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    while directory.path != "/" {
        if FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) {
            return directory.path
        }
        directory = directory.deletingLastPathComponent()
    }
    return FileManager.default.currentDirectoryPath
}()

/// A conformance suite kept outside the repository: in the `shared` folder beside it, as CI
/// lays it out, or in a folder an environment variable names. Every test that reads one asks
/// here where it is; the answer is decided once per test process:
///
/// - the variable is set: that folder, which must exist (a missing one fails the tests);
/// - otherwise the default folder, when it exists;
/// - otherwise, under `CI=true`, the tests fail, saying what is missing and how to provide it;
/// - otherwise (a plain clone) the tests are skipped, not passed, and one line says so, once:
///   `spec-tests: ../shared/spec-tests not found, skipped`.
///
/// ```swift
/// @Test(.enabled(if: ExternalSuite.specTests.isEnabled)) func specs() throws {
///     let folder = try ExternalSuite.specTests.folder()   // throws why, when missing
///     ...
/// }
/// ```
public struct ExternalSuite: Sendable {
    /// Firestore's client spec tests (`Tests/DocCacheTests/SpecTests`).
    public static let specTests = ExternalSuite(
        name: "spec-tests", defaultPath: "../shared/spec-tests", environmentKey: "SPEC_TESTS_DIR")
    /// The rules conformance suites (`Tests/DocRulesTests`, `docctl rules test` end to end).
    public static let rulesConformance = ExternalSuite(
        name: "rules-conformance", defaultPath: "../shared/conformance/rules", environmentKey: "RULES_CONFORMANCE_DIR")

    /// The name its lines start with.
    public let name: String
    /// Where it is by default, relative to the package root.
    public let defaultPath: String
    /// The variable naming another folder (relative paths from the current directory).
    public let environmentKey: String
    /// This process's decision for each suite, by name.
    private static let decisions = Mutex<[String: Location]>([:])

    /// A folder to run.
    public struct Folder: Sendable, Equatable {
        /// Absolute, without `..`.
        public var path: String
        /// `false` when the environment variable named it.
        public var isDefault: Bool
    }

    public enum Location: Sendable, Equatable {
        case found(Folder)
        /// Absent where that is allowed: the tests are skipped; `line` says so.
        case skipped(line: String)
        /// Absent where it is required: the tests fail with `message`.
        case missing(message: String)
    }

    /// The decision for one environment.
    public func locate(packageRoot: String, environment: [String: String], currentDirectory: String) -> Location {
        if let override = environment[environmentKey], !override.isEmpty {
            let path = Self.absolute(override, from: currentDirectory)
            guard Self.isFolder(path) else {
                return .missing(message: "\(name): \(environmentKey)=\(override) names no folder (\(path)); "
                    + "set it to the folder holding the suite, or unset it to use \(defaultPath)")
            }
            return .found(Folder(path: path, isDefault: false))
        }
        let path = Self.absolute(defaultPath, from: packageRoot)
        if Self.isFolder(path) { return .found(Folder(path: path, isDefault: true)) }
        if let ci = environment["CI"], !["", "0", "false", "no"].contains(ci.lowercased()) {
            return .missing(message: "\(name): \(defaultPath) not found (\(path)) and CI=\(ci) requires it; "
                + "put the shared folder beside the repository, or set \(environmentKey) to the suite's folder")
        }
        return .skipped(line: "\(name): \(defaultPath) not found, skipped")
    }

    /// The decision for this process (its environment and current directory), made once; a
    /// skip is printed here, the first time it is asked for.
    public var location: Location {
        Self.decisions.withLock { decisions in
            if let decided = decisions[name] { return decided }
            let location = locate(packageRoot: packageRoot, environment: ProcessInfo.processInfo.environment,
                                  currentDirectory: FileManager.default.currentDirectoryPath)
            if case .skipped(let line) = location { print(line) }
            decisions[name] = location
            return location
        }
    }

    /// Whether the tests that read the suite run (found, or missing where that is a failure).
    public var isEnabled: Bool {
        if case .skipped = location { return false }
        return true
    }

    /// The folder to run, or the reason there is none.
    public func folder() throws(DocError) -> Folder {
        switch location {
        case .found(let folder): return folder
        case .missing(let message), .skipped(line: let message): throw DocError(.failedPrecondition, message)
        }
    }

    static func absolute(_ path: String, from base: String) -> String {
        URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: base, isDirectory: true)).standardizedFileURL.path
    }

    static func isFolder(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }
}

import Foundation

/// Where the spec tests and the known-failures list are.
enum SpecPaths {
    /// The environment variable naming another directory of spec files.
    static let environmentKey = "SPEC_TESTS_DIR"

    /// The directory of this source file (`Tests/DocCacheTests/SpecTests`).
    static func sourceDirectory(filePath: String = #filePath) -> URL {
        URL(fileURLWithPath: filePath).deletingLastPathComponent()
    }

    /// The package root: the nearest directory above this file holding `Package.swift`.
    static func packageRoot(filePath: String = #filePath) -> URL? {
        var directory = sourceDirectory(filePath: filePath)
        while directory.path != "/" {
            if FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) {
                return directory
            }
            directory = directory.deletingLastPathComponent()
        }
        return nil
    }

    /// The default spec directory, `../shared/spec-tests` from the package root.
    static func defaultDirectory(filePath: String = #filePath) -> URL? {
        packageRoot(filePath: filePath)?
            .deletingLastPathComponent()
            .appendingPathComponent("shared")
            .appendingPathComponent("spec-tests")
            .standardizedFileURL
    }

    /// The directory to run: `SPEC_TESTS_DIR` when set (relative paths from the current
    /// directory), otherwise the default. `isDefault` tells whether known failures apply.
    static func directory(environment: [String: String] = ProcessInfo.processInfo.environment) -> (url: URL, isDefault: Bool)? {
        if let override = environment[environmentKey], !override.isEmpty {
            let url = URL(fileURLWithPath: override, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
            return (url.standardizedFileURL, false)
        }
        return defaultDirectory().map { ($0, true) }
    }

    /// `Tests/DocCacheTests/SpecTests/known-failures.txt`.
    static var knownFailuresFile: URL {
        sourceDirectory().appendingPathComponent("known-failures.txt")
    }

    /// The `*_spec_test.json` files of `directory`, sorted by name.
    static func specFiles(in directory: URL) throws -> [URL] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix("_spec_test.json") }
            .sorted()
            .map { directory.appendingPathComponent($0) }
    }
}

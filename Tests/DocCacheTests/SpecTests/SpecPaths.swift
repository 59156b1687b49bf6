import Foundation

/// Where the known-failures list and the spec files are (the spec directory itself:
/// `ExternalSuite.specTests`, `SPEC_TESTS_DIR` or `../shared/spec-tests`).
enum SpecPaths {
    /// The directory of this source file (`Tests/DocCacheTests/SpecTests`).
    static func sourceDirectory(filePath: String = #filePath) -> URL {
        URL(fileURLWithPath: filePath).deletingLastPathComponent()
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

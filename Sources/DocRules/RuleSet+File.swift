#if canImport(FoundationEssentials)
internal import FoundationEssentials
#else
internal import Foundation
#endif

extension RuleSet {
    /// Reads and parses the rules file at `path`. Messages name the file as `path`.
    ///
    /// - Throws: ``RulesError`` with code `io` when the file cannot be read or is not UTF-8
    ///   (line and column 0), otherwise the first problem of the file with its line and column
    ///   (see ``parse(source:file:)``).
    public static func load(path: String) throws(RulesError) -> RuleSet {
        let fm = FileManager.default
        guard fm.fileExists(atPath: path) else {
            throw RulesError(.io, "cannot read the rules file: no such file", file: path, line: 0, column: 0)
        }
        guard (try? fm.contentsOfDirectory(atPath: path)) == nil else {
            throw RulesError(.io, "cannot read the rules file: it is a directory", file: path, line: 0, column: 0)
        }
        guard let data = fm.contents(atPath: path) else {
            throw RulesError(.io, "cannot read the rules file (permissions?)", file: path, line: 0, column: 0)
        }
        guard let source = String(bytes: data, encoding: .utf8) else {
            throw RulesError(.io, "the rules file is not valid UTF-8", file: path, line: 0, column: 0)
        }
        return try parse(source: source, file: path)
    }
}

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DocModel

enum Directories {
    /// Creates `path` and its missing parents (mode 0700: caches and data are the user's own).
    static func create(_ path: String) throws(DocError) {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw DocError(.failedPrecondition, "cannot create the directory \(path): \(error)")
        }
    }
}

extension Directories {
    /// Removes `path` and everything in it; a missing path is fine.
    static func remove(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }
}

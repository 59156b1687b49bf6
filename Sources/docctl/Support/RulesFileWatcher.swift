import DocServer
import Foundation
import Logging

/// Reloads the server's rules when their file changes (polled every two seconds). A file
/// that does not parse is not loaded: the server keeps the last good rules and logs why.
struct RulesFileWatcher: Sendable {
    let path: String
    let core: DocServerCore
    let logger: Logger

    func run() async {
        var last = modificationDate()
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(2))
            let current = modificationDate()
            guard current != last else { continue }
            last = current
            do {
                try await core.reloadRules(from: path)
                logger.notice("rules reloaded", metadata: ["rules": "\(path)"])
            } catch {
                logger.error("rules not reloaded: the last good rules stay", metadata: ["rules": "\(path)", "error": "\(error)"])
            }
        }
    }

    private func modificationDate() -> Date? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
    }
}

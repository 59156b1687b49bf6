#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The cache a `docctl listen` uses for its own run when no `--cache` is given:
/// `~/.docctl/tmp/listen-PID-RANDOM`, removed when the listen ends (also on Ctrl-C). A listen
/// that was killed outright cannot remove its own, so each new listen first removes the ones
/// whose process is gone.
struct PrivateListenCache {
    let path: String

    static var directory: String { Environment.home + "/tmp" }

    /// A fresh path for this process, after removing the caches of listens that no longer run.
    static func make() -> PrivateListenCache {
        removeAbandoned()
        let pid = getpid()
        return PrivateListenCache(path: directory + "/listen-\(pid)-\(UInt64.random(in: 0...UInt64.max))")
    }

    func remove() { Directories.remove(path) }

    /// Removes `listen-PID-…` directories whose process has ended. Names without a pid (older
    /// versions) are left alone: nothing says whether they are in use.
    static func removeAbandoned() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in names {
            guard let pid = owner(of: name), pid != getpid() else { continue }
            if kill(pid, 0) != 0, errno == ESRCH { Directories.remove(directory + "/" + name) }
        }
    }

    /// The pid in a `listen-PID-RANDOM` name.
    static func owner(of name: String) -> pid_t? {
        let parts = name.split(separator: "-")
        guard parts.count == 3, parts[0] == "listen", UInt64(parts[2]) != nil, let pid = pid_t(parts[1]), pid > 0 else { return nil }
        return pid
    }
}

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Option values from the environment: a flag wins, then the variable, then the default.
enum Environment {
    static func value(_ flag: String?, _ variable: String) -> String? {
        if let flag { return flag }
        if let value = ProcessInfo.processInfo.environment[variable], !value.isEmpty { return value }
        return nil
    }

    /// `~/.docctl`, where docctl keeps its secret, caches and the default server data.
    static var home: String {
        let home = ProcessInfo.processInfo.environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "."
        return home + "/.docctl"
    }
}

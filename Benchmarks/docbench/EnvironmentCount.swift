import DocModel
import Foundation

/// A count from the environment variable `name` (a scenario's size), `defaultValue` when it
/// is not set. Throws `invalidArgument` for a value that is not a whole number of at least
/// `minimum`: a mistyped override must not silently run the default.
func environmentCount(_ name: String, default defaultValue: Int, minimum: Int) throws(DocError) -> Int {
    guard let text = ProcessInfo.processInfo.environment[name] else { return defaultValue }
    guard let count = Int(text), count >= minimum else {
        throw DocError(.invalidArgument, "\(name) must be a whole number of at least \(minimum), not \"\(text)\"")
    }
    return count
}

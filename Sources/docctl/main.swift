import ArgumentParser
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The entry point: ArgumentParser's own main exits 64 on usage errors; docctl promises 2.
do {
    var command = try Docctl.parseAsRoot()
    if let asyncCommand = command as? any AsyncParsableCommand {
        try await runAsync(asyncCommand)
    } else {
        try command.run()
    }
    exit(0)
} catch let failure as CommandFailure {
    failure.report()
    exit(failure.exitCode)
} catch {
    let code = Docctl.exitCode(for: error)
    let message = Docctl.fullMessage(for: error)
    if code == .success {
        if !message.isEmpty { print(message) }
        exit(0)
    }
    if error is ExitCode {
        exit(code.rawValue)
    }
    Output.standardError(message)
    exit(CommandFailure.usage)
}

/// Runs an async command (opened from the existential, so the async `run` is the one called).
func runAsync(_ command: some AsyncParsableCommand) async throws {
    var command = command
    try await command.run()
}

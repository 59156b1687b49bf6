import ArgumentParser
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The entry point. ArgumentParser's own main exits 64 on usage errors; docctl promises 2.
let command: any ParsableCommand
do {
    command = try Docctl.parseAsRoot()
} catch {
    exit(finish(error, as: Docctl.self))
}
do {
    if let asyncCommand = command as? any AsyncParsableCommand {
        try await runAsync(asyncCommand)
    } else {
        var command = command
        try command.run()
    }
    exit(0)
} catch {
    exit(finish(error, as: type(of: command)))
}

/// Runs an async command (opened from the existential, so the async `run` is the one called).
func runAsync(_ command: some AsyncParsableCommand) async throws {
    var command = command
    try await command.run()
}

/// Reports an error the way its kind asks and returns the exit status: a command's failure
/// (its code), help (0), an explicit exit code, or a usage error (2, with the command's usage).
func finish(_ error: any Error, as commandType: any ParsableCommand.Type) -> Int32 {
    if let failure = error as? CommandFailure {
        failure.report()
        return failure.exitCode
    }
    let code = commandType.exitCode(for: error)
    let message = commandType.fullMessage(for: error)
    if code == .success {
        if !message.isEmpty { Output.line(message) }
        return 0
    }
    if error is ExitCode { return code.rawValue }
    Output.standardError(message)
    return CommandFailure.usage
}

import DocModel
import DocTestSupport
import Foundation
import Testing

/// `docctl serve` stopped with Ctrl-C (SIGINT; SIGTERM takes the same path) exits 0 and logs
/// nothing at error level or above, idle or with a `docctl listen` connected: an operator
/// reads an error line as a failure. Hummingbird logs `Waiting on child channel:
/// CancellationError()` and `Server shutdown error: Already closed` for a server stopped by
/// task cancellation, as the admin socket was (DocServerTests' `ShutdownLogTests`).
@Suite("docctl serve shutdown logs", .serialized)
struct ServeShutdownLogTests {
    /// The lines of a `docctl serve` log (`DATE LEVEL LABEL: …`) at error level or above.
    static func errorLines(_ log: String) -> [String] {
        log.split(separator: "\n").map(String.init).filter { line in
            let fields = line.split(separator: " ", maxSplits: 2)
            return fields.count > 1 && ["error", "critical"].contains(fields[1])
        }
    }

    @Test(arguments: [false, true])
    func gracefulShutdownLogsNoErrors(withListener: Bool) async throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("doccache-shutdown-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: base) }
        let secret = base + "/secret"
        let launcher = try DocctlRunner(server: "http://127.0.0.1:0", secret: secret)
        defer { launcher.removeHome() }
        // The default log level (info), as an operator runs it.
        let serve = try launcher.start(["serve", "--port", "0", "--data", base + "/data", "--secret", secret])
        defer { serve.kill() }
        let first = try #require(await serve.line(0), "serve printed no address; stderr: \(serve.standardError)")
        let url = try #require(first.hasPrefix("listening on ") ? String(first.dropFirst("listening on ".count)) : nil, "\(first)")

        var listen: ChildProcess?
        defer { listen?.kill() }
        if withListener {
            let docctl = launcher.pointing(at: url)
            let started = try docctl.start(["listen", "rooms", "--limit", "10", "--json"] + docctl.user("bob"))
            listen = started
            _ = try #require(await started.line(0), "listen printed no snapshot; stderr: \(started.standardError)")
            let connected = await eventually { started.standardError.contains("connected to \(url)") }
            #expect(connected, "listen: \(started.standardError)")
        }

        serve.interrupt()
        #expect(await serve.waitForExit() == 0, "stderr: \(serve.standardError)")
        #expect(serve.standardError.contains("stopped"), "stderr: \(serve.standardError)")
        #expect(Self.errorLines(serve.standardError).isEmpty, "stderr: \(serve.standardError)")
    }
}

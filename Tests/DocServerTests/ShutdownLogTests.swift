import DocModel
import DocTestSupport
import Foundation
import Logging
import Testing
@testable import DocServer

/// A graceful shutdown is not a failure: stopping the HTTP server (``DocServerHTTP/shutdown()``)
/// or the admin socket (``AdminSocketServer/shutdown()``) logs nothing at error level or
/// above, with and without connections served before; a real failure still logs an error.
///
/// Hummingbird logs a server stopped by task cancellation at error level (`Waiting on child
/// channel: CancellationError()`, often `Server shutdown error: Already closed` as well), so
/// neither may be stopped that way. IntegrationTests' `ServeShutdownLogTests` checks
/// `docctl serve` itself.
@Suite struct ShutdownLogTests {
    /// The captured lines at error level or above, as text for a failing expectation.
    static func errors(_ logs: CapturedLogs) -> [String] {
        logs.lines.filter { $0.level >= .error }.map { "\($0.level) [\($0.label)] \($0.message) \($0.metadata)" }
    }

    @Test(arguments: [nil, 0] as [Int?])
    func httpServerStopsWithoutErrors(metricsPort: Int?) async throws {
        let logs = CapturedLogs()
        let server = TestServer()
        let http = DocServerHTTP(
            core: server.core, verifier: try await TokenVerifier(secret: Array("shutdown-log-secret-0123456789abcdef".utf8)),
            settings: HTTPServerSettings(port: 0, shutdownGrace: .seconds(10), metricsPort: metricsPort),
            logger: logs.logger("doccache.server.http"))
        let (ready, readyContinuation) = AsyncStream<ServerAddress>.makeStream()
        let serving = Task {
            defer { readyContinuation.finish() }
            try await http.run(handleSignals: false) { address in readyContinuation.yield(address) }
        }
        var readiness = ready.makeAsyncIterator()
        let address = try #require(await readiness.next())

        // Connections that stay open (kept alive by the client) when the shutdown begins.
        #expect(try await HTTPClient.send("GET", address.url + HTTPServerSettings.healthPath).status == 200)
        let metricsURL = try #require(address.metricsURL)
        #expect(try await HTTPClient.send("GET", metricsURL).status == 200)

        await http.shutdown()
        try await serving.value
        #expect(Self.errors(logs).isEmpty, "\(Self.errors(logs))")
        #expect(logs.lines.contains { $0.message.hasPrefix("shutting down") }, "\(logs.lines.map(\.message))")
    }

    @Test func adminSocketStopsWithoutErrors() async throws {
        let logs = CapturedLogs()
        let server = TestServer()
        let work = TempDirectory()
        defer { work.remove() }
        let admin = AdminSocketServer(store: server.store, path: AdminSocketServer.path(dataDirectory: server.directory.path),
                                      logger: logs.logger("doccache.server"))
        let ready = AsyncStream<Void>.makeStream()
        let serving = Task { await admin.run { ready.continuation.yield() } }
        var readiness = ready.stream.makeAsyncIterator()
        await readiness.next()

        // A backup through the socket, as `docctl backup` takes it from a running server. The
        // call blocks until the server has sent it: on a thread of its own, as the server's
        // handler needs the cooperative pool (two cores: two threads).
        let (directory, file) = (server.directory.path, work.path + "/online.backup")
        let source = try await onOwnThread { try LevelDBBackup.backup(dataDirectory: directory, to: file).source }
        #expect(source == .runningServer(socket: admin.path))

        await admin.shutdown()
        await serving.value
        #expect(Self.errors(logs).isEmpty, "\(Self.errors(logs))")
        #expect(!FileManager.default.fileExists(atPath: admin.path), "the socket file was left behind")
    }

    /// A shutdown asked for before the socket's task started still ends it.
    @Test func adminSocketShutdownBeforeRun() async throws {
        let logs = CapturedLogs()
        let server = TestServer()
        let admin = AdminSocketServer(store: server.store, path: AdminSocketServer.path(dataDirectory: server.directory.path),
                                      logger: logs.logger("doccache.server"))
        await admin.shutdown()
        await admin.run()
        #expect(Self.errors(logs).isEmpty, "\(Self.errors(logs))")
        #expect(!FileManager.default.fileExists(atPath: admin.path))
    }

    /// A socket that cannot be bound (a path longer than the system allows) is still an error.
    @Test func adminSocketThatCannotBindLogsAnError() async throws {
        let logs = CapturedLogs()
        let server = TestServer()
        let path = server.directory.path + "/" + String(repeating: "d", count: 200) + "/" + AdminSocketServer.fileName
        let admin = AdminSocketServer(store: server.store, path: path, logger: logs.logger("doccache.server"))
        await admin.run()
        let errors = logs.lines.filter { $0.level == .error }
        #expect(errors.contains { $0.message == "the admin socket stopped: online backups are unavailable" }, "\(logs.lines.map(\.message))")
    }
}

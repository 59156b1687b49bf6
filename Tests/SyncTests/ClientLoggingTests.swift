import DocModel
import DocTestSupport
import Foundation
import Logging
import Testing
@testable import DocCache

/// The store says why it is not syncing through the swift-log logger the app passes, and
/// says nothing without one.
@Suite("Client logging", .timeLimit(.minutes(2)))
struct ClientLoggingTests {
    @Test func rejectionsConnectionStatesAndStreamFailuresAreLogged() async throws {
        try await SyncHarness.run { harness in
            let captured = CapturedLogs()
            let host = harness.host
            let directory = NSTemporaryDirectory() + "doccache-logging-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let transport = InProcessTransport(host: host)
            let store = try await DocumentStore.open(
                directory: directory, tenant: "acme", user: "u1",
                network: NetworkConfiguration(transport: transport, token: { try await host.token(tenant: "acme", uid: "u1") }),
                logger: captured.logger(DocumentStore.loggerLabel))
            // Rejected by the server: an update of a document that does not exist.
            let handle = try await store.document("notes/missing").updateData(["n": 1])
            await #expect(throws: DocError.self) { _ = try await handle.committed }
            let rejection = captured.lines.first { $0.message.contains("rejected a write") }
            #expect(rejection?.level == .warning)
            #expect(rejection?.metadata["code"] == "notFound", "\(String(describing: rejection))")
            #expect(rejection?.metadata["batch"] == String(handle.batchID))
            #expect(rejection?.metadata["store"]?.hasPrefix(directory) == true, "every line names its store")

            // The server goes away: the stream failure and the retry are logged.
            transport.dropAfterNextCommit(thenRefuse: true)
            _ = try await store.document("notes/a").setData(["n": 1])
            #expect(await eventually { captured.lines.contains { $0.message.contains("stream failed; retrying with backoff") } },
                    "\(captured.lines.map(\.message))")
            // The state change follows the failures, on its own schedule (the rejection above no
            // longer ends the write stream, so nothing else changes the state earlier).
            #expect(await eventually { captured.lines.contains { $0.message.hasPrefix("online state:") } },
                    "\(captured.lines.map(\.message))")
            await store.close()
        }
    }

    @Test func withoutALoggerTheStoreIsSilent() {
        // The default logger's handler drops everything, whatever the app bootstrapped.
        #expect(DocumentStore.silentLogger.handler is SwiftLogNoOpLogHandler)
        #expect(DocumentStore.silentLogger.label == DocumentStore.loggerLabel)
    }
}

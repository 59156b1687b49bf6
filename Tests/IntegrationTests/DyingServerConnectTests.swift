@testable import DocCache
import DocModel
import DocTestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Testing

/// A server that dies in the middle of the WebSocket upgrade (killed after accepting the
/// connection and reading the request, before answering): connecting must fail, not wait
/// forever, so the client goes on to its next attempt.
@Suite("Connecting to a server that dies during the upgrade")
struct DyingServerConnectTests {
    /// Listens on 127.0.0.1, reads each request and closes the connection without an answer.
    final class SilentlyClosingListener: Sendable {
        let port: Int
        private let listener: Int32

        init() throws {
            (listener, port) = try listenOnLoopback(backlog: 8)
            Thread.detachNewThread { [listener] in
                while true {
                    let client = accept(listener, nil, nil)
                    guard client >= 0 else { return }
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    _ = read(client, &buffer, buffer.count)
                    close(client)
                }
            }
        }

        func stop() {
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
        }
    }

    @Test func connectingFailsInsteadOfWaitingForever() async throws {
        let listener = try SilentlyClosingListener()
        defer { listener.stop() }
        var transport = try WebSocketTransport(url: "http://127.0.0.1:\(listener.port)")
        transport.connectTimeout = .seconds(2)
        let outcome = Mutex<String?>(nil)
        let attempt = Task {
            do {
                let connection = try await transport.connect()
                await connection.close()
                outcome.withLock { $0 = "connected" }
            } catch {
                outcome.withLock { $0 = "failed: \((error as? DocError).map { "\($0.code)" } ?? "\(error)")" }
            }
        }
        // Generous (`eventually`'s default cap): other suites running in parallel can hold the
        // shared executor for a while (60 s was too short on a machine twice as slow); without
        // the timeout the attempt never ends at all.
        let start = ContinuousClock.now
        let settled = await eventually { outcome.withLock { $0 } != nil }
        #expect(settled, "connect() was still waiting after \(Int(livenessCap)) s (its timeout is 2 s)")
        print("dying-server-connect: \(outcome.withLock { $0 } ?? "still waiting") after \(start.duration(to: .now))")
        #expect(outcome.withLock { $0 } == "failed: unavailable")
        attempt.cancel()
    }
}

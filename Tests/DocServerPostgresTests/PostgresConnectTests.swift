import DocModel
import DocServer
import DocTestSupport
import Testing
@testable import DocServerPostgres

/// Connections opened outside the pool (the store's own, the commit-notice listener's).
@Suite struct PostgresConnectTests {
    /// A connect whose caller gave up (cancelled here: a store closing while its notice
    /// listener reconnects) may still connect afterwards; that connection is closed, not left
    /// open on the server (in a debug build postgres-nio stops the process on a connection
    /// released unclosed). Found by `ConvergenceTests`, whose instances restart.
    @Test func aConnectionMadeAfterItsCallerGaveUpIsClosed() async throws {
        let url = try await freshDatabase("lateconnect")
        let database = try PostgresDatabase(url: try PostgresURL(url), options: testOptions())
        #expect(try await openConnections(to: url) == 0)
        // Cancelled at moments spread over a connect's few milliseconds: some land before the
        // socket opens, some in the middle of the start-up handshake.
        for i in 0..<60 {
            let attempt = Task { try await database.connect() }
            try await Task.sleep(for: .microseconds(100 * (i % 30)))
            attempt.cancel()
            if let connection = try? await attempt.value { try await connection.close() }
        }
        // Every connection the attempts made is closed: none stays on the server.
        let closed = await eventually { (try? await openConnections(to: url)) == 0 }
        let left = try await openConnections(to: url)
        #expect(closed, "connections left open: \(left)")
    }
}

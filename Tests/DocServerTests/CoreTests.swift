import DocModel
import DocProtocol
import Testing
@testable import DocServer

@Suite struct CoreTests {
    @Test func handshakeChecks() async throws {
        let server = TestServer()
        await #expect(throws: DocError(.failedPrecondition, "protocol version 2 is not supported; this server speaks 1…1", at: "hello.protocolVersion")) {
            try await server.core.handshake(tenant: "acme", uid: "u", clientID: "c", protocolVersion: ProtocolVersion(2))
        }
        await #expect(throws: DocError.self) { try await server.core.handshake(tenant: "a/b", uid: "u", clientID: "c") }
        await #expect(throws: DocError.self) { try await server.core.handshake(tenant: "acme", uid: "u", clientID: "") }
        let hello = ClientMessage.Hello(token: "verified elsewhere", clientID: "client-9")
        let connection = try await server.core.handshake(hello, tenant: "acme", uid: "u")
        #expect(connection.clientID == "client-9" && connection.tenant.rawValue == "acme")
        #expect(connection.outbound.drain() == [.welcome(.init(connectionID: connection.id))])
        // A second hello on the same connection is refused without closing it.
        await server.core.receive(.hello(hello), on: connection)
        let refusal = try #require(connection.outbound.drain().first)
        guard case .error(let e) = refusal else { Issue.record("expected an error frame"); return }
        #expect(e.error.code == .failedPrecondition && !e.fatal)
    }

    @Test func badFramesAreAnsweredAndChangeNothing() async throws {
        let server = TestServer()
        let c = try await server.connect()
        // Not JSON: an error frame.
        await server.core.receive(text: "{nope", on: c)
        guard case .error(let e)? = c.outbound.drain().first else { Issue.record("expected an error frame"); return }
        #expect(e.error.code == .invalidArgument && !e.fatal && e.error.message.contains("invalid JSON"))
        // A batch with a bad mutation: a writeError for that batch, and no outcome stored.
        let badWrite = #"{"type":"write","clientId":"client-1","batchId":3,"mutations":[{"path":"a/b","kind":"set","data":{"__x__":1}}]}"#
        await server.core.receive(text: badWrite, on: c)
        let writeError = try #require(c.outbound.drain().first?.writeError)
        #expect(writeError.batchID == 3 && writeError.error.code == .invalidArgument)
        #expect(try await server.tenantStore("acme").outcome(of: BatchKey(clientID: "client-1", batchID: 3)) == nil)
        #expect(try await server.tenantStore("acme").documents([T.key("a/b")]).documents.isEmpty)
        // A timestamp outside 0001 … 9999 in the data: refused the same way, naming the field.
        let farFuture = #"{"type":"write","clientId":"client-1","batchId":4,"mutations":[{"path":"a/b","kind":"set","data":{"m":{"t":{"$timestamp":{"seconds":9223372036854775807,"nanos":0}}}}}]}"#
        await server.core.receive(text: farFuture, on: c)
        let outOfRange = try #require(c.outbound.drain().first?.writeError)
        #expect(outOfRange.batchID == 4 && outOfRange.error.code == .invalidArgument)
        #expect(outOfRange.error.message.contains("outside 0001-01-01") && outOfRange.error.location?.contains("m.t") == true,
                "\(outOfRange.error)")
        #expect(try await server.tenantStore("acme").documents([T.key("a/b")]).documents.isEmpty)
        // A target with a bad query: removed with the cause.
        await server.core.receive(text: #"{"type":"addTarget","targetId":2,"target":{"path":"a","limit":1,"filters":[{"op":"??"}]}}"#, on: c)
        let removed = try #require(c.outbound.drain().first?.targetChange)
        #expect(removed.state == .removed && removed.targetIDs == [2] && removed.cause?.code == .invalidArgument)
        // An oversized frame.
        await server.core.receive(frame: Array(repeating: UInt8(ascii: " "), count: 4 * 1024 * 1024 + 1), on: c)
        guard case .error(let big)? = c.outbound.drain().first else { Issue.record("expected an error frame"); return }
        #expect(big.error.message.contains("the limit is 4194304"))
        // The connection still works.
        await server.core.receive(frame: FrameEncoder.encode(.write(.init(clientID: "client-1", batchID: 3, mutations: [T.set("a/b", [:])]))), on: c)
        #expect(c.outbound.drain().first?.writeResult?.batchID == 3)
        await server.core.receive(frame: FrameEncoder.encode(.writeHandshake(.init(streamToken: [1]))), on: c)
        guard case .writeHandshake(let hs)? = c.outbound.drain().first else { Issue.record("expected writeHandshake"); return }
        #expect(WatchToken(bytes: hs.streamToken) != nil)
    }

    @Test func outboxOverflowCutsTheClientOff() async throws {
        let server = TestServer(configuration: ServerConfiguration(outboxCapacity: 4))
        let slow = try await server.connect(client: "slow")
        _ = await server.core.watch(.init(targetID: 2, target: T.collection("x", limit: 100)), on: slow)   // 3 frames, not read
        let w = try await server.connect(client: "w")
        await server.write(w, batch: 1, [T.set("x/1", [:])])   // 2 more: over the capacity
        #expect(slow.outbound.isFinished)
        let last = slow.outbound.drain()
        #expect(last.count == 1)
        guard case .error(let e)? = last.first else { Issue.record("expected the fatal error"); return }
        #expect(e.fatal && e.error.code == .resourceExhausted)
        // Later commits skip it, and the server carries on.
        #expect(await server.write(w, batch: 2, [T.set("x/2", [:])]).writeResult != nil)
        #expect(await slow.outbound.next() == nil)
    }

    @Test func outboxDeliversInOrderToAWaitingReader() async throws {
        let outbox = ConnectionOutbox(capacity: 100)
        let reader = Task { () -> [ServerMessage] in
            var got: [ServerMessage] = []
            for await message in outbox { got.append(message) }
            return got
        }
        let messages = (0..<10).map { ServerMessage.existenceFilter(.init(targetID: Int32($0), count: $0)) }
        for m in messages { outbox.send([m]) }
        outbox.finish(with: .error(.init(DocError(.unavailable, "bye"), fatal: true)))
        #expect(outbox.send(messages) == false)
        let got = await reader.value
        #expect(Array(got.prefix(10)) == messages)
        #expect(got.count == 11)
        // A cancelled reader stops waiting.
        let idle = ConnectionOutbox(capacity: 1)
        let waiting = Task { await idle.next() }
        waiting.cancel()
        #expect(await waiting.value == nil)
    }

    @Test func shutdownDrainsAndClosesConnections() async throws {
        let server = TestServer()
        let c = try await server.connect()
        _ = await server.core.watch(.init(targetID: 2, target: T.collection("x", limit: 10)), on: c)
        _ = c.outbound.drain()
        #expect(await server.core.health().isOK)
        #expect(await server.core.health().connections == 1)
        #expect(await server.core.health().targets == 1)
        await server.core.shutdown()
        let last = c.outbound.drain()
        guard case .error(let e)? = last.last else { Issue.record("expected a fatal error frame"); return }
        #expect(e.fatal && e.error.code == .unavailable)
        #expect(c.outbound.isFinished)
        let health = await server.core.health()
        #expect(!health.isOK && health.status == "unavailable")
        await #expect(throws: DocError.self) { try await server.connect(client: "late") }
        let refused = await server.core.commit(tenant: "acme", uid: "u", clientID: "c", batchID: 1, mutations: [])
        #expect(refused.writeError?.error.code == .unavailable)
    }

    @Test func closeDropsTheConnectionsTargets() async throws {
        let server = TestServer()
        let c = try await server.connect()
        _ = await server.core.watch(.init(targetID: 2, target: T.collection("x", limit: 10)), on: c)
        await server.core.close(c)
        #expect(c.outbound.isFinished)
        #expect(await server.core.health().targets == 0)
        // Requests on a closed connection do nothing.
        #expect(await server.core.watch(.init(targetID: 4, target: T.collection("x", limit: 10)), on: c).isEmpty)
    }

    @Test func maintenancePrunesOutcomesAfterRetention() async throws {
        let server = TestServer(configuration: ServerConfiguration(outcomeRetentionMicros: 24 * 3_600 * 1_000_000))
        let c = try await server.connect()
        func n() async throws -> Value? {
            try await server.tenantStore("acme").documents([T.key("k/1")]).documents[T.key("k/1")]?.data["n"]
        }
        await server.write(c, batch: 1, [T.increment("k/1")])
        await server.write(c, batch: 2, [T.increment("k/1")])
        server.clock.advance(by: 23 * 3_600 * 1_000_000)
        #expect(await server.core.runMaintenance().outcomesPruned == 0)
        // Still deduplicated after 23 hours.
        await server.write(c, batch: 1, [T.increment("k/1")])
        #expect(try await n()?.isIdentical(to: 2) == true)
        server.clock.advance(by: 2 * 3_600 * 1_000_000)
        // Batch 1's outcome goes; batch 2's stays, the client's latest.
        #expect(await server.core.runMaintenance().outcomesPruned == 1)
        let store = try server.tenantStore("acme")
        #expect(try await store.outcome(of: BatchKey(clientID: "client-1", batchID: 1)) == nil)
        #expect(try await store.outcome(of: BatchKey(clientID: "client-1", batchID: 2)) != nil)
        // Past the retention, batch 1 sent again (its answer lost, the device offline for days)
        // is refused, not applied again: a later batch of its client has an outcome, so it was
        // processed before (docs/operations.md, "Devices offline for days").
        let refused = await server.write(c, batch: 1, [T.increment("k/1")])
        #expect(refused.writeError?.error.isBatchProcessedBefore == true, "\(refused)")
        #expect(refused.writeError?.error.message.contains("not applied again") == true)
        #expect(try await n()?.isIdentical(to: 2) == true)
        // Nothing more of that connection is attempted; on the next, batch 2 is answered from
        // its outcome, and a new batch is applied.
        #expect(await server.write(c, batch: 2, [T.increment("k/1")]).writeError?.error.code == .unavailable)
        let c2 = try await server.connect()
        #expect(await server.write(c2, batch: 2, [T.increment("k/1")]).writeError == nil)
        #expect(await server.write(c2, batch: 3, [T.increment("k/1")]).writeError == nil)
        #expect(try await n()?.isIdentical(to: 3) == true)
        // Another client's batch 1 is its own: applied.
        let other = try await server.connect(client: "client-2")
        #expect(await server.write(other, batch: 1, [T.increment("k/1")]).writeError == nil)
        #expect(try await n()?.isIdentical(to: 4) == true)
    }

    @Test func oneCommitReachesAThousandDocumentListeners() async throws {
        let server = TestServer()
        var listeners: [ServerConnection] = []
        for i in 0..<1_000 {
            let c = try await server.connect(client: "l\(i)")
            _ = await server.core.watch(.init(targetID: 1, target: T.target(DocModel.Query(document: T.key("hot/doc")))), on: c)
            _ = c.outbound.drain()
            listeners.append(c)
        }
        let w = try await server.connect(client: "w")
        // How long this takes is docbench's `fanout` scenario, in a release build.
        await server.write(w, batch: 1, [T.set("hot/doc", ["v": 1])])
        for c in listeners {
            let got = c.outbound.drain()
            #expect(got.count == 2 && got[0].documentChange?.document.data["v"] == 1)
        }
    }
}

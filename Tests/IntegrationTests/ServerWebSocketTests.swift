import DocModel
import DocProtocol
import DocServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// The server on a real socket: HTTP health, the WebSocket handshake, frames in and out, bad
/// input, tenancy and shutdown, spoken with raw protocol frames.
@Suite("Server over WebSocket", .serialized)
struct ServerWebSocketTests {
    static func key(_ path: String) -> DocumentKey { try! DocumentKey(path) }
    static func set(_ path: String, _ fields: [String: Value]) -> Mutation { .set(key(path), ObjectValue(fields)) }
    static func collection(_ path: String, limit: Int = 100) -> Target {
        try! DocModel.Query(collection: path).limit(to: limit).toTarget()
    }

    func healthBody(_ url: String) async throws -> (Int, [String: Any]) {
        let (data, response) = try await URLSession.shared.data(from: URL(string: url + "/health")!)
        let status = (response as! HTTPURLResponse).statusCode
        return (status, try JSONSerialization.jsonObject(with: data) as! [String: Any])
    }

    @Test func healthReportsConnectionsAndTargets() async throws {
        let server = try await LiveServer()
        defer { server.removeData() }
        let (status, body) = try await healthBody(server.url)
        #expect(status == 200)
        #expect(body["status"] as? String == "ok")
        #expect(body["connections"] as? Int == 0)

        let socket = RawSocket(url: server.url)
        guard case .welcome? = await socket.hello(token: try await server.token()) else {
            Issue.record("no welcome"); return
        }
        socket.send(.addTarget(.init(targetID: 2, target: Self.collection("rooms"))))
        _ = await socket.next(where: { if case .targetChange(let c) = $0 { c.state == .current } else { false } })
        let (_, after) = try await healthBody(server.url)
        #expect(after["connections"] as? Int == 1)
        #expect(after["targets"] as? Int == 1)
        await socket.close()
        await server.stop()
    }

    /// A plain GET of the WebSocket endpoint (no upgrade asked for) is answered 426 with what
    /// the path is, not an empty 200 that a misconfigured health check would take for one.
    @Test func aPlainGetOfTheListenPathIsToldToUpgrade() async throws {
        let server = try await LiveServer()
        defer { server.removeData() }
        let (data, response) = try await URLSession.shared.data(from: URL(string: server.url + "/listen")!)
        let http = response as! HTTPURLResponse
        #expect(http.statusCode == 426)
        #expect((http.value(forHTTPHeaderField: "Upgrade") ?? "").lowercased() == "websocket")
        #expect(String(decoding: data, as: UTF8.self).contains("is the WebSocket endpoint"), "\(String(decoding: data, as: UTF8.self))")
        // The endpoint still upgrades.
        let socket = RawSocket(url: server.url)
        #expect(await socket.hello(token: try await server.token()).map { if case .welcome = $0 { true } else { false } } == true)
        await socket.close()
        await server.stop()
    }

    @Test func badTokensAreRefusedWithAFatalUnauthenticatedFrame() async throws {
        let server = try await LiveServer()
        defer { server.removeData() }
        let otherSecret = try await TokenMinter(secret: Array("some-other-secret-0123456789abcdefgh".utf8))
        let badTokens = [
            "not-a-jwt",
            try await otherSecret.mint(tenant: "acme", uid: "alice"),           // wrong signature
            try await server.token(ttl: .seconds(-60)),                          // expired
        ]
        for token in badTokens {
            let socket = RawSocket(url: server.url)
            let answer = await socket.hello(token: token)
            guard case .error(let error)? = answer else {
                Issue.record("expected an error frame, got \(String(describing: answer))"); continue
            }
            #expect(error.fatal)
            #expect(error.error.code == .unauthenticated)
            #expect(await socket.next() == nil)   // and the server closed the socket
            await socket.close()
        }
        // The server is still up.
        let (status, _) = try await healthBody(server.url)
        #expect(status == 200)
        await server.stop()
    }

    @Test func aConnectionEndsWhenItsTokenExpires() async throws {
        let server = try await LiveServer()
        defer { server.removeData() }
        let socket = RawSocket(url: server.url)
        let opened = ContinuousClock.now
        guard case .welcome? = await socket.hello(token: try await server.token(ttl: .seconds(2))) else {
            Issue.record("no welcome"); return
        }
        socket.send(.addTarget(.init(targetID: 2, target: Self.collection("rooms"))))
        // The target's frames first, then the end: a fatal unauthenticated frame and the close.
        let end = await socket.next(where: { if case .error = $0 { true } else { false } })
        guard case .error(let error)? = end else { Issue.record("the connection was not ended: \(String(describing: end))"); return }
        #expect(error.fatal)
        #expect(error.error.code == .unauthenticated)
        #expect(error.error.message.hasPrefix("token expired at "), "\(error.error.message)")
        #expect(error.error.message.hasSuffix("; reconnect with a fresh token"))
        let elapsed = opened.duration(to: .now)
        // Not before the token's 2 s (less a second of clock rounding); the upper cap is for
        // liveness only (the test's awaits wait for a thread when the whole suite runs).
        #expect(elapsed >= .seconds(1) && elapsed < .seconds(60), "ended after \(elapsed)")
        #expect(await socket.next() == nil)
        // A fresh token connects again.
        let again = RawSocket(url: server.url)
        guard case .welcome? = await again.hello(token: try await server.token()) else {
            Issue.record("a fresh token was refused"); return
        }
        await again.close()
        await server.stop()
    }

    @Test func theFirstFrameMustBeHello() async throws {
        let server = try await LiveServer()
        defer { server.removeData() }
        let socket = RawSocket(url: server.url)
        socket.send(.addTarget(.init(targetID: 2, target: Self.collection("rooms"))))
        guard case .error(let error)? = await socket.next() else { Issue.record("no error frame"); return }
        #expect(error.fatal)
        #expect(error.error.code == .failedPrecondition)
        #expect(error.error.message.contains("hello"))
        #expect(await socket.next() == nil)
        await socket.close()

        let garbage = RawSocket(url: server.url)
        garbage.send("{not json")
        guard case .error(let error2)? = await garbage.next() else { Issue.record("no error frame"); return }
        #expect(error2.error.code == .invalidArgument)
        await garbage.close()

        // A first frame larger than any hello is refused by its size, unread.
        let large = RawSocket(url: server.url)
        large.send(.write(.init(clientID: "c", batchID: 1, mutations: [.set(try DocumentKey("notes/a"),
                                                                           ObjectValue(["s": .string(String(repeating: "x", count: 100_000))]))])))
        guard case .error(let error3)? = await large.next() else { Issue.record("no error frame"); return }
        #expect(error3.fatal && error3.error.code == .invalidArgument)
        #expect(error3.error.message.contains("must be hello") && error3.error.message.contains("bytes"), "\(error3.error)")
        await large.close()
        await server.stop()
    }

    @Test func malformedFramesGetErrorsAndChangeNothing() async throws {
        let server = try await LiveServer()
        defer { server.removeData() }
        let socket = RawSocket(url: server.url)
        guard case .welcome? = await socket.hello(token: try await server.token(), clientID: "c1") else {
            Issue.record("no welcome"); return
        }
        let bad = [
            "[]", "{}", "{\"type\":\"write\"}", "{\"type\":\"nope\"}",
            "{\"type\":\"write\",\"clientId\":\"c1\",\"batchId\":1,\"writes\":[{\"set\":{\"path\":\"odd\",\"fields\":{}}}]}",
            String(repeating: "x", count: 1000),
        ]
        for frame in bad {
            socket.send(frame)
            guard let answer = await socket.next() else { Issue.record("socket closed after \(frame.prefix(40))"); return }
            switch answer {
            case .error(let e): #expect(e.error.code == .invalidArgument); #expect(!e.fatal)
            case .writeError(let e): #expect(e.error.code == .invalidArgument)
            default: Issue.record("unexpected answer \(answer) to \(frame.prefix(40))")
            }
        }
        // An oversized document (over the 1 MiB document limit, under the frame limit).
        let big = Value.string(String(repeating: "a", count: 1_100_000))
        socket.send(.write(.init(clientID: "c1", batchID: 7, mutations: [Self.set("docs/big", ["blob": big])])))
        guard case .writeError(let tooBig)? = await socket.next() else { Issue.record("no writeError for the big document"); return }
        #expect(tooBig.batchID == 7)
        #expect(tooBig.error.code == .invalidArgument)

        // Still connected and usable; nothing was stored.
        socket.send(.addTarget(.init(targetID: 2, target: Self.collection("docs"))))
        var documents = 0
        while let message = await socket.next() {
            if case .documentChange = message { documents += 1 }
            if case .targetChange(let c) = message, c.state == .current { break }
        }
        #expect(documents == 0)
        let health = await server.core.health()
        #expect(health.isOK)
        await socket.close()
        await server.stop()
    }

    @Test func framesOverTheSizeLimitCloseTheConnectionNotTheServer() async throws {
        let server = try await LiveServer()
        defer { server.removeData() }
        let socket = RawSocket(url: server.url, maxFrameSize: 16 * 1024 * 1024)
        guard case .welcome? = await socket.hello(token: try await server.token()) else { Issue.record("no welcome"); return }
        socket.send(String(repeating: " ", count: 5 * 1024 * 1024))
        #expect(await socket.next() == nil)
        await socket.close()
        let (status, _) = try await healthBody(server.url)
        #expect(status == 200)
        await server.stop()
    }

    @Test func writesReachOtherConnectionsLive() async throws {
        let server = try await LiveServer()
        defer { server.removeData() }
        let listener = RawSocket(url: server.url)
        let writer = RawSocket(url: server.url)
        guard case .welcome? = await listener.hello(token: try await server.token(uid: "bob")),
              case .welcome? = await writer.hello(token: try await server.token(uid: "alice"), clientID: "w") else {
            Issue.record("no welcome"); return
        }
        listener.send(.addTarget(.init(targetID: 2, target: Self.collection("rooms"))))
        _ = await listener.next(where: { if case .targetChange(let c) = $0 { c.state == .current } else { false } })
        writer.send(.write(.init(clientID: "w", batchID: 1, mutations: [Self.set("rooms/r1", ["name": "Lobby"])])))
        guard case .writeResult(let result)? = await writer.next(where: { if case .writeResult = $0 { true } else { false } }) else {
            Issue.record("no write result"); return
        }
        guard case .documentChange(let change)? = await listener.next(where: { if case .documentChange = $0 { true } else { false } }) else {
            Issue.record("the listener saw no change"); return
        }
        #expect(change.document.key == Self.key("rooms/r1"))
        #expect(change.document.data["name"] == "Lobby")
        #expect(change.document.version == result.commitVersion)
        await listener.close()
        await writer.close()
        await server.stop()
    }

    @Test func aTokenForOneTenantReachesNothingOfAnother() async throws {
        let server = try await LiveServer()
        defer { server.removeData() }
        let a = RawSocket(url: server.url)
        let b = RawSocket(url: server.url)
        guard case .welcome? = await a.hello(token: try await server.token(tenant: "tenant-a"), clientID: "a"),
              case .welcome? = await b.hello(token: try await server.token(tenant: "tenant-b"), clientID: "b") else {
            Issue.record("no welcome"); return
        }
        a.send(.write(.init(clientID: "a", batchID: 1, mutations: [Self.set("secrets/s1", ["v": 1])])))
        guard case .writeResult? = await a.next() else { Issue.record("tenant A could not write"); return }
        // B listens to the same path and reads the same document: nothing of A's is there.
        b.send(.addTarget(.init(targetID: 2, target: Self.collection("secrets"))))
        b.send(.addTarget(.init(targetID: 4, target: try! DocModel.Query(collection: "secrets").limit(to: 10).toTarget())))
        var leaked = 0
        var current = 0
        while current < 2, let message = await b.next() {
            if case .documentChange = message { leaked += 1 }
            if case .targetChange(let c) = message, c.state == .current { current += c.targetIDs.count }
        }
        #expect(leaked == 0)
        // B writes the same path in its own tenant: A's document is unchanged.
        b.send(.write(.init(clientID: "b", batchID: 1, mutations: [Self.set("secrets/s1", ["v": 2])])))
        _ = await b.next(where: { if case .writeResult = $0 { true } else { false } })
        a.send(.addTarget(.init(targetID: 2, target: Self.collection("secrets"))))
        guard case .documentChange(let mine)? = await a.next(where: { if case .documentChange = $0 { true } else { false } }) else {
            Issue.record("A lost its document"); return
        }
        #expect(mine.document.data["v"] == 1)
        // A batch naming another client id is refused.
        a.send(.write(.init(clientID: "b", batchID: 2, mutations: [Self.set("secrets/s2", [:])])))
        guard case .writeError(let refused)? = await a.next(where: { if case .writeError = $0 { true } else { false } }) else {
            Issue.record("foreign client id accepted"); return
        }
        #expect(refused.error.code == .invalidArgument)
        await a.close()
        await b.close()
        await server.stop()
    }

    @Test func gracefulShutdownEndsStreamsWithUnavailable() async throws {
        let server = try await LiveServer()
        defer { server.removeData() }
        let socket = RawSocket(url: server.url)
        guard case .welcome? = await socket.hello(token: try await server.token()) else { Issue.record("no welcome"); return }
        socket.send(.addTarget(.init(targetID: 2, target: Self.collection("rooms"))))
        _ = await socket.next(where: { if case .targetChange(let c) = $0 { c.state == .current } else { false } })
        let stopping = Task { await server.stop() }
        guard case .error(let error)? = await socket.next(where: { if case .error = $0 { true } else { false } }) else {
            Issue.record("no shutdown frame"); return
        }
        #expect(error.fatal)
        #expect(error.error.code == .unavailable)
        #expect(await socket.next() == nil)
        await stopping.value
        await socket.close()
    }
}

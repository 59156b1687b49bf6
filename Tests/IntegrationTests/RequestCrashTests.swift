import DocModel
import DocProtocol
import DocServer
import DocTestSupport
import Foundation
import Synchronization
import Testing

/// The request processor's exactly-once promise against a real server process killed with
/// SIGKILL at random moments while a client submits 500 transfers.
@Suite("Requests across server crashes", .serialized)
struct RequestCrashTests {
    static let accounts = ["a", "b", "c", "d", "e"]
    static let opening: Int64 = 10_000

    /// Sends one batch until the server answers it, reconnecting (with the same client and
    /// batch ids: the server deduplicates) whenever the connection drops.
    final class ResilientWriter: @unchecked Sendable {
        let server: ServerProcess
        let token: String
        let clientID: String
        private var socket: RawSocket?

        init(server: ServerProcess, token: String, clientID: String) {
            self.server = server
            self.token = token
            self.clientID = clientID
        }

        func commit(_ batchID: Int, _ mutations: [Mutation]) async throws -> ServerMessage {
            let deadline = ContinuousClock.now + .seconds(120)
            while ContinuousClock.now < deadline {
                if socket == nil {
                    let candidate = RawSocket(url: server.url)
                    guard case .welcome? = await candidate.hello(token: token, clientID: clientID) else {
                        await candidate.close()
                        try await Task.sleep(for: .milliseconds(30))
                        continue
                    }
                    socket = candidate
                }
                socket!.send(.write(.init(clientID: clientID, batchID: batchID, mutations: mutations)))
                while let answer = await socket!.next() {
                    switch answer {
                    case .writeResult(let r) where r.batchID == batchID: return answer
                    case .writeError(let e) where e.batchID == batchID && !e.error.code.isTransient: return answer
                    case .writeError(let e) where e.batchID == batchID: break   // transient: resend
                    default: continue
                    }
                    break
                }
                await socket?.close()
                socket = nil
            }
            throw DocError(.deadlineExceeded, "batch \(batchID) was never answered")
        }

        func close() async { await socket?.close() }
    }

    /// Every document of a collection (at most 1,000), read with a listen.
    static func readAll(_ collection: String, server: ServerProcess, token: String) async throws -> [String: [String: Value]] {
        let socket = RawSocket(url: server.url)
        defer { Task { await socket.close() } }
        guard case .welcome? = await socket.hello(token: token) else { throw DocError(.unavailable, "no welcome") }
        socket.send(.addTarget(.init(targetID: 2, target: try DocModel.Query(collection: collection).limit(to: 1_000).toTarget())))
        var documents: [String: [String: Value]] = [:]
        while let message = await socket.next() {
            if case .documentChange(let change) = message { documents[change.document.key.documentID] = change.document.data.fields }
            if case .targetChange(let change) = message, change.state == .current { return documents }
            if case .targetChange(let change) = message, change.state == .removed { throw change.cause ?? DocError(.unknown, "removed") }
        }
        throw DocError(.unavailable, "the listen on \(collection) ended")
    }

    @Test func fiveHundredTransfersEachHaveExactlyOneEffect() async throws {
        let server = try ServerProcess(arguments: ["--examples"])
        defer { server.removeData() }
        try await server.start()
        let admin = try await server.token(uid: "admin", claims: ["admin": true])
        let alice = try await server.token(uid: "alice")

        let seeder = ResilientWriter(server: server, token: admin, clientID: "seeder")
        let seeded = try await seeder.commit(1, Self.accounts.map { .set(try! DocumentKey("accounts/\($0)"), ObjectValue(["balance": .integer(Self.opening)])) })
        guard case .writeResult = seeded else { Issue.record("seeding failed: \(seeded)"); return }
        await seeder.close()

        // A killer: SIGKILL at random moments, restart on the same port and data. Each kill
        // waits until a write was answered since the restart before it, so the writes make
        // progress however long a restart takes on a loaded machine.
        var random = SplitMix64(seed: 0xC0FFEE)
        let killerDone = Flag()
        let kills = Counter()
        let answered = Counter()
        let killer = Task.detached {
            var rng = SplitMix64(seed: 0xBADC0DE)
            while !killerDone.isSet {
                let answeredBefore = answered.value
                try? await Task.sleep(for: .milliseconds(Int(40 + rng.next() % 300)))
                while answered.value == answeredBefore && !killerDone.isSet { try? await Task.sleep(for: .milliseconds(10)) }
                if killerDone.isSet { break }
                server.kill()
                kills.increment()
                // Started again until it runs: with no server, no answer would ever come.
                while (try? await server.start()) == nil && !killerDone.isSet {
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
        }
        // Ends the killer also when the writes below throw.
        defer { killerDone.set() }

        let writer = ResilientWriter(server: server, token: alice, clientID: "alice-device")
        var rejectedWrites = 0
        for i in 0..<500 {
            let from = Self.accounts[Int(random.next() % 5)]
            var to = Self.accounts[Int(random.next() % 5)]
            if to == from, i % 7 != 0 { to = Self.accounts[(Self.accounts.firstIndex(of: from)! + 1) % 5] }   // a few same-account ones
            let amount = Int64(1 + random.next() % 3_000)
            let request = Mutation.set(try DocumentKey("requests/t\(i)"), ObjectValue([
                "type": "transfer", "status": "pending", "createdBy": "alice",
                "params": .map(["from": .string("accounts/\(from)"), "to": .string("accounts/\(to)"), "amount": .integer(amount)]),
            ]))
            if case .writeError = try await writer.commit(i + 1, [request]) { rejectedWrites += 1 }
            answered.increment()
        }
        killerDone.set()
        await killer.value
        await writer.close()
        #expect(rejectedWrites == 0)
        #expect(kills.value >= 5, "the server was killed only \(kills.value) times")

        // One more kill and a clean start: the start-up recovery processes what is left.
        server.kill()
        try await server.start()
        var requests: [String: [String: Value]] = [:]
        let settled = await eventually {
            guard let read = try? await Self.readAll("requests", server: server, token: alice) else { return false }
            requests = read
            return read.count == 500 && read.values.allSatisfy { $0["status"] != "pending" }
        }
        #expect(settled, "\(requests.values.filter { $0["status"] == "pending" }.count) requests still pending of \(requests.count)")
        let ledger = try await Self.readAll("ledger", server: server, token: alice)
        let accounts = try await Self.readAll("accounts", server: server, token: alice)

        // Each applied request has exactly one ledger entry; rejected ones none.
        let applied = requests.filter { $0.value["status"] == "applied" }
        #expect(Set(ledger.keys) == Set(applied.keys))
        #expect(applied.count + requests.filter { $0.value["status"] == "rejected" }.count == 500)
        print("request-crash: \(kills.value) SIGKILLs, \(applied.count) applied, \(500 - applied.count) rejected, \(ledger.count) ledger entries")
        // Balances are exactly the opening balances moved by the ledger, once each.
        var expected = Dictionary(uniqueKeysWithValues: Self.accounts.map { ("accounts/\($0)", Self.opening) })
        for entry in ledger.values {
            guard case .string(let from)? = entry["from"], case .string(let to)? = entry["to"], case .integer(let amount)? = entry["amount"] else {
                Issue.record("malformed ledger entry \(entry)"); continue
            }
            expected[from]! -= amount
            expected[to]! += amount
        }
        for id in Self.accounts {
            #expect(accounts[id]?["balance"] == .integer(expected["accounts/\(id)"]!), "accounts/\(id)")
        }
        let total = accounts.values.reduce(Int64(0)) { sum, fields in
            if case .integer(let b)? = fields["balance"] { return sum + b } else { return sum }
        }
        #expect(total == Self.opening * 5)
        #expect(accounts.values.allSatisfy { if case .integer(let b)? = $0["balance"] { b >= 0 } else { false } })
        await server.stop()
    }
}

final class Flag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}

final class Counter: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

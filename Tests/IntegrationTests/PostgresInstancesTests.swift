import DocCache
import DocModel
import DocProtocol
import DocServer
import DocTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PostgresTestSupport
import Synchronization
import Testing

/// Issue 16's proofs across real processes: two `docctl serve --store postgres://…` instances
/// on one throwaway PostgreSQL cluster, clients behind a balancing proxy, one instance killed
/// with SIGKILL and restarted while they work.
@Suite("Several server instances on one PostgreSQL database", .serialized)
struct PostgresInstancesTests {
    /// Two instances on a fresh database of the shared cluster, started (A first: it creates
    /// the token secret both use).
    static func twoInstances(_ label: String, extra: [String] = []) async throws -> (ServerProcess, ServerProcess) {
        let url = try await PostgresCluster.shared().createUniqueDatabase(prefix: label)
        let a = try ServerProcess(arguments: ["--store", url] + extra)
        try await a.start()
        let b = try ServerProcess(arguments: ["--store", url] + extra, sharingSecretWith: a)
        try await b.start()
        return (a, b)
    }

    /// Every change of one document a listener received: (version, value of `n`), and the
    /// global snapshot versions, in arrival order.
    final class DocumentWatcher: Sendable {
        final class Seen: Sendable {
            let state = Mutex<(changes: [(SnapshotVersion, Value?)], snapshots: [SnapshotVersion], current: Bool)>(([], [], false))
            func withLock<R>(_ body: (inout (changes: [(SnapshotVersion, Value?)], snapshots: [SnapshotVersion], current: Bool)) -> R) -> R {
                state.withLock { body(&$0) }
            }
        }
        private let seen = Seen()
        private let task: Task<Void, Never>
        private let socket: RawSocket

        init(url: String, token: String, path: String) {
            socket = RawSocket(url: url)
            let socket = self.socket
            let seen = self.seen
            task = Task {
                guard case .welcome? = await socket.hello(token: token, clientID: "watcher") else { return }
                socket.send(.addTarget(.init(targetID: 1, target: try! DocModel.Query(document: DocumentKey(path)).toTarget())))
                while let message = await socket.next() {
                    switch message {
                    case .documentChange(let change):
                        seen.withLock { $0.changes.append((change.document.version, change.document.data["n"])) }
                    case .targetChange(let change) where change.state == .current:
                        seen.withLock { $0.current = true }
                    case .targetChange(let change) where change.isGlobalSnapshot:
                        if let version = change.snapshotVersion { seen.withLock { $0.snapshots.append(version) } }
                    default:
                        continue
                    }
                }
            }
        }

        var changes: [(SnapshotVersion, Value?)] { seen.withLock { $0.changes } }
        var snapshots: [SnapshotVersion] { seen.withLock { $0.snapshots } }
        var isCurrent: Bool { seen.withLock { $0.current } }

        func close() async {
            await socket.close()
            await task.value
        }
    }

    /// Attachments kept in the database: a photo uploaded through one instance is downloaded
    /// through the other, which shares no directory with it.
    @Test func anAttachmentUploadedThroughOneInstanceIsDownloadedThroughTheOther() async throws {
        let (a, b) = try await Self.twoInstances("blobs", extra: ["--attachments-in-store"])
        defer { a.kill(); b.kill(); a.removeData(); b.removeData() }
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("doccache-pg-blobs-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        func open(_ server: ServerProcess, _ user: String) async throws -> DocumentStore {
            let token = try await server.token(uid: user)
            let endpoint = try ServerEndpoint(url: server.url) { token }
            return try await DocumentStore.open(directory: root + "/" + user, tenant: "acme", user: user, server: endpoint)
        }
        let photo = (0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 11) }
        let field = try await open(a, "alice")
        let attachment = try await field.attachments.add(bytes: photo, contentType: "image/jpeg")
        let form = try await field.document("kyc/f1").setData(["selfie": .attachment(attachment.id)])
        _ = try await form.committed
        #expect(await field.attachments.attachment(attachment.id)?.state == .uploaded)

        let office = try await open(b, "bob")
        let snapshot = try await office.document("kyc/f1").getDocument(source: .server)
        #expect(snapshot.get("selfie") == .attachment(attachment.id))
        #expect(try await office.attachments.bytes(attachment.id) == photo)
        // In the database, complete, and in no directory of either instance.
        let stored = try await PostgresCluster.shared().psql(
            "SELECT size, complete FROM doccache_blobs", database: String(a.extraArguments[1].split(separator: "/").last ?? ""))
        #expect(stored.trimmingCharacters(in: .whitespacesAndNewlines) == "3000000|t")
        for server in [a, b] {
            let files = FileManager.default.enumerator(atPath: server.dataDirectory)?.compactMap { $0 as? String } ?? []
            #expect(!files.contains { $0.contains(attachment.id.hex) }, "\(files)")
        }
        await field.close()
        await office.close()
    }

    /// An upload begun on one instance goes on, on the other, from the bytes the first kept.
    @Test func anUploadBegunOnOneInstanceIsFinishedOnTheOther() async throws {
        let (a, b) = try await Self.twoInstances("resume", extra: ["--attachments-in-store"])
        defer { a.kill(); b.kill(); a.removeData(); b.removeData() }
        let token = try await a.token(uid: "alice")
        let bytes = (0..<2_500_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 9) }
        let id = BlobDigest.id(of: bytes)
        func request(_ server: ServerProcess, _ method: String, _ suffix: String = "", body: ArraySlice<UInt8>? = nil,
                     offset: Int = 0) async throws -> (Int, [String: Any], Data) {
            var request = URLRequest(url: URL(string: "\(server.url)/attachments/\(id.hex)\(suffix)")!)
            request.httpMethod = method
            request.setValue("Bearer " + token, forHTTPHeaderField: "Authorization")
            request.setValue("close", forHTTPHeaderField: "Connection")
            if let body {
                request.setValue("image/jpeg", forHTTPHeaderField: "Content-Type")
                request.setValue(String(bytes.count), forHTTPHeaderField: "Upload-Length")
                request.setValue(String(offset), forHTTPHeaderField: "Upload-Offset")
                request.httpBody = Data(body)
            }
            let (data, response) = try await URLSession.shared.data(for: request)
            let json = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
            return ((response as? HTTPURLResponse)?.statusCode ?? 0, json, data)
        }
        // The first 1,000,000 bytes through A: kept, not complete.
        let first = try await request(a, "PUT", body: bytes[..<1_000_000])
        #expect(first.0 == 200 && first.1["complete"] as? Bool == false, "\(first.1)")
        // B knows how far it got, and takes the rest.
        let state = try await request(b, "GET", "/upload")
        #expect(state.0 == 200 && (state.1["received"] as? NSNumber)?.intValue == 1_000_000, "\(state.1)")
        let wrongOffset = try await request(b, "PUT", body: bytes[900_000...], offset: 900_000)
        #expect(wrongOffset.0 == 409, "\(wrongOffset.1)")
        let rest = try await request(b, "PUT", body: bytes[1_000_000...], offset: 1_000_000)
        #expect(rest.0 == 201 && rest.1["sha256"] as? String == id.hex, "\(rest.1)")
        // Read back whole through A.
        let download = try await request(a, "GET")
        #expect(download.0 == 200 && Array(download.2) == bytes)
    }

    @Test func attachmentsInTheStoreNeedAStoreAndNoDirectory() async throws {
        let docctl = try DocctlRunner(server: "", secret: "")
        defer { docctl.removeHome() }
        let alone = try await docctl.run(["serve", "--port", "0", "--data", docctl.home + "/data", "--attachments-in-store"])
        #expect(alone.status == 2, "\(alone)")
        #expect(alone.stderr.contains("--attachments-in-store keeps attachments in the --store database: give --store postgres://… too"),
                "\(alone)")
        let both = try await docctl.run(["serve", "--port", "0", "--store", "postgres://nobody@127.0.0.1:1/none",
                                         "--attachments-in-store", "--attachments", docctl.home + "/blobs"])
        #expect(both.status == 2, "\(both)")
        #expect(both.stderr.contains("give --attachments DIR or --attachments-in-store, not both"), "\(both)")
        #expect(!FileManager.default.fileExists(atPath: docctl.home + "/blobs"))
    }

    @Test func aThousandIncrementsThroughTwoInstancesOneKilledCountExactlyAThousand() async throws {
        let (a, b) = try await Self.twoInstances("increments")
        defer { a.kill(); b.kill(); a.removeData(); b.removeData() }
        let proxy = try BalancingProxy(backendPorts: [a.port, b.port])
        defer { proxy.stop() }

        // The watcher is connected to B, which is never killed; the counter exists first.
        let seeder = try await RequestCrashTests.ResilientWriter(server: b, uid: "seeder")
        guard case .writeResult? = await seeder.answer(1, [.set(try DocumentKey("counters/c"), ObjectValue(["n": 0]))]) else {
            Issue.record("seeding failed"); return
        }
        await seeder.close()
        let watcher = DocumentWatcher(url: b.url, token: try await b.token(uid: "watcher"), path: "counters/c")
        #expect(await eventually { watcher.isCurrent })

        // Four clients behind the proxy (their watch and write streams spread over both
        // instances), 250 increments each, all accepted locally first.
        let clients = 4, each = 250
        var stores: [DocumentStore] = []
        var directories: [String] = []
        for i in 0..<clients {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("doccache-pg-\(UUID().uuidString)").path
            directories.append(directory)
            let token = try await a.token(uid: "client-\(i)")
            let endpoint = try ServerEndpoint(url: "http://127.0.0.1:\(proxy.port)") { token }
            stores.append(try await DocumentStore.open(directory: directory, tenant: "acme", user: "client-\(i)", server: endpoint))
        }
        defer { for directory in directories { try? FileManager.default.removeItem(atPath: directory) } }
        for store in stores {
            let counter = try store.document("counters/c")
            for _ in 0..<each { _ = try await counter.updateData(["n": .increment(1)]) }
        }

        // Once about a third has arrived, A dies without a word and comes back a second later.
        let third = await eventually {
            if case .integer(let n)? = watcher.changes.last?.1 { return n >= Int64(clients * each / 3) }
            return false
        }
        #expect(third, "the increments did not start arriving")
        a.kill()
        try await Task.sleep(for: .seconds(1))
        try await a.start()

        var left: [Int] = []
        let drained = await eventually(300) {
            left = []
            for store in stores { left.append(await store.pendingWriteCount) }
            return left.allSatisfy { $0 == 0 }
        }
        #expect(drained, "queues not empty: \(left); proxy: \(proxy.connections)")
        let expected = Int64(clients * each)
        let counted = await eventually { if case .integer(let n)? = watcher.changes.last?.1 { n == expected } else { false } }
        let reader = try await b.token(uid: "reader")
        let onA = try await ServerReads.document("counters/c", url: a.url, token: reader)
        let onB = try await ServerReads.document("counters/c", url: b.url, token: reader)
        #expect(counted)
        #expect(onA?["n"] == .integer(expected), "through A: \(String(describing: onA))")
        #expect(onB?["n"] == .integer(expected), "through B: \(String(describing: onB))")

        // The watcher on B saw every committed version of the counter, in order: 0, 1, 2, …,
        // 1,000, each at a higher version than the one before, whichever instance committed it.
        let changes = watcher.changes
        let values: [Int64] = changes.map { change -> Int64 in
            if case .integer(let n)? = change.1 { return n }
            return -1
        }
        let firstGap = zip(values, Int64(0)...).first { $0.0 != $0.1 }?.1
        #expect(values == Array(0...expected), "\(values.count) values seen, first gap at \(String(describing: firstGap))")
        #expect(zip(changes, changes.dropFirst()).allSatisfy { $0.0 < $1.0 })
        let snapshots = watcher.snapshots
        #expect(zip(snapshots, snapshots.dropFirst()).allSatisfy { $0 <= $1 })
        #expect(proxy.connections.count == 2, "the proxy used \(proxy.connections)")
        print("pg-instances: \(clients * each) increments through \(proxy.connections) connections per backend; A killed once")

        for store in stores { await store.close() }
        await watcher.close()
    }

    @Test func twoHundredTransfersThroughBothInstancesConserveMoney() async throws {
        let (a, b) = try await Self.twoInstances("transfers", extra: ["--examples"])
        defer { a.kill(); b.kill(); a.removeData(); b.removeData() }
        let admin = try await RequestCrashTests.ResilientWriter(server: a, uid: "admin", claims: ["admin": true])
        // "hot" can cover only some of the 20 transfers out of it (20 × 300 > 2,000).
        let opening: [String: Int64] = ["hot": 2_000, "a": 10_000, "b": 10_000, "c": 10_000]
        let seeded = await admin.answer(1, opening.map { .set(try! DocumentKey("accounts/\($0.key)"), ObjectValue(["balance": .integer($0.value)])) })
        guard case .writeResult? = seeded else { Issue.record("seeding failed: \(String(describing: seeded))"); return }
        await admin.close()

        // 200 requests, half through each instance, all at once: 20 draw 300 from "hot" (which
        // can cover 6 of them), the rest move money among a, b and c.
        var random = SplitMix64(seed: 0x7A_4E_5F)
        var requests: [(server: ServerProcess, id: String, mutation: Mutation)] = []
        let others = ["a", "b", "c"]
        for i in 0..<200 {
            let from: String, to: String, amount: Int64
            if i % 10 == 0 {
                (from, to, amount) = ("hot", others[Int(random.next() % 3)], 300)
            } else {
                from = others[Int(random.next() % 3)]
                to = others.filter { $0 != from }[Int(random.next() % 2)]
                amount = Int64(1 + random.next() % 500)
            }
            let id = "t\(i)"
            requests.append((i % 2 == 0 ? a : b, id, .set(try DocumentKey("requests/\(id)"), ObjectValue([
                "type": "transfer", "status": "pending", "createdBy": "alice",
                "params": .map(["from": .string("accounts/\(from)"), "to": .string("accounts/\(to)"), "amount": .integer(amount)]),
            ]))))
        }
        let rejectedWrites = Counter()
        await withTaskGroup(of: Void.self) { group in
            for (index, server) in [a, b].enumerated() {
                let mine = requests.filter { $0.server === server }
                group.addTask {
                    // Several connections per instance, so requests are processed concurrently.
                    await withTaskGroup(of: Void.self) { inner in
                        for lane in 0..<4 {
                            inner.addTask {
                                guard let writer = try? await RequestCrashTests.ResilientWriter(server: server, uid: "alice", client: "alice-\(index)-\(lane)") else {
                                    rejectedWrites.increment(); return
                                }
                                for (n, request) in mine.enumerated() where n % 4 == lane {
                                    if case .writeResult? = await writer.answer(n + 1, [request.mutation]) {} else { rejectedWrites.increment() }
                                }
                                await writer.close()
                            }
                        }
                    }
                }
            }
        }
        #expect(rejectedWrites.value == 0)

        let alice = try await a.token(uid: "alice")
        var finished: [String: [String: Value]] = [:]
        let settled = await eventually {
            guard let read = try? await ServerReads.collection("requests", url: b.url, token: alice) else { return false }
            finished = read
            return read.count == 200 && read.values.allSatisfy { $0["status"] != "pending" }
        }
        #expect(settled, "\(finished.values.filter { $0["status"] == "pending" }.count) of \(finished.count) requests still pending")
        let ledger = try await ServerReads.collection("ledger", url: a.url, token: alice)
        let accounts = try await ServerReads.collection("accounts", url: b.url, token: alice)
        let applied = finished.filter { $0.value["status"] == "applied" }
        let rejected = finished.filter { $0.value["status"] == "rejected" }
        // Exactly one ledger entry per applied request, none for a rejected one.
        #expect(Set(ledger.keys) == Set(applied.keys))
        #expect(applied.count + rejected.count == 200)
        // The hot account could cover 6 of its 20: the others were refused for funds.
        let hotRefused = rejected.filter {
            if case .map(let error)? = $0.value["error"], case .string(let message)? = error["message"] {
                return message.contains("insufficient funds")
            }
            return false
        }
        #expect(hotRefused.count == 14, "refused for funds: \(hotRefused.count)")
        #expect(accounts["hot"]?["balance"] == .integer(200))
        var expected = Dictionary(uniqueKeysWithValues: opening.map { ("accounts/\($0.key)", $0.value) })
        for entry in ledger.values {
            guard case .string(let from)? = entry["from"], case .string(let to)? = entry["to"], case .integer(let amount)? = entry["amount"] else {
                Issue.record("malformed ledger entry \(entry)"); continue
            }
            expected[from]! -= amount
            expected[to]! += amount
        }
        for (id, _) in opening {
            #expect(accounts[id]?["balance"] == .integer(expected["accounts/\(id)"]!), "accounts/\(id)")
        }
        let total = accounts.values.reduce(Int64(0)) { sum, fields in
            if case .integer(let balance)? = fields["balance"] { sum + balance } else { sum }
        }
        #expect(total == opening.values.reduce(0, +))
        #expect(accounts.values.allSatisfy { if case .integer(let balance)? = $0["balance"] { balance >= 0 } else { false } })
        var reasons: [String: Int] = [:]
        for fields in rejected.values {
            if case .map(let error)? = fields["error"], case .string(let message)? = error["message"] { reasons[String(message.prefix(40)), default: 0] += 1 }
        }
        print("pg-transfers rejections: \(reasons)")
        print("pg-transfers: \(applied.count) applied, \(rejected.count) rejected (\(hotRefused.count) for funds), \(ledger.count) ledger entries")
    }
}

extension PostgresInstancesTests {
    func healthStatus(_ url: String) async -> Int? {
        guard let (_, response) = try? await URLSession.shared.data(from: URL(string: url + "/health")!) else { return nil }
        return (response as? HTTPURLResponse)?.statusCode
    }

    @Test func theDatabaseLostWhileServingAnswersUnavailableAndRecoversWithoutARestart() async throws {
        // A cluster of its own: this test stops it.
        let cluster = try await PostgresCluster.start()
        defer { cluster.stop() }
        let server = try ServerProcess(arguments: ["--store", try await cluster.createUniqueDatabase(prefix: "lost")])
        defer { server.kill(); server.removeData() }
        try await server.start()
        #expect(await healthStatus(server.url) == 200)
        let writer = RawSocket(url: server.url)
        guard case .welcome? = await writer.hello(token: try await server.token(uid: "alice"), clientID: "alice") else {
            Issue.record("no welcome"); return
        }
        writer.send(.write(.init(clientID: "alice", batchID: 1, mutations: [.set(try DocumentKey("rooms/a"), ObjectValue(["n": 1]))])))
        #expect(await writer.next(where: { if case .writeResult = $0 { true } else { false } }) != nil)

        try await cluster.kill()
        #expect(await eventually { await healthStatus(server.url) == 503 })
        writer.send(.write(.init(clientID: "alice", batchID: 2, mutations: [.set(try DocumentKey("rooms/b"), ObjectValue(["n": 2]))])))
        let refused = await writer.next(where: { if case .writeError = $0 { true } else { false } })
        guard case .writeError(let error)? = refused else { Issue.record("no answer while the database is down"); return }
        #expect(error.error.code == .unavailable, "\(error.error)")
        #expect(error.error.code.isTransient)

        // Back: the same process serves again, and the batch sent again is applied once.
        try await cluster.restart()
        #expect(await eventually { await healthStatus(server.url) == 200 })
        var answer: ServerMessage?
        let committed = await eventually {
            writer.send(.write(.init(clientID: "alice", batchID: 2, mutations: [.set(try! DocumentKey("rooms/b"), ObjectValue(["n": 2]))])))
            answer = await writer.next(where: {
                switch $0 {
                case .writeResult(let r): r.batchID == 2
                case .writeError(let e): e.batchID == 2
                default: false
                }
            })
            if case .writeResult? = answer { return true }
            try? await Task.sleep(for: .milliseconds(200))
            return false
        }
        #expect(committed, "after the restart: \(String(describing: answer))")
        let rooms = try await ServerReads.collection("rooms", url: server.url, token: try await server.token(uid: "alice"))
        #expect(rooms["a"]?["n"] == 1 && rooms["b"]?["n"] == 2)
        await writer.close()
    }
}

extension RequestCrashTests.ResilientWriter {
    /// A writer for `uid` with a development token from the server's secret.
    convenience init(server: ServerProcess, uid: String, client: String? = nil, claims: [String: Value] = [:]) async throws {
        self.init(server: server, token: try await server.token(uid: uid, claims: claims), clientID: client ?? uid)
    }

    /// The server's answer, or nil when it never came.
    func answer(_ batchID: Int, _ mutations: [Mutation]) async -> ServerMessage? {
        try? await commit(batchID, mutations)
    }
}

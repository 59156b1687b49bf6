import DocCache
import DocModel
import DocServer
import DocTestSupport
import Foundation
import PostgresTestSupport
import Testing

/// Several devices against the real server on 127.0.0.1 under the default rules
/// (Rules/firestore.rules): the embedded store, or two instances on one PostgreSQL database
/// (each device on one of them, or every connection through a balancer; or a database that
/// crashes now and then). Each device does a
/// seeded random mix of writes (sets, merges, server timestamps, array unions and removals,
/// field deletes, dotted-path updates, updates that may find no
/// document or a changed version, soft and hard deletes, batches, increments, comments,
/// photos, `transfer` requests, denied writes), going offline and online, closing and
/// reopening its store with writes pending, while a server restarts now and then. When
/// everything has synced:
/// - every device's listeners (the whole collection, a filtered top 5, `limit(toLast:)`, an
///   equality in document-id order, the collection with its soft-deleted documents, a
///   collection group, an `array-contains`, an `in` with a cursor) show what the server
///   answers, without pending writes, and the device's cache alone answers the same (and
///   aggregates the same: `count`, `sum`, `average`);
/// - so do the listeners of random bounded queries that devices add and remove along the
///   way (``RandomItemsQuery``), and no snapshot any listener saw broke its query's limit,
///   filters or order;
/// - no write was lost or applied twice: the increments add up, and every uniquely named
///   document a device wrote is on the server;
/// - none was applied out of order: a document only one device writes holds its last write;
/// - every photo a device attached is uploaded, and downloads from another device intact;
/// - every `transfer` request settled, applied once (its ledger entry, its amount moved) or
///   rejected (nothing moved), and the money adds up;
/// - the only rejections are updates of documents that were not there, updates on a version
///   that changed meanwhile and direct writes to accounts (the rules deny them), each kept as
///   a failed write.
@Suite("Convergence of devices", .serialized, .timeLimit(.minutes(10)))
struct ConvergenceTests {
    /// What the devices did that the end state must show.
    struct Expectations {
        var incrementTotal: Int64 = 0
        /// The `logs/…` documents written (each once, with its `seq`).
        var logs: [String: Int64] = [:]
        /// The `transfer` requests submitted.
        var requests: [String] = []
        /// The `photos/…` documents written, each with the bytes of the attachment it holds.
        var photos: [String: [UInt8]] = [:]
        /// The `mine/…` documents, each written by one device only: the `seq` of its last write
        /// (the server must hold that one, not an earlier write applied after it).
        var mine: [String: Int64] = [:]
    }

    /// One device: its store (reopened now and then) and its listeners.
    final class Device: @unchecked Sendable {
        // Used from the test's task only.
        let name: String
        let directory: String
        /// Mints the device's tokens (every test server shares one secret).
        let server: LiveServer
        /// Where the device connects: its server, or a balancer in front of several.
        let url: String
        var store: DocumentStore!
        var online = true
        var registrations: [ListenerRegistration] = []
        /// What each of ``ConvergenceTests/watchedQueries(_:)`` delivered.
        let seen = (0..<ConvergenceTests.watchedQueryCount).map { _ in Recorder<QuerySnapshot>() }
        var seq: Int64 = 0
        /// Listeners of random queries the device holds for a while (dropped when it closes).
        var passing: [(spec: RandomItemsQuery, watched: Watched, seen: Recorder<QuerySnapshot>, registration: ListenerRegistration)] = []
        /// Every random query it listened to, with what it delivered.
        var passed: [(spec: RandomItemsQuery, watched: Watched, seen: Recorder<QuerySnapshot>)] = []

        /// The token's extra claims (`admin: true` writes money documents directly).
        let claims: [String: Value]

        init(name: String, root: String, server: LiveServer, url: String? = nil, claims: [String: Value] = [:]) {
            self.claims = claims
            self.name = name
            directory = root + "/" + name
            self.server = server
            self.url = url ?? server.url
        }

        func open() async throws {
            let server = self.server, url = self.url, name = self.name, claims = self.claims
            // What `ServerEndpoint` makes, with shorter timeouts: a connection a restart caught
            // in the middle of its handshake is given up on after 3 s, not 10 s (the WebSocket
            // upgrade) or 30 s (`hello`), and made again.
            var transport = try WebSocketTransport(url: url)
            transport.connectTimeout = .seconds(3)
            let network = NetworkConfiguration(
                transport: transport, token: { try await server.token(tenant: "acme", uid: name, claims: claims) },
                handshakeTimeout: .seconds(3), attachments: HTTPAttachmentTransport(baseURL: url))
            store = try await DocumentStore.open(directory: directory, tenant: "acme", user: name, network: network)
            online = true
            registrations = []
            for (watched, recorder) in zip(try ConvergenceTests.watchedQueries(store), seen) {
                registrations.append(try await watched.query.addSnapshotListener(includeMetadataChanges: true) { recorder.record($0) })
            }
        }

        /// Listens to `spec` (a query it may have listened to before).
        func listen(_ spec: RandomItemsQuery) async throws {
            let watched = try spec.watched(on: store)
            let seen = Recorder<QuerySnapshot>()
            let registration = try await watched.query.addSnapshotListener(includeMetadataChanges: true) { seen.record($0) }
            passing.append((spec, watched, seen, registration))
            passed.append((spec, watched, seen))
        }

        func stopListening(_ index: Int) {
            passing.remove(at: index).registration.remove()
        }

        func close() async {
            for registration in registrations { registration.remove() }
            registrations = []
            while !passing.isEmpty { stopListening(0) }
            await store.close()
        }
    }

    /// The bounded queries every device listens to: the whole collection, a filtered top 5, the
    /// last 4 in ascending order, an equality in document-id order, the whole collection with
    /// its soft-deleted documents, the first 20 comments of any item (a collection group), an
    /// `array-contains`, and an `in` with a cursor.
    static func watchedQueries(_ store: DocumentStore) throws -> [Watched] {
        let items = try store.collection("items")
        let n = Watched.n, byID = Watched.byID, byN = Watched.byN
        let hasN = { (document: DocumentSnapshot) in n(document) != nil }
        return [
            Watched(query: try items.limit(to: 100), limit: 100, matches: { _ in true }, inOrder: byID, cacheAnswers: true),
            Watched(query: try items.whereField("group", isEqualTo: .integer(1)).order(by: "n", descending: true).limit(to: 5),
                    limit: 5, matches: { hasN($0) && $0.get("group") == .integer(1) }, inOrder: { byN($1, $0) }, cacheAnswers: true),
            Watched(query: try items.order(by: "n").limit(toLast: 4), limit: 4, matches: hasN, inOrder: byN, cacheAnswers: true),
            Watched(query: try items.whereField("merged", isEqualTo: .boolean(true)).limit(to: 3),
                    limit: 3, matches: { $0.get("merged") == .boolean(true) }, inOrder: byID, cacheAnswers: true),
            Watched(query: try items.includeDeleted().limit(to: 100), limit: 100, matches: { _ in true }, inOrder: byID, cacheAnswers: true),
            Watched(query: try store.collectionGroup("comments").order(by: "n").limit(to: 20),
                    limit: 20, matches: hasN, inOrder: byN, cacheAnswers: false),
            Watched(query: try items.whereField("tags", .arrayContains, .string("d1")).limit(to: 10), limit: 10, matches: { document in
                if case .array(let tags)? = document.get("tags") { return tags.contains(.string("d1")) } else { return false }
            }, inOrder: byID, cacheAnswers: true),
            Watched(query: try items.whereField("group", .in, .array([.integer(0), .integer(2)])).order(by: "n")
                        .start(after: [.integer(30)]).limit(to: 6),
                    limit: 6, matches: { document in
                        guard let n = n(document) else { return false }
                        return n > 30 && (document.get("group") == .integer(0) || document.get("group") == .integer(2))
                    }, inOrder: byN, cacheAnswers: true),
        ]
    }
    static let watchedQueryCount = 8

    /// Queries aggregated at the end, on the server and from each device's cache (every
    /// `items` document is in a device's whole-collection target).
    static func aggregatedQueries(_ store: DocumentStore) throws -> [DocumentQuery] {
        let items = try store.collection("items")
        return [items.query, try items.whereField("group", isEqualTo: .integer(1)), try items.whereField("n", .greaterThanOrEqual, .integer(50))]
    }

    static var aggregations: [AggregateField] {
        get throws { [try .count(), try .sum("n", alias: "total"), try .average("n", alias: "mean")] }
    }

    static let itemCount = 24
    static let accountCount = 4
    /// Each account's balance at the start.
    static let opening: Int64 = 100

    @Test(arguments: [UInt64(1), 2, 3, 4])
    func devicesConvergeOnTheServersState(seed: UInt64) async throws {
        // Restarts close every connection, as a server process exiting does.
        let server = try await LiveServer(rules: try LiveServer.defaultRules(), examples: true, ownEventLoops: true)
        defer { server.removeData() }
        try await Self.run(seed: seed, servers: [server])
    }

    /// Two instances on a database that crashes now and then (PostgreSQL stopped at once, as
    /// a crash would, for up to 300 ms, then started again): commits in flight fail or are
    /// lost, the instances answer `unavailable` until it is back, and the batches sent again
    /// must still be applied once.
    @Test(arguments: [UInt64(1), 2])
    func devicesConvergeThroughDatabaseCrashes(seed: UInt64) async throws {
        // A cluster of its own: this test stops it.
        let cluster = try await PostgresCluster.start()
        defer { cluster.stop() }
        let url = try await cluster.createUniqueDatabase(prefix: "crashing")
        let rules = try LiveServer.defaultRules()
        let a = try await LiveServer(rules: rules, examples: true, ownEventLoops: true, postgresURL: url)
        let b = try await LiveServer(dataDirectory: a.dataDirectory, rules: rules, examples: true, ownEventLoops: true, postgresURL: url)
        defer {
            a.removeData()
            b.removeData()
        }
        try await Self.run(seed: seed, servers: [a, b]) { random in
            try await cluster.kill()
            try await Task.sleep(for: .milliseconds(Int(random % 300)))
            try await cluster.restart()
        }
    }

    /// Each device on one of the two instances, or (`balanced`) every connection through a
    /// balancer that sends each new one to the next instance: a device's two streams, and each
    /// reconnection, land on either.
    @Test(arguments: [(UInt64(1), false), (2, false), (3, true), (4, true)])
    func devicesOnTwoInstancesConvergeOnTheDatabasesState(seed: UInt64, balanced: Bool) async throws {
        let url = try await PostgresCluster.shared().createUniqueDatabase(prefix: "converge")
        let rules = try LiveServer.defaultRules()
        let a = try await LiveServer(rules: rules, examples: true, ownEventLoops: true, postgresURL: url)
        // The attachments in one directory both instances mount (docs/operations.md).
        let b = try await LiveServer(dataDirectory: a.dataDirectory, rules: rules, examples: true, ownEventLoops: true, postgresURL: url)
        let balancer = balanced ? try BalancingProxy(backendPorts: [a.address.port, b.address.port]) : nil
        defer {
            balancer?.stop()
            a.removeData()
            b.removeData()
        }
        try await Self.run(seed: seed, servers: [a, b], url: balancer.map { "http://127.0.0.1:\($0.port)" })
    }

    /// The run: three devices, device `i` on `servers[i % count]` (or all on `url`); the
    /// auditor on the first server.
    ///
    /// `outage`, when given, takes the database away and brings it back: half the restart
    /// steps do that instead.
    static func run(seed: UInt64, servers: [LiveServer], url: String? = nil,
                    outage: (@Sendable (_ random: UInt64) async throws -> Void)? = nil) async throws {
        var random = SplitMix64(seed: seed)
        let root = NSTemporaryDirectory() + "doccache-convergence-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let devices = (0..<3).map { Device(name: "d\($0)", root: root, server: servers[$0 % servers.count], url: url) }
        for device in devices { try await device.open() }
        // The counter exists before anyone increments it; the accounts are opened by an
        // administrator (the rules let no one else write them).
        _ = try await devices[0].store.document("counters/c").setData(["total": .value(.integer(0))]).committed
        let bank = Device(name: "bank", root: root, server: servers[0], claims: ["admin": .boolean(true)])
        try await bank.open()
        for a in 0..<Self.accountCount {
            _ = try await bank.store.document("accounts/a\(a)").setData(["balance": .value(.integer(Self.opening))]).committed
        }
        await bank.close()
        var expected = Expectations()
        // The queries devices listen to for a while: few, so that a device often listens to
        // one again (resuming its target) or to one another device holds.
        let passingQueries = (0..<10).map { _ in RandomItemsQuery(&random) }

        for step in 0..<240 {
            let device = devices[Int.random(in: 0..<devices.count, using: &random)]
            let store = device.store!
            let item = try store.document("items/i\(Int.random(in: 0..<Self.itemCount, using: &random))")
            let n = Int64.random(in: 0..<100, using: &random)
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<22:
                _ = try await item.setData(["n": .value(.integer(n)), "group": .value(.integer(Int64.random(in: 0..<3, using: &random))),
                                            "by": .value(.string(device.name))])
            case 22..<28:
                _ = try await item.setData(["n": .value(.integer(n)), "merged": .value(.boolean(true))], merge: true)
            case 28..<32:
                // A server timestamp: the acknowledged document differs from the local one.
                let tags: FieldValue = Int.random(in: 0..<3, using: &random) > 0
                    ? .arrayUnion([.string(device.name)]) : .arrayRemove([.string("d\(Int.random(in: 0..<3, using: &random))")])
                _ = try await item.setData(["at": .serverTimestamp(), "tags": tags], merge: true)
            case 32..<37:
                // Rejected (kept as a failed write) when the document is not on the server then.
                _ = try await item.updateData(["n": .increment(1), "touched": .value(.string(device.name))])
            case 37..<40:
                // A field removed, and a field of a map set by its dotted path.
                _ = try await item.updateData(["tags": .delete(), "meta.by": .value(.string(device.name))])
            case 40..<44:
                // Compare before commit, on the version this device last saw: rejected when it
                // changed meanwhile (or is not on the server).
                if let version = try await item.getDocument(source: .cache).version {
                    _ = try await item.updateData(["checked": .value(.string(device.name))], ifVersion: version)
                }
            case 44..<52:
                _ = try await item.delete()
            case 52..<54:
                // A hard delete: no tombstone stays.
                _ = try await item.purge()
            case 54..<58:
                // Money moves only through request documents, each applied once or rejected.
                let from = Int.random(in: 0..<Self.accountCount, using: &random)
                let to = (from + Int.random(in: 1..<Self.accountCount, using: &random)) % Self.accountCount
                let handle = try await store.submitRequest(type: "transfer", params: [
                    "from": .string("accounts/a\(from)"), "to": .string("accounts/a\(to)"),
                    "amount": .integer(Int64.random(in: 1...60, using: &random)),
                ])
                expected.requests.append(handle.id)
            case 58..<60:
                // Not allowed by the rules: kept as a failed write, and the money stays.
                _ = try await store.document("accounts/a\(Int.random(in: 0..<Self.accountCount, using: &random))")
                    .updateData(["balance": .increment(1_000)])
            case 60..<66:
                let k = Int64.random(in: 1...9, using: &random)
                expected.incrementTotal += k
                _ = try await store.document("counters/c").updateData(["total": .increment(k)])
            case 66..<70:
                // A photo taken (offline or not) and a document that refers to it.
                device.seq += 1
                let id = "\(device.name)-\(device.seq)"
                let bytes = (0..<Int.random(in: 1...65_536, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                let photo = try await store.attachments.add(bytes: bytes, contentType: "image/jpeg")
                expected.photos[id] = bytes
                _ = try await store.document("photos/\(id)").setData(["photo": .attachment(photo.id)])
            case 70..<73:
                // A comment under an item (a subcollection), seen through a collection group.
                let comment = try store.document("\(item.path)/comments/c\(Int.random(in: 0..<4, using: &random))")
                if Bool.random(using: &random) {
                    _ = try await comment.setData(["n": .value(.integer(n)), "by": .value(.string(device.name))])
                } else {
                    _ = try await comment.delete()
                }
            case 73..<76:
                device.seq += 1
                if Bool.random(using: &random) {
                    let id = "\(device.name)-\(device.seq)"
                    expected.logs[id] = device.seq
                    _ = try await store.document("logs/\(id)").setData(["seq": .value(.integer(device.seq))])
                } else {
                    // A document only this device writes: its last write must be the one that stays.
                    let id = "\(device.name)-\(Int.random(in: 0..<3, using: &random))"
                    expected.mine[id] = device.seq
                    _ = try await store.document("mine/\(id)").setData(["seq": .value(.integer(device.seq))])
                }
            case 76..<84:
                var batch = store.batch()
                let other = try store.document("items/i\(Int.random(in: 0..<Self.itemCount, using: &random))")
                try batch.setData(["n": .value(.integer(n)), "group": .value(.integer(1)), "by": .value(.string(device.name))], for: item)
                try batch.delete(other)
                let k = Int64.random(in: 1...9, using: &random)
                expected.incrementTotal += k
                try batch.updateData(["total": .increment(k)], for: try store.document("counters/c"))
                _ = try await batch.commit()
            case 84..<89:
                if device.passing.count < 4 && Int.random(in: 0..<3, using: &random) > 0 || device.passing.isEmpty {
                    try await device.listen(passingQueries[Int.random(in: 0..<passingQueries.count, using: &random)])
                } else {
                    device.stopListening(Int.random(in: 0..<device.passing.count, using: &random))
                }
            case 89..<93:
                if device.online { try await store.disableNetwork() } else { try await store.enableNetwork() }
                device.online.toggle()
            case 93..<96:
                // Closed with whatever is pending, and opened again (online).
                await device.close()
                try await device.open()
            case 96..<98:
                if let outage, Bool.random(using: &random) {
                    try await outage(random.next())
                } else {
                    try await servers[Int.random(in: 0..<servers.count, using: &random)].restart()
                }
            default:
                try await Task.sleep(for: .milliseconds(Int.random(in: 1...30, using: &random)))
            }
            if step % 40 == 39 { try await Task.sleep(for: .milliseconds(20)) }
        }

        for device in devices where !device.online {
            try await device.store.enableNetwork()
            device.online = true
        }
        for device in devices { try await device.store.waitForPendingWrites() }

        // The server's state, read by a device of its own.
        let auditor = Device(name: "auditor", root: root, server: servers[0])
        try await auditor.open()
        defer { Task { await auditor.close() } }
        var answers: [[String]] = []
        let watched = try Self.watchedQueries(auditor.store)
        for query in watched {
            answers.append(Self.contents(try await query.query.getDocuments(source: .server)))
        }
        // Aggregations, as the server computes them through its indexes.
        var aggregates: [[String: Value]] = []
        for query in try Self.aggregatedQueries(auditor.store) {
            aggregates.append(try await query.aggregate(Self.aggregations, source: .server).values)
        }
        let counter = try await auditor.store.document("counters/c").getDocument(source: .server)
        let logs = try await auditor.store.collection("logs").limit(to: 1_000).getDocuments(source: .server)

        #expect(counter.get("total") == .integer(expected.incrementTotal), "seed \(seed)")
        let written = Dictionary(uniqueKeysWithValues: logs.documents.compactMap { doc -> (String, Int64)? in
            guard case .integer(let seq)? = doc.get("seq") else { return nil }
            return (doc.documentID, seq)
        })
        #expect(written == expected.logs, "seed \(seed)")
        let mine = try await auditor.store.collection("mine").limit(to: 100).getDocuments(source: .server)
        let last = Dictionary(uniqueKeysWithValues: mine.documents.compactMap { doc -> (String, Int64)? in
            guard case .integer(let seq)? = doc.get("seq") else { return nil }
            return (doc.documentID, seq)
        })
        #expect(last == expected.mine, "seed \(seed): each device's own documents hold its last write")
        try await Self.checkTransfers(expected.requests, auditor: auditor.store, seed: seed)
        try await Self.checkPhotos(expected.photos, auditor: auditor.store, seed: seed)

        for device in devices {
            let synced = await eventually {
                zip(device.seen, answers).allSatisfy { recorder, answer in
                    guard let last = recorder.last else { return false }
                    return !last.metadata.hasPendingWrites && !last.metadata.isFromCache && Self.contents(last) == answer
                }
            }
            #expect(synced, """
                seed \(seed), \(device.name): listeners \(device.seen.map { $0.last.map { (Self.contents($0), $0.metadata) } as Any }) \
                against the server's \(answers)
                """)
            // Whatever the moment, a snapshot kept to its query's limit, filters and order.
            for (recorder, query) in zip(device.seen, watched) {
                let wrong = recorder.values.compactMap { query.violation($0) }
                #expect(wrong.count == 0, "seed \(seed), \(device.name), \(query.query): the first of them: \(wrong.first ?? "")")
            }
            for (spec, watched, seen) in device.passed {
                let wrong = seen.values.compactMap { watched.violation($0) }
                #expect(wrong.count == 0, "seed \(seed), \(device.name), \(spec): the first of them: \(wrong.first ?? "")")
                #expect(seen.errors.isEmpty, "seed \(seed), \(device.name), \(spec): \(seen.errors)")
            }
            // The random queries it still listens to show the server's answer too.
            for (spec, _, seen, _) in device.passing {
                let answer = Self.contents(try await spec.watched(on: auditor.store).query.getDocuments(source: .server))
                let synced = await eventually {
                    guard let last = seen.last else { return false }
                    return !last.metadata.hasPendingWrites && !last.metadata.isFromCache && Self.contents(last) == answer
                }
                #expect(synced, "seed \(seed), \(device.name), \(spec): \(seen.last.map { (Self.contents($0), $0.metadata) } as Any) against \(answer)")
                let cached = Self.contents(try await spec.watched(on: device.store).query.getDocuments(source: .cache))
                #expect(cached == answer, "seed \(seed), \(device.name), \(spec) from the cache: \(cached) against \(answer)")
            }
            // The cache alone answers as the server did, aggregations included.
            for (index, query) in try Self.watchedQueries(device.store).enumerated() where query.cacheAnswers {
                let cached = Self.contents(try await query.query.getDocuments(source: .cache))
                #expect(cached == answers[index], "seed \(seed), \(device.name), \(query.query) from the cache: \(cached) against \(answers[index])")
            }
            for (index, query) in try Self.aggregatedQueries(device.store).enumerated() {
                let cached = try await query.aggregate(Self.aggregations, source: .cache).values
                #expect(cached == aggregates[index], "seed \(seed), \(device.name), \(query) aggregated from the cache: \(cached) against \(aggregates[index])")
            }
            let errors = device.seen.flatMap(\.errors)
            #expect(errors.isEmpty, "seed \(seed), \(device.name): \(errors)")
            let failed = try await device.store.failedWrites()
            #expect(failed.allSatisfy { [.notFound, .failedPrecondition, .permissionDenied].contains($0.error.code) },
                    "seed \(seed), \(device.name): \(failed.map(\.error))")
            #expect(try await device.store.pendingWrites().isEmpty)
        }
        for device in devices { await device.close() }
        for server in servers { await server.stop() }
    }

    /// Every request settles (a restart may leave some pending until the next start's sweep);
    /// the money is all there; each applied request has its one ledger entry and moved its
    /// amount once, and no other request moved anything.
    static func checkTransfers(_ ids: [String], auditor: DocumentStore, seed: UInt64) async throws {
        var statuses: [String: Value] = [:]
        func isFinal(_ id: String) -> Bool { statuses[id] == "applied" || statuses[id] == "rejected" }
        let settled = await eventually {
            for id in ids where !isFinal(id) {
                guard let snapshot = try? await auditor.document("requests/\(id)").getDocument(source: .server) else { return false }
                statuses[id] = snapshot.get("status")
                if !isFinal(id) { return false }
            }
            return true
        }
        #expect(settled, "seed \(seed): requests not settled: \(ids.filter { !isFinal($0) }.map { ($0, statuses[$0] as Any) })")
        let accounts = try await auditor.collection("accounts").limit(to: 10).getDocuments(source: .server)
        let ledger = try await auditor.collection("ledger").limit(to: 1_000).getDocuments(source: .server)
        var balances: [String: Int64] = [:]
        for account in accounts.documents {
            if case .integer(let balance)? = account.get("balance") { balances["accounts/" + account.documentID] = balance }
        }
        #expect(balances.values.reduce(0, +) == Int64(accountCount) * opening, "seed \(seed): \(balances)")
        #expect(balances.values.allSatisfy { $0 >= 0 }, "seed \(seed): \(balances)")
        let applied = Set(ids.filter { statuses[$0] == "applied" })
        #expect(Set(ledger.documents.map(\.documentID)) == applied, "seed \(seed)")
        var replayed = Dictionary(uniqueKeysWithValues: (0..<accountCount).map { ("accounts/a\($0)", opening) })
        for entry in ledger.documents {
            guard case .string(let from)? = entry.get("from"), case .string(let to)? = entry.get("to"),
                  case .integer(let amount)? = entry.get("amount") else {
                Issue.record("seed \(seed): a ledger entry without from, to and amount: \(entry.data() as Any)")
                continue
            }
            replayed[from, default: 0] -= amount
            replayed[to, default: 0] += amount
        }
        #expect(replayed == balances, "seed \(seed): the ledger replayed \(replayed), the accounts hold \(balances)")
    }

    /// Every photo document is on the server, and its attachment downloads (on the auditor's
    /// device) with the bytes the device took.
    static func checkPhotos(_ photos: [String: [UInt8]], auditor: DocumentStore, seed: UInt64) async throws {
        let stored = try await auditor.collection("photos").limit(to: 1_000).getDocuments(source: .server)
        #expect(Set(stored.documents.map(\.documentID)) == Set(photos.keys), "seed \(seed)")
        for document in stored.documents {
            guard case .attachment(let id)? = document.get("photo") else {
                Issue.record("seed \(seed): \(document.path) holds no attachment")
                continue
            }
            let bytes = try await auditor.attachments.bytes(id)
            #expect(bytes == photos[document.documentID], "seed \(seed): \(document.path)")
        }
    }

    /// A snapshot's documents in order: id and fields.
    static func contents(_ snapshot: QuerySnapshot) -> [String] {
        snapshot.documents.map { doc in
            let fields = (doc.data() ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            return doc.documentID + "{" + fields.joined(separator: ",") + "}"
        }
    }
}

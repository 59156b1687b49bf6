import DocModel
import DocTestSupport
import Foundation
import Testing

/// The built `docctl` binary, run as separate processes the way a user runs it, against a real
/// `docctl serve` child on a free port. Every command has its own process and its own local
/// cache under a private HOME; the server and the commands share the secret file. Each test
/// checks a documented contract of docs/cli.md: JSON line shapes, exit codes, messages.
@Suite("docctl end to end", .serialized)
struct DocctlEndToEndTests {
    /// A started `docctl serve` and a runner with a private HOME; everything is killed and
    /// removed afterwards, also when the body fails.
    static func withServer(_ arguments: [String] = [],
                           _ body: (ServerProcess, DocctlRunner) async throws -> Void) async throws {
        let server = try ServerProcess(arguments: arguments)
        defer { server.kill(); server.removeData() }
        try await server.start()
        let docctl = try DocctlRunner(server: server.url, secret: server.secretFile)
        defer { docctl.removeHome() }
        try await body(server, docctl)
    }

    /// The next stdout line of a running `listen` (from `index` on), parsed; records an issue
    /// and returns nil when none comes within the cap.
    static func nextSnapshot(_ listen: ChildProcess, _ index: inout Int, _ what: String) async -> JSONObjectLine? {
        guard let text = await listen.line(index) else {
            Issue.record("listen printed no line for \(what); stdout: \(listen.standardOutput) stderr: \(listen.standardError)")
            return nil
        }
        index += 1
        guard let line = JSONObjectLine(text) else {
            Issue.record("listen printed a line that is not a JSON object: \(text)")
            return nil
        }
        #expect(line.keys == ["type", "fromCache", "hasPendingWrites", "size", "changes"], "\(line)")
        #expect(line["type"] as? String == "snapshot", "\(line)")
        return line
    }

    static func changes(_ line: JSONObjectLine) -> [[String: Any]] { line["changes"] as? [[String: Any]] ?? [] }

    // MARK: listen

    @Test func listenSeesAnotherProcessAddModifyAndDelete() async throws {
        try await Self.withServer { _, docctl in
            let listen = try docctl.start(["listen", "rooms", "--limit", "10", "--json"] + docctl.user("bob"))
            defer { listen.kill() }

            // The first snapshot may come from the (empty) cache; once the server says the
            // listen is current, a snapshot says fromCache false. Nothing is in it.
            var index = 0
            var synced = false
            while !synced, let first = await Self.nextSnapshot(listen, &index, "the first snapshot") {
                #expect(first["size"] as? Int == 0)
                #expect(first["hasPendingWrites"] as? Bool == false)
                #expect(Self.changes(first).isEmpty)
                synced = first["fromCache"] as? Bool == false
            }
            #expect(synced, "the listen never reported fromCache false")

            // Another process, another user, writes.
            let set = try await docctl.run(["set", "rooms/r1", #"{"name": "Lobby"}"#, "--wait", "--json"] + docctl.user("alice"))
            #expect(set.status == 0, "\(set)")
            let added = try #require(await Self.nextSnapshot(listen, &index, "the added document"))
            #expect(added.text == #"{"type":"snapshot","fromCache":false,"hasPendingWrites":false,"size":1,"changes":[{"type":"added","path":"rooms/r1","oldIndex":-1,"newIndex":0,"hasPendingWrites":false,"data":{"name":"Lobby"}}]}"#)

            let second = try await docctl.run(["set", "rooms/r1", #"{"name": "Main hall"}"#, "--wait"] + docctl.user("alice"))
            #expect(second.status == 0, "\(second)")
            let modified = try #require(await Self.nextSnapshot(listen, &index, "the modified document"))
            #expect(modified.text == #"{"type":"snapshot","fromCache":false,"hasPendingWrites":false,"size":1,"changes":[{"type":"modified","path":"rooms/r1","oldIndex":0,"newIndex":0,"hasPendingWrites":false,"data":{"name":"Main hall"}}]}"#)

            // A delete is a tombstone: the listener sees the document removed.
            let delete = try await docctl.run(["delete", "rooms/r1", "--wait"] + docctl.user("alice"))
            #expect(delete.status == 0, "\(delete)")
            #expect(delete.stdout.hasPrefix("rooms/r1: committed (version "), "\(delete)")
            let removed = try #require(await Self.nextSnapshot(listen, &index, "the removed document"))
            #expect(removed["size"] as? Int == 0)
            #expect(removed["fromCache"] as? Bool == false)
            #expect(removed["hasPendingWrites"] as? Bool == false)
            let removal = try #require(Self.changes(removed).first)
            #expect(Self.changes(removed).count == 1)
            #expect(removal["type"] as? String == "removed")
            #expect(removal["path"] as? String == "rooms/r1")
            #expect(removal["oldIndex"] as? Int == 0)
            #expect(removal["newIndex"] as? Int == -1)
            #expect(removal["hasPendingWrites"] as? Bool == false)

            // The tombstone stays readable: deleted, not missing (exit 0).
            let get = try await docctl.run(["get", "rooms/r1", "--json", "--source", "server"] + docctl.user("bob"))
            #expect(get.status == 0, "\(get)")
            let document = try #require(JSONObjectLine(get.lines.first ?? ""), "\(get)")
            #expect(document["exists"] as? Bool == false)
            #expect(document["deleted"] as? Bool == true)
            let data = document["data"] as? [String: Any]
            #expect(data?["name"] as? String == "Main hall")
            #expect((data?["deletedAt"] as? [String: Any])?["$timestamp"] is String, "\(document)")

            #expect(listen.isRunning, "listen ended by itself: \(listen.standardError)")
            #expect(listen.standardError.contains("connected to \(docctl.server)"), "status lines: \(listen.standardError)")
        }
    }

    @Test func listenOutlivesAServerRestartAndEndsCleanlyOnCtrlC() async throws {
        try await Self.withServer { server, docctl in
            let listen = try docctl.start(["listen", "rooms", "--limit", "10", "--json"] + docctl.user("bob"))
            defer { listen.kill() }
            var index = 0
            var synced = false
            while !synced, let line = await Self.nextSnapshot(listen, &index, "the first snapshot") {
                synced = line["fromCache"] as? Bool == false
            }
            #expect(synced)

            // The server dies (SIGKILL): the listen stays up and says it is offline…
            server.kill()
            let offline = await eventually { listen.standardError.contains("docctl: offline (\(docctl.server) unreachable)") }
            #expect(offline, "no offline status line: \(listen.standardError)")
            #expect(listen.isRunning)

            // …and once the server is back on the same port, a write from another process
            // reaches it.
            try await server.start()
            let set = try await docctl.run(["set", "rooms/r9", #"{"name": "Back"}"#, "--wait"] + docctl.user("alice"))
            #expect(set.status == 0, "\(set)")
            var arrived = false
            while !arrived, let line = await Self.nextSnapshot(listen, &index, "the write after the restart") {
                arrived = Self.changes(line).contains { $0["path"] as? String == "rooms/r9" && $0["type"] as? String == "added" }
                    && line["fromCache"] as? Bool == false
            }
            #expect(arrived, "stdout: \(listen.standardOutput)")
            // The status line goes to stderr, the snapshot to stdout: the snapshot may be read
            // first, so the second "connected" line is waited for, not expected at once.
            func reconnections() -> Int { listen.standardError.components(separatedBy: "docctl: connected to \(docctl.server)").count - 1 }
            let reconnected = await eventually { reconnections() >= 2 }
            #expect(reconnected, "status lines: \(listen.standardError)")

            // Ctrl-C ends it with exit 0 and removes its private cache.
            let caches = docctl.home + "/.docctl/tmp"
            #expect(((try? FileManager.default.contentsOfDirectory(atPath: caches)) ?? []).count == 1)
            listen.interrupt()
            #expect(await listen.waitForExit() == 0, "stderr: \(listen.standardError)")
            #expect(((try? FileManager.default.contentsOfDirectory(atPath: caches)) ?? []).isEmpty, "a private cache was left behind")
        }
    }

    @Test func listenMetadataFollowsPendingWritesAndTheServer() async throws {
        try await Self.withServer { _, docctl in
            // A write made while the server is unreachable waits in the cache…
            let cache = docctl.home + "/shared-cache"
            let unreachable = try LoopbackPortReservation()
            defer { unreachable.release() }
            let offline = docctl.pointing(at: "http://127.0.0.1:\(unreachable.port)")
            let write = try await offline.run(["set", "rooms/r7", #"{"name": "Attic"}"#, "--cache", cache] + offline.user("carol"))
            #expect(write.status == 0, "\(write)")
            #expect(write.stdout.hasPrefix("rooms/r7: pending (batch "), "\(write)")

            // …an offline listen on that cache shows it at once: pending, from cache.
            let cached = try await offline.run(["listen", "rooms", "--limit", "10", "--json", "--count", "1", "--cache", cache]
                                               + offline.user("carol"))
            #expect(cached.status == 0, "\(cached)")
            #expect(cached.lines == [#"{"type":"snapshot","fromCache":true,"hasPendingWrites":true,"size":1,"changes":[{"type":"added","path":"rooms/r7","oldIndex":-1,"newIndex":0,"hasPendingWrites":true,"data":{"name":"Attic"}}]}"#], "\(cached)")

            // Online, with metadata changes: the pending write is sent, acknowledged, and the
            // listen becomes current — the flags end false.
            let listen = try docctl.start(["listen", "rooms", "--limit", "10", "--json", "--include-metadata-changes", "--cache", cache]
                                          + docctl.user("carol"))
            defer { listen.kill() }
            // The first snapshot comes from the cache (the acknowledgement may already be in,
            // so only the end state is fixed); after it the flags only ever go from true to
            // false, and only metadata changes.
            var index = 0
            var previous = (pending: true, fromCache: true)
            var settled = false
            while !settled, let line = await Self.nextSnapshot(listen, &index, "the settled snapshot") {
                #expect(line["size"] as? Int == 1, "\(line)")
                let flags = (pending: line["hasPendingWrites"] as? Bool == true, fromCache: line["fromCache"] as? Bool == true)
                #expect(!flags.pending || previous.pending, "hasPendingWrites went back to true: \(listen.standardOutput)")
                #expect(!flags.fromCache || previous.fromCache, "fromCache went back to true: \(listen.standardOutput)")
                previous = flags
                settled = !flags.pending && !flags.fromCache
                for change in Self.changes(line) where index > 1 {
                    #expect(change["path"] as? String == "rooms/r7")
                    #expect(change["type"] as? String == "modified", "after the first snapshot only metadata changes: \(line)")
                    #expect(change["hasPendingWrites"] as? Bool == flags.pending)
                }
            }
            #expect(settled, "the flags never became false: \(listen.standardOutput)")
            listen.kill()
            let pending = try await docctl.run(["pending", "--json", "--cache", cache] + docctl.user("carol"))
            #expect(pending.status == 0, "\(pending)")
            #expect(pending.lines.isEmpty, "\(pending)")
        }
    }

    @Test func countAndTimeoutEndTheListenWithExitZero() async throws {
        try await Self.withServer { _, docctl in
            let seed = try await docctl.run(["set", "rooms/r1", #"{"name": "Lobby"}"#, "--wait"] + docctl.user("alice"))
            #expect(seed.status == 0, "\(seed)")

            // --count 1: the first snapshot, then exit 0.
            let once = try await docctl.run(["listen", "rooms", "--limit", "10", "--json", "--count", "1"] + docctl.user("bob"))
            #expect(once.status == 0, "\(once)")
            #expect(once.lines.count == 1, "\(once)")
            #expect(once.lines.first.flatMap(JSONObjectLine.init)?["size"] as? Int == 1, "\(once)")

            // --count 2: the first snapshot, then one change, then exit 0 by itself.
            let twice = try docctl.start(["listen", "rooms", "--limit", "10", "--json", "--count", "2"] + docctl.user("bob"))
            defer { twice.kill() }
            _ = await twice.line(0)
            let other = try await docctl.run(["set", "rooms/r2", #"{"name": "Kitchen"}"#, "--wait"] + docctl.user("alice"))
            #expect(other.status == 0, "\(other)")
            #expect(await twice.waitForExit() == 0, "stderr: \(twice.standardError)")
            #expect(twice.lines.count == 2, "\(twice.standardOutput)")
            let change = twice.lines.last.flatMap(JSONObjectLine.init).map(Self.changes)?.first
            #expect(change?["type"] as? String == "added")
            #expect(change?["path"] as? String == "rooms/r2")

            // --timeout: a listen on a document nobody changes ends by itself, exit 0.
            let timed = try await docctl.run(["listen", "rooms/r1", "--json", "--timeout", "3"] + docctl.user("bob"))
            #expect(timed.status == 0, "\(timed)")
            for line in timed.lines {
                #expect(JSONObjectLine(line)?["type"] as? String == "snapshot", "\(line)")
            }
            // The human form of the same listen, ended by --count.
            let human = try await docctl.run(["listen", "rooms", "--limit", "10", "--count", "1"] + docctl.user("bob"))
            #expect(human.status == 0, "\(human)")
            #expect(human.lines.first == "── 2 documents · synced", "\(human)")
            #expect(human.lines.dropFirst() == [#"+ rooms/r1 [0]  {"name":"Lobby"}"#, #"+ rooms/r2 [1]  {"name":"Kitchen"}"#], "\(human)")
            let empty = try await docctl.run(["listen", "halls", "--limit", "10", "--count", "1"] + docctl.user("bob"))
            #expect(empty.status == 0, "\(empty)")
            #expect(empty.lines == ["── 0 documents · synced", "  (no documents)"], "\(empty)")
        }
    }

    // MARK: get and set

    @Test func getAndSetPrintTheDocumentedShapes() async throws {
        try await Self.withServer { _, docctl in
            let set = try await docctl.run(["set", "rooms/r2", #"{"name": "Kitchen", "floor": 2}"#, "--wait", "--json"] + docctl.user("alice"))
            #expect(set.status == 0, "\(set)")
            let written = try #require(JSONObjectLine(set.lines.first ?? ""), "\(set)")
            #expect(written.keys == ["path", "batchId", "status", "version", "error"])
            #expect(written["path"] as? String == "rooms/r2")
            #expect(written["batchId"] is Int)
            #expect(written["status"] as? String == "committed")
            #expect(written["error"] is NSNull)
            let version = try #require(written["version"] as? Int)

            let human = try await docctl.run(["set", "rooms/r3", #"{"name": "Hall"}"#, "--wait"] + docctl.user("alice"))
            #expect(human.status == 0, "\(human)")
            #expect(human.lines.count == 1)
            #expect(human.stdout.range(of: #"^rooms/r3: committed \(version [0-9]+\)\n$"#, options: .regularExpression) != nil, "\(human)")

            // Another user reads it from the server.
            let get = try await docctl.run(["get", "rooms/r2", "--json"] + docctl.user("bob"))
            #expect(get.status == 0, "\(get)")
            let document = try #require(JSONObjectLine(get.lines.first ?? ""), "\(get)")
            #expect(document.keys == ["path", "exists", "deleted", "version", "hasPendingWrites", "fromCache", "data"])
            #expect(document["path"] as? String == "rooms/r2")
            #expect(document["exists"] as? Bool == true)
            #expect(document["deleted"] as? Bool == false)
            #expect(document["version"] as? Int == version)
            #expect(document["hasPendingWrites"] as? Bool == false)
            #expect(document["fromCache"] as? Bool == false)
            let data = document["data"] as? [String: Any]
            #expect(data?["name"] as? String == "Kitchen")
            #expect(data?["floor"] as? Int == 2)
            #expect(data?.count == 2)

            // A missing document: exit 1, still a JSON line saying so.
            let missing = try await docctl.run(["get", "rooms/nope", "--json"] + docctl.user("bob"))
            #expect(missing.status == 1, "\(missing)")
            let absent = try #require(JSONObjectLine(missing.lines.first ?? ""), "\(missing)")
            #expect(absent["exists"] as? Bool == false)
            #expect(absent["deleted"] as? Bool == false)
            #expect(absent["version"] is NSNull)
            #expect(absent["data"] is NSNull)
            let missingHuman = try await docctl.run(["get", "rooms/nope"] + docctl.user("bob"))
            #expect(missingHuman.status == 1, "\(missingHuman)")
            #expect(missingHuman.stdout.contains("rooms/nope  (does not exist"), "\(missingHuman)")

            // A bounded query, asked of the server.
            let query = try await docctl.run(["query", "rooms", "--where", "floor >= 2", "--order-by", "name:desc", "--limit", "5", "--json"]
                                             + docctl.user("bob"))
            #expect(query.status == 0, "\(query)")
            let answer = try #require(JSONObjectLine(query.lines.first ?? ""), "\(query)")
            #expect(answer.keys == ["fromCache", "hasPendingWrites", "size", "documents"])
            #expect(answer["fromCache"] as? Bool == false)
            #expect(answer["size"] as? Int == 1)
            #expect((answer["documents"] as? [[String: Any]])?.map { $0["path"] as? String } == ["rooms/r2"], "\(answer)")

            // update of a missing document is rejected by the server: exit 1, reason on stderr.
            let update = try await docctl.run(["update", "rooms/nope", #"{"name": "x"}"#, "--wait", "--json"] + docctl.user("alice"))
            #expect(update.status == 1, "\(update)")
            #expect(JSONObjectLine(update.lines.first ?? "")?["status"] as? String == "rejected", "\(update)")
            #expect(update.stderr.contains("rejected"), "\(update)")
        }
    }

    // MARK: requests

    @Test func requestWaitReportsAppliedAndRejected() async throws {
        try await Self.withServer(["--examples"]) { _, docctl in
            // Money documents are written directly only with the admin claim.
            for (account, balance) in [("a", 100), ("b", 0)] {
                let seeded = try await docctl.run(["set", "accounts/\(account)", #"{"balance": \#(balance)}"#, "--wait"]
                                                  + docctl.user("admin", claims: #"{"admin": true}"#))
                #expect(seeded.status == 0, "\(seeded)")
            }
            let denied = try await docctl.run(["set", "accounts/a", #"{"balance": 1000000}"#, "--wait"] + docctl.user("alice"))
            #expect(denied.status == 1, "\(denied)")
            #expect(denied.stderr.contains("permissionDenied"), "\(denied)")

            let applied = try await docctl.run(["request", "transfer", "--params", #"{"from": "accounts/a", "to": "accounts/b", "amount": 30}"#,
                                                "--wait"] + docctl.user("alice"))
            #expect(applied.status == 0, "\(applied)")
            let done = try #require(JSONObjectLine(applied.lines.last ?? ""), "\(applied)")
            #expect(done.keys == ["id", "status", "result", "error"])
            #expect((done["id"] as? String)?.isEmpty == false)
            #expect(done["status"] as? String == "applied")
            let result = done["result"] as? [String: Any]
            #expect(result?["from"] as? Int == 70)
            #expect(result?["to"] as? Int == 30)
            #expect(done["error"] is NSNull)

            let rejected = try await docctl.run(["request", "transfer", "--params", #"{"from": "accounts/b", "to": "accounts/a", "amount": 1000}"#,
                                                 "--wait", "--json"] + docctl.user("alice"))
            #expect(rejected.status == 1, "\(rejected)")
            let refusal = try #require(JSONObjectLine(rejected.lines.last ?? ""), "\(rejected)")
            #expect(refusal.keys == ["id", "status", "result", "error"])
            #expect(refusal["status"] as? String == "rejected")
            #expect(refusal["result"] is NSNull)
            let error = refusal["error"] as? [String: Any]
            #expect(error?["code"] as? String == "failedPrecondition")
            #expect((error?["message"] as? String)?.contains("insufficient funds") == true, "\(refusal)")
            #expect(rejected.stderr.contains("insufficient funds"), "\(rejected)")
            #expect(refusal["id"] as? String != done["id"] as? String)

            // The balances moved once.
            for (account, balance) in [("a", 70), ("b", 30)] {
                let get = try await docctl.run(["get", "accounts/\(account)", "--json"] + docctl.user("bob"))
                #expect(get.status == 0, "\(get)")
                #expect((JSONObjectLine(get.lines.first ?? "")?["data"] as? [String: Any])?["balance"] as? Int == balance, "\(get)")
            }
        }
    }

    // MARK: usage errors

    @Test func badArgumentsExitTwoWithAHelpfulMessage() async throws {
        try await Self.withServer { _, docctl in
            let bob = docctl.user("bob")
            let cases: [(arguments: [String], message: String)] = [
                (["listen", "rooms", "--json"] + bob, "unbounded listener on rooms"),
                (["listen", "rooms", "--limit", "1001"] + bob, "above the store's maxListenLimit of 1000"),
                (["query", "rooms"] + bob, "--limit is required"),
                (["frobnicate"], "frobnicate"),
                (["query", "rooms", "--limit", "5", "--where", "age"] + bob, "a filter is \"FIELD OP VALUE\""),
                (["query", "rooms", "--limit", "5", "--where", "age ~ 5"] + bob, "unknown operator \"~\""),
                (["set", "rooms/r1", #"{"name": "#] + bob, "not valid JSON"),
                (["set", "rooms/r1", "[1, 2]"] + bob, "must be a JSON object"),
                (["listen", "rooms", "--limit", "5", "--count", "0"] + bob, "--count must be at least 1"),
                (["get", "rooms/r1"], "say who you are"),
                (["request", "transfer", "--params", "[]"] + bob, "--params must be a JSON object"),
                (["set", "rooms", "{}"] + bob, "rooms"),
            ]
            for (arguments, message) in cases {
                let result = try await docctl.run(arguments)
                #expect(result.status == 2, "docctl \(arguments.joined(separator: " ")): \(result)")
                #expect(result.stderr.contains(message), "docctl \(arguments.joined(separator: " ")): \(result)")
                #expect(!result.stderr.isEmpty)
            }
            // With --json the error is also a JSON line on stdout.
            let unbounded = try await docctl.run(["listen", "rooms", "--json"] + bob)
            let error = try #require(JSONObjectLine(unbounded.lines.first ?? ""), "\(unbounded)")
            #expect(error.keys == ["type", "code", "message"])
            #expect(error["type"] as? String == "error")
            #expect(error["code"] as? String == "invalidArgument")
        }
    }

    // MARK: the write queue

    @Test func pendingShowsOfflineWritesAndSyncPushesThem() async throws {
        try await Self.withServer { _, docctl in
            let cache = docctl.home + "/field-laptop"
            let nobody = try LoopbackPortReservation()
            defer { nobody.release() }
            let down = docctl.pointing(at: "http://127.0.0.1:\(nobody.port)")
            let write = try await down.run(["set", "notes/n1", #"{"text": "written offline"}"#, "--json", "--cache", cache] + down.user("dora"))
            #expect(write.status == 0, "\(write)")
            let accepted = try #require(JSONObjectLine(write.lines.first ?? ""), "\(write)")
            #expect(accepted["status"] as? String == "pending")
            let batch = try #require(accepted["batchId"] as? Int)

            let pending = try await down.run(["pending", "--json", "--cache", cache] + down.user("dora"))
            #expect(pending.status == 0, "\(pending)")
            #expect(pending.lines.count == 1, "\(pending)")
            let entry = try #require(JSONObjectLine(pending.lines.first ?? ""), "\(pending)")
            #expect(entry.keys == ["batchId", "paths", "kinds", "localTime", "state", "waitReason", "attempts", "lastAttemptAt", "lastError"])
            #expect(entry["state"] as? String == "waiting" || entry["state"] as? String == "pending", "\(entry)")
            #expect(entry["batchId"] as? Int == batch)
            #expect(entry["paths"] as? [String] == ["notes/n1"])
            #expect(entry["kinds"] as? [String] == ["set"])
            #expect((entry["localTime"] as? String)?.hasSuffix("Z") == true)
            #expect(entry["attempts"] is Int)

            // get falls back to the cache when the server cannot be reached.
            let cached = try await down.run(["get", "notes/n1", "--json", "--cache", cache] + down.user("dora"))
            #expect(cached.status == 0, "\(cached)")
            #expect(cached.lines == [#"{"path":"notes/n1","exists":true,"deleted":false,"version":null,"hasPendingWrites":true,"fromCache":true,"data":{"text":"written offline"}}"#], "\(cached)")
            let unreachable = try await down.run(["get", "notes/n1", "--source", "server", "--cache", cache] + down.user("dora"))
            #expect(unreachable.status == 3, "\(unreachable)")

            // sync against a dead server: exit 3, the write stays queued.
            let dead = try await down.run(["sync", "--timeout", "3", "--cache", cache] + down.user("dora"))
            #expect(dead.status == 3, "\(dead)")
            #expect(dead.stderr.contains("still queued"), "\(dead)")
            let stillPending = try await down.run(["pending", "--json", "--cache", cache] + down.user("dora"))
            #expect(stillPending.lines.count == 1, "\(stillPending)")

            // sync against the running server: exit 0, the queue is empty, the document arrived.
            let sync = try await docctl.run(["sync", "--timeout", "30", "--cache", cache] + docctl.user("dora"))
            #expect(sync.status == 0, "\(sync)")
            #expect(sync.stdout.contains("synced: 1 batch sent, 0 rejected"), "\(sync)")
            let empty = try await docctl.run(["pending", "--json", "--cache", cache] + docctl.user("dora"))
            #expect(empty.status == 0, "\(empty)")
            #expect(empty.stdout.isEmpty, "\(empty)")
            let human = try await docctl.run(["pending", "--cache", cache] + docctl.user("dora"))
            #expect(human.lines == ["0 pending batches"], "\(human)")
            let get = try await docctl.run(["get", "notes/n1", "--json", "--source", "server"] + docctl.user("erik"))
            #expect(get.status == 0, "\(get)")
            #expect((JSONObjectLine(get.lines.first ?? "")?["data"] as? [String: Any])?["text"] as? String == "written offline", "\(get)")
        }
    }

    @Test func revertDropsAQueuedWriteAndSyncListsRejections() async throws {
        try await Self.withServer { _, docctl in
            let cache = docctl.home + "/laptop"
            let unreachable = try LoopbackPortReservation()
            defer { unreachable.release() }
            let down = docctl.pointing(at: "http://127.0.0.1:\(unreachable.port)")
            let dora = down.user("dora")
            // Three writes while the server is unreachable: one to keep, one to revert, one
            // the server will reject (an update of a document that does not exist).
            var batches: [Int] = []
            for arguments in [["set", "notes/keep", #"{"text": "keep"}"#], ["set", "notes/drop", #"{"text": "drop"}"#],
                              ["update", "notes/missing", #"{"text": "x"}"#]] {
                let write = try await down.run(arguments + ["--json", "--cache", cache] + dora)
                #expect(write.status == 0, "\(write)")
                batches.append(try #require(JSONObjectLine(write.lines.first ?? "")?["batchId"] as? Int, "\(write)"))
            }

            let status = try await down.run(["status", "--json", "--cache", cache] + dora)
            #expect(status.status == 0, "\(status)")
            let state = try #require(JSONObjectLine(status.lines.first ?? ""), "\(status)")
            #expect(state["online"] as? Bool == false)
            #expect(state["pendingWrites"] as? Int == 3)
            #expect(state["uid"] as? String == "dora")
            #expect(state["tenant"] as? String == "acme")
            #expect((state["cacheBytes"] as? Int ?? 0) > 0, "\(state)")
            let offlineSync = try #require(state["sync"] as? [String: Any], "\(state)")
            #expect(offlineSync["lastSyncedAt"] is NSNull, "nothing was ever acknowledged: \(state)")
            #expect(offlineSync["totalBatches"] as? Int == 3, "\(state)")

            let revert = try await down.run(["pending", "revert", String(batches[1]), "--cache", cache] + dora)
            #expect(revert.status == 0, "\(revert)")
            let unknown = try await down.run(["pending", "revert", "999999", "--cache", cache] + dora)
            #expect(unknown.status == 1, "\(unknown)")
            #expect(unknown.stderr.contains("999999"), "\(unknown)")
            let left = try await down.run(["pending", "--json", "--cache", cache] + dora)
            #expect(left.lines.compactMap { JSONObjectLine($0)?["batchId"] as? Int } == [batches[0], batches[2]], "\(left)")
            let gone = try await down.run(["get", "notes/drop", "--source", "cache", "--json", "--cache", cache] + dora)
            #expect(gone.status == 1, "the reverted write is no longer in the local view: \(gone)")

            // sync: the kept write is committed, the update is rejected and listed, exit 1.
            let sync = try await docctl.run(["sync", "--timeout", "30", "--cache", cache] + docctl.user("dora"))
            #expect(sync.status == 1, "\(sync)")
            #expect(sync.stdout.contains("rejected: batch \(batches[2]) notes/missing: "), "\(sync)")
            #expect(sync.stdout.contains("synced: 2 batches sent, 1 rejected"), "\(sync)")
            let online = try await docctl.run(["status", "--cache", cache] + docctl.user("dora"))
            #expect(online.status == 0, "\(online)")
            #expect(online.lines.first == "server     \(docctl.server) (online)", "\(online)")
            #expect(online.lines.contains("pending    0 batches"), "\(online)")
            #expect(online.lines.contains { $0.hasPrefix("sync       synced at ") }, "the sync's time is kept: \(online)")
            for (path, exists) in [("notes/keep", true), ("notes/drop", false), ("notes/missing", false)] {
                let get = try await docctl.run(["get", path, "--source", "server", "--json"] + docctl.user("erik"))
                #expect(get.status == (exists ? 0 : 1), "\(path): \(get)")
            }
        }
    }

    // MARK: help

    /// `serve --outcome-retention` sets how long batch outcomes are kept for answering a batch
    /// sent again: a day or more (the protocol promises a day). Less, or not a duration, stops
    /// the start before anything is created.
    @Test func theOutcomeRetentionIsADayOrMore() async throws {
        let docctl = try DocctlRunner(server: "", secret: "")
        defer { docctl.removeHome() }
        let data = docctl.home + "/data"
        let short = try await docctl.run(["serve", "--port", "0", "--data", data, "--outcome-retention", "12h"])
        #expect(short.status != 0, "\(short)")
        #expect(short.stderr.contains("--outcome-retention (DOCCTL_OUTCOME_RETENTION) must be at least 24h"), "\(short)")
        let vague = try await docctl.run(["serve", "--port", "0", "--data", data, "--outcome-retention", "a while"])
        #expect(vague.status != 0 && vague.stderr.contains("--outcome-retention"), "\(vague)")
        #expect(!FileManager.default.fileExists(atPath: data), "a refused start created the data directory")

        let serve = try docctl.start(["serve", "--port", "0", "--data", data, "--secret", docctl.home + "/secret",
                                      "--outcome-retention", "7d"])
        defer { serve.kill() }
        #expect(await serve.line(0)?.hasPrefix("listening on http://") == true, "\(serve.standardError)")
        // The core was given a week (the start's log line reads it back from its configuration).
        #expect(serve.standardError.contains("outcomeRetention=604800s"), "\(serve.standardError)")
    }

    @Test func everyCommandHasHelpWithAnExample() async throws {
        let docctl = try DocctlRunner(server: "http://127.0.0.1:1", secret: "/nonexistent")
        defer { docctl.removeHome() }
        let commands = ["serve", "token", "get", "set", "update", "delete", "purge", "query", "listen", "request",
                        "pending", "pending list", "pending revert", "sync", "status", "rules", "rules check", "rules test"]
        for command in commands {
            let help = try await docctl.run(command.split(separator: " ").map(String.init) + ["--help"])
            #expect(help.status == 0, "docctl \(command) --help: \(help)")
            #expect(help.stdout.contains("USAGE: docctl \(command)"), "docctl \(command) --help: \(help)")
            #expect(help.stdout.contains("Example"), "docctl \(command) --help has no example: \(help)")
        }
        let top = try await docctl.run(["--help"])
        for command in commands where !command.contains(" ") {
            #expect(top.stdout.contains("  \(command) "), "docctl --help does not list \(command)")
        }
    }

    // MARK: rules

    @Test func rulesCheck() async throws {
        let docctl = try DocctlRunner(server: "http://127.0.0.1:1", secret: "/nonexistent")
        defer { docctl.removeHome() }
        let good = try await docctl.run(["rules", "check", "Rules/firestore.rules"])
        #expect(good.status == 0, "\(good)")
        #expect(good.stdout.contains("rules-check: Rules/firestore.rules loaded"), "\(good)")

        let broken = docctl.home + "/broken.rules"
        try """
            rules_version = '2';
            service cloud.firestore {
              match /databases/{database}/documents {
                match /rooms/{id} {
                  allow read: if request.auth != null &&;
                }
              }
            }
            """.write(toFile: broken, atomically: true, encoding: .utf8)
        let bad = try await docctl.run(["rules", "check", broken])
        #expect(bad.status == 1, "\(bad)")
        #expect(bad.stdout.contains("\(broken):5:"), "file:line:column expected: \(bad)")
        #expect(bad.stdout.range(of: #":5:[0-9]+: error: "#, options: .regularExpression) != nil, "\(bad)")
        #expect(bad.stdout.contains("did not load"), "\(bad)")

        let missing = try await docctl.run(["rules", "check", docctl.home + "/none.rules"])
        #expect(missing.status == 1, "\(missing)")
    }

    @Test(.enabled(if: ExternalSuite.rulesConformance.isEnabled))
    func rulesTestRunsTheConformanceSuites() async throws {
        let docctl = try DocctlRunner(server: "http://127.0.0.1:1", secret: "/nonexistent")
        defer { docctl.removeHome() }
        // The path as the docs write it (docctl runs in the repository root), unless moved.
        let folder = try ExternalSuite.rulesConformance.folder()
        let path = folder.isDefault ? ExternalSuite.rulesConformance.defaultPath : folder.path
        let suites = try await docctl.run(["rules", "test", path])
        #expect(suites.status == 0, "\(suites)")
        let summary = try #require(suites.lines.last(where: { $0.hasPrefix("rules-conformance: ") }), "\(suites)")
        #expect(summary.range(of: #"^rules-conformance: [1-9][0-9]* passed, 0 failed, [0-9]+ skipped$"#, options: .regularExpression) != nil, "\(summary)")
        print(summary)
    }
}

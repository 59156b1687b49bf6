import DocModel
import DocProtocol
import DocRules
import DocServer
import DocTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import Synchronization
import Testing

/// `GET /metrics` of a real server on loopback (Prometheus text, parsed here), the metrics port,
/// and the access log and request ids of the server core.
@Suite("Server metrics and access log", .serialized, .timeLimit(.minutes(2)))
struct ServerMetricsTests {
    static func key(_ path: String) -> DocumentKey { try! DocumentKey(path) }
    static func set(_ path: String, _ fields: [String: Value]) -> Mutation { .set(key(path), ObjectValue(fields)) }

    // MARK: The proof: the commit counter moves by exactly the committed batches

    @Test func theCommitCounterMovesByExactlyTheCommittedBatches() async throws {
        let server = try await MetricsServer()
        defer { server.removeData() }
        let metricsURL = try #require(server.address.metricsURL)
        #expect(server.address.metricsPort == server.address.port, "served on the main port by default")
        let before = try await Scrape.get(metricsURL)
        #expect(before.status == 200)
        #expect(before.contentType?.hasPrefix("text/plain") == true)

        let socket = RawSocket(url: server.address.url)
        guard case .welcome? = await socket.hello(token: try await server.token(), clientID: "c1") else {
            Issue.record("no welcome"); return
        }
        let committed = 5
        for batch in 1...committed {
            socket.send(.write(.init(clientID: "c1", batchID: batch, mutations: [Self.set("notes/n\(batch)", ["n": .integer(Int64(batch))])])))
            guard case .writeResult? = await socket.next(where: Self.isWriteAnswer) else { Issue.record("batch \(batch) not committed"); return }
        }
        // Rejected (an update of a document that does not exist): a rejection, not a commit.
        let missing = Mutation.update(Self.key("notes/missing"), fields: [try FieldPath("n"): .integer(1)])
        socket.send(.write(.init(clientID: "c1", batchID: committed + 1, mutations: [missing])))
        guard case .writeError(let rejected)? = await socket.next(where: Self.isWriteAnswer) else { Issue.record("no rejection"); return }
        #expect(rejected.error.code == .notFound)
        // Re-sent batches are answered from their stored outcomes and counted in neither.
        socket.send(.write(.init(clientID: "c1", batchID: 1, mutations: [Self.set("notes/n1", ["n": 1])])))
        guard case .writeResult? = await socket.next(where: Self.isWriteAnswer) else { Issue.record("no replayed result"); return }
        socket.send(.write(.init(clientID: "c1", batchID: committed + 1, mutations: [missing])))
        guard case .writeError? = await socket.next(where: Self.isWriteAnswer) else { Issue.record("no replayed rejection"); return }
        // A listener, for the per-tenant gauge.
        socket.send(.addTarget(.init(targetID: 2, target: try DocModel.Query(collection: "notes").limit(to: 10).toTarget())))
        _ = await socket.next(where: { if case .targetChange(let c) = $0 { c.state == .current } else { false } })

        let after = try await Scrape.get(metricsURL)
        let delta = { (name: String, labels: [String: String]) -> Double? in
            guard let now = after.samples.value(name, labels), let then = before.samples.value(name, labels) else { return nil }
            return now - then
        }
        #expect(delta("doccache_commits_total", ["source": "client"]) == Double(committed), "\(after.text)")
        #expect(delta("doccache_commits_total", ["source": "request"]) == 0)
        #expect(delta("doccache_commit_duration_seconds_count", [:]) == Double(committed))
        #expect(delta("doccache_rejections_total", ["code": "notFound"]) == 1)
        #expect(after.samples.sum("doccache_rejections_total") - before.samples.sum("doccache_rejections_total") == 1)
        #expect(delta("doccache_batch_outcomes_recorded_total", [:]) == Double(committed + 1))
        #expect(delta("doccache_change_log_entries_appended_total", [:]) == Double(committed))
        #expect(delta("doccache_frames_received_total", [:]) == Double(committed + 4))
        #expect(delta("doccache_connections_opened_total", [:]) == 1)
        #expect(after.samples.value("doccache_connections", [:]) == 1)
        #expect(after.samples.value("doccache_listen_targets", ["tenant": "acme"]) == 1)
        #expect(after.samples.value("doccache_tenants", [:]) == 1)
        // Histograms are cumulative: the +Inf bucket is the count.
        #expect(after.samples.value("doccache_commit_duration_seconds_bucket", ["le": "+Inf"])
                == after.samples.value("doccache_commit_duration_seconds_count", [:]))
        #expect(after.text.contains("# TYPE doccache_commits_total counter"))
        #expect(after.text.contains("# TYPE doccache_fanout_duration_seconds histogram"))
        #expect(!after.text.contains("uid="), "no uid labels")
        await socket.close()
        await server.stop()
    }

    static func isWriteAnswer(_ message: ServerMessage) -> Bool {
        switch message {
        case .writeResult, .writeError: true
        default: false
        }
    }

    // MARK: --metrics-port

    @Test func aMetricsPortServesThereAndTheMainPortAnswers404() async throws {
        let server = try await MetricsServer(metricsPort: 0)
        defer { server.removeData() }
        let address = server.address
        let metricsPort = try #require(address.metricsPort)
        #expect(metricsPort != address.port)
        let metrics = try await Scrape.get(try #require(address.metricsURL))
        #expect(metrics.status == 200)
        #expect(metrics.text.contains("# TYPE doccache_commits_total counter"))
        let main = try await Scrape.get(address.url + "/metrics")
        #expect(main.status == 404)
        let health = try await Scrape.get(address.url + "/health")
        #expect(health.status == 200)

        // A metrics port that cannot be bound stops the server with an error (never ready).
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("doccache-metrics-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try LevelDBServerStore.open(directory: directory)
        let taken = DocServerHTTP(
            core: DocServerCore(store: store, logger: .discarding), verifier: try await TokenVerifier(secret: server.secret),
            settings: HTTPServerSettings(port: 0, shutdownGrace: .seconds(2), metricsPort: metricsPort), logger: .discarding)
        let readied = Flag()
        await #expect(throws: (any Error).self) {
            try await taken.run(handleSignals: false) { _ in readied.set() }
        }
        #expect(!readied.isSet)
        await store.close()
        await server.stop()
    }

    @Test func docctlServeTakesAMetricsPort() async throws {
        let metricsPort = try freeLoopbackPort()
        let server = try ServerProcess(arguments: ["--metrics-port", String(metricsPort)])
        defer { server.removeData() }
        try await server.start()
        defer { server.kill() }
        let metrics = try await Scrape.get("http://127.0.0.1:\(metricsPort)/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.samples.value("doccache_connections", [:]) == 0)
        #expect(try await Scrape.get(server.url + "/metrics").status == 404)
    }

    // MARK: Access log and request ids

    @Test func aCommitWritesOneAccessLineAndARequestsLinesShareItsID() async throws {
        let captured = CapturedLogs()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("doccache-access-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try LevelDBServerStore.open(directory: directory)
        let core = DocServerCore(store: store, logger: captured.logger("doccache.server"),
                                 accessLogger: captured.logger(DocServerCore.accessLoggerLabel))
        core.requests.registerExamples()
        let connection = try await core.handshake(tenant: "acme", uid: "alice", clientID: "c1")

        await core.write(.init(clientID: "c1", batchID: 1, mutations: [
            Self.set("accounts/a", ["balance": 100]), Self.set("accounts/b", ["balance": 0]),
        ]), on: connection)
        let commits = captured.lines.filter { $0.label == "doccache.access" && $0.metadata["op"] == "commit" }
        #expect(commits.count == 1)
        let line = try #require(commits.first)
        #expect(line.level == .info)
        #expect(line.message == "commit")
        #expect(line.metadata["tenant"] == "acme")
        #expect(line.metadata["uid"] == "alice")
        #expect(line.metadata["client"] == "c1")
        #expect(line.metadata["code"] == "ok")
        #expect(line.metadata["batch"] == "c1#1")
        #expect(line.metadata["connection"] == connection.id)
        let latency = try #require(line.metadata["latency_ms"].flatMap(Double.init))
        #expect(latency >= 0 && latency < 60_000)
        #expect(captured.lines.contains { $0.label == "doccache.access" && $0.metadata["op"] == "handshake" && $0.metadata["code"] == "ok" })

        // A rejected batch: its code.
        await core.write(.init(clientID: "c1", batchID: 2, mutations: [
            .update(Self.key("accounts/zz"), fields: [try FieldPath("balance"): 1]),
        ]), on: connection)
        #expect(captured.lines.contains { $0.metadata["op"] == "commit" && $0.metadata["batch"] == "c1#2" && $0.metadata["code"] == "notFound" })

        // A request document: the commit that wrote it, its processing and its outcome carry its id.
        await core.write(.init(clientID: "c1", batchID: 3, mutations: [
            Self.set("requests/r1", [
                "type": "transfer", "status": "pending", "createdBy": "alice",
                "params": .map(["from": "accounts/a", "to": "accounts/b", "amount": 30]),
            ]),
        ]), on: connection)
        let processed = await eventually {
            captured.lines.contains { $0.message == "request processed" && $0.metadata["request_id"] == "requests/r1" }
        }
        #expect(processed, "\(captured.lines.map(\.message))")
        let requestLines = captured.lines.filter { $0.metadata["request_id"] == "requests/r1" }
        let messages = requestLines.map(\.message)
        #expect(requestLines.contains { $0.metadata["op"] == "commit" && $0.metadata["batch"] == "c1#3" }, "\(messages)")
        #expect(messages.contains("processing request"), "\(messages)")
        #expect(messages.contains("request outcome written"), "\(messages)")
        let done = try #require(requestLines.first { $0.message == "request processed" })
        #expect(done.metadata["status"] == "applied")
        // The batch that wrote it (absent when the tenant's first sweep, which races with the
        // commit, took the request up instead).
        #expect(done.metadata["request_batch"] == nil || done.metadata["request_batch"] == "c1#3")
        #expect(done.metadata["tenant"] == "acme")
        // The server's own commit of the outcome is logged with the request id too.
        #expect(requestLines.contains { $0.message == "batch committed" && $0.metadata["batch"]?.hasPrefix("request:r1") == true },
                "\(messages)")

        let text = await core.metricsText()
        let samples = Samples(text)
        #expect(samples.value("doccache_requests_total", ["type": "transfer", "outcome": "applied"]) == 1)
        #expect(samples.value("doccache_request_duration_seconds_count", ["type": "transfer"]) == 1)
        #expect(samples.value("doccache_commits_total", ["source": "request"]) == 1)
        #expect(samples.value("doccache_commits_total", ["source": "client"]) == 2)
        await core.close(connection)
        await core.shutdown()
        await store.close()
    }

    @Test func deniedWritesAreLoggedWithTheirConnectionAndRequestID() async throws {
        let captured = CapturedLogs()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("doccache-access-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try LevelDBServerStore.open(directory: directory)
        var configuration = ServerConfiguration()
        configuration.rules = try RuleSet.parse(source: """
            rules_version = '2';
            service cloud.firestore {
              match /databases/{database}/documents {
                match /{document=**} { allow read: if true; }
              }
            }
            """)
        let core = DocServerCore(store: store, configuration: configuration, logger: captured.logger("doccache.server"),
                                 accessLogger: captured.logger(DocServerCore.accessLoggerLabel))
        let connection = try await core.handshake(tenant: "acme", uid: "mallory", clientID: "m1")
        await core.write(.init(clientID: "m1", batchID: 9, mutations: [
            Self.set("requests/r9", ["type": "transfer", "status": "pending"]),
        ]), on: connection)
        let denial = try #require(captured.lines.first { $0.message == "permission denied" })
        #expect(denial.metadata["connection"] == connection.id)
        #expect(denial.metadata["request_id"] == "requests/r9")
        #expect(denial.metadata["batch"] == "m1#9")
        #expect(denial.metadata["tenant"] == "acme")
        let access = try #require(captured.lines.first { $0.metadata["op"] == "commit" })
        #expect(access.metadata["code"] == "permissionDenied")
        #expect(access.metadata["request_id"] == "requests/r9")
        await core.close(connection)
        await core.shutdown()
        await store.close()
    }
}

// MARK: Support

/// A server on 127.0.0.1 (free ports) whose settings the test chooses.
final class MetricsServer: Sendable {
    let dataDirectory: String
    let secret = Array("metrics-test-secret-0123456789abcdefgh".utf8)
    let store: LevelDBServerStore
    let http: DocServerHTTP
    let task: Task<Void, any Error>
    let address: ServerAddress

    init(metricsPort: Int? = nil) async throws {
        dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("doccache-metrics-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        let store = try LevelDBServerStore.open(directory: dataDirectory)
        let core = DocServerCore(store: store, logger: .discarding)
        let http = DocServerHTTP(
            core: core, verifier: try await TokenVerifier(secret: secret),
            settings: HTTPServerSettings(port: 0, shutdownGrace: .seconds(5), metricsPort: metricsPort), logger: .discarding)
        let (ready, readyContinuation) = AsyncStream<ServerAddress>.makeStream()
        let task = Task {
            defer { readyContinuation.finish() }
            try await http.run(handleSignals: false) { address in readyContinuation.yield(address) }
        }
        var iterator = ready.makeAsyncIterator()
        guard let address = await iterator.next() else {
            _ = try await task.value
            throw DocError(.unavailable, "the test server did not start")
        }
        self.store = store
        self.http = http
        self.task = task
        self.address = address
    }

    func token() async throws -> String {
        try await TokenMinter(secret: secret).mint(tenant: "acme", uid: "alice")
    }

    func stop() async {
        await http.shutdown()
        _ = try? await task.value
        await store.close()
    }

    func removeData() { try? FileManager.default.removeItem(atPath: dataDirectory) }
}

/// One `GET`: status, content type, body and its samples.
struct Scrape {
    let status: Int
    let contentType: String?
    let text: String
    var samples: Samples { Samples(text) }

    static func get(_ url: String) async throws -> Scrape {
        var request = URLRequest(url: URL(string: url)!)
        request.cachePolicy = .reloadIgnoringLocalCacheData
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        return Scrape(status: http.statusCode, contentType: http.value(forHTTPHeaderField: "Content-Type"),
                      text: String(decoding: data, as: UTF8.self))
    }
}

/// The samples of a Prometheus text exposition: `name{label="value",…} value` per line;
/// `#` lines (HELP, TYPE) and blank lines are skipped.
struct Samples {
    struct Sample {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    var all: [Sample] = []

    init(_ text: String) {
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) where !line.hasPrefix("#") {
            if let sample = Self.parse(Substring(line)) { all.append(sample) }
        }
    }

    /// The sample with this name and exactly these labels (`nil` when there is none, so an
    /// expectation on a metric that is not emitted fails).
    func value(_ name: String, _ labels: [String: String]) -> Double? {
        all.first { $0.name == name && $0.labels == labels }?.value
    }

    /// The sum over every label set of `name`.
    func sum(_ name: String) -> Double {
        all.filter { $0.name == name }.reduce(0) { $0 + $1.value }
    }

    /// `name`, then `{k="v",…}` (values with `\\`, `\"`, `\n` escapes) or nothing, a space,
    /// the value (`+Inf`, `-Inf`, `NaN` or a number).
    static func parse(_ line: Substring) -> Sample? {
        var rest = line[...]
        let nameEnd = rest.firstIndex { $0 == "{" || $0 == " " } ?? rest.endIndex
        let name = String(rest[..<nameEnd])
        guard !name.isEmpty else { return nil }
        rest = rest[nameEnd...]
        var labels: [String: String] = [:]
        if rest.first == "{" {
            rest = rest.dropFirst()
            while rest.first != "}" {
                guard let equals = rest.firstIndex(of: "=") else { return nil }
                let key = String(rest[..<equals]).trimmingCharacters(in: .whitespaces)
                rest = rest[rest.index(after: equals)...]
                guard rest.first == "\"" else { return nil }
                rest = rest.dropFirst()
                var value = ""
                while let c = rest.first, c != "\"" {
                    rest = rest.dropFirst()
                    if c == "\\", let escaped = rest.first {
                        rest = rest.dropFirst()
                        value.append(escaped == "n" ? "\n" : escaped)
                    } else {
                        value.append(c)
                    }
                }
                guard rest.first == "\"" else { return nil }
                rest = rest.dropFirst()
                labels[key] = value
                if rest.first == "," { rest = rest.dropFirst() }
                guard !rest.isEmpty else { return nil }
            }
            rest = rest.dropFirst()
        }
        let fields = rest.split(separator: " ")
        guard let text = fields.first else { return nil }
        let value: Double
        switch text {
        case "+Inf": value = .infinity
        case "-Inf": value = -.infinity
        default:
            guard let number = Double(text) else { return nil }
            value = number
        }
        return Sample(name: name, labels: labels, value: value)
    }
}

import DocModel
import DocTestSupport
import Foundation
import Testing

/// docs/cli.md, `docctl set`/`update`/`delete`: a write whose server is known to be
/// unreachable is answered `pending` at once, not after the whole grace the server gets to
/// commit it (issue 17, item 6) — and `pending` is true: the writes are in the local queue and
/// reach the server once it runs.
@Suite("docctl offline writes", .serialized)
struct DocctlOfflineWriteTests {
    /// How long a write without `--wait` used to wait, reachable server or not
    /// (`WriteReporter.grace`; docs/cli.md: "it gives the server 3 s").
    static let grace: Duration = .seconds(3)

    /// `docctl ARGUMENTS`'s only stdout line, parsed as `PATH: pending (batch N, queued in the
    /// local cache)`; records an issue and returns nil for anything else.
    static func pendingBatch(_ result: DocctlRunner.Result, path: String) -> Int? {
        let prefix = "\(path): pending (batch "
        let suffix = ", queued in the local cache)"
        guard result.status == 0, result.lines.count == 1, let line = result.lines.first,
              line.hasPrefix(prefix), line.hasSuffix(suffix),
              let batch = Int(line.dropFirst(prefix.count).dropLast(suffix.count)),
              line == "\(path): pending (batch \(batch), queued in the local cache)" else {
            Issue.record("not the documented pending line for \(path): \(result)")
            return nil
        }
        return batch
    }

    @Test func writesToAnUnreachableServerArePendingAtOnceAndSyncWhenItRuns() async throws {
        // Nothing listens on the port yet: every connection is refused at once, and the port
        // stays ours until the server starts on it.
        let reservation = try LoopbackPortReservation()
        defer { reservation.release() }
        let port = reservation.port
        let server = try ServerProcess(port: port)
        defer { server.kill(); server.removeData() }
        let docctl = try DocctlRunner(server: "http://127.0.0.1:\(port)", secret: server.secretFile)
        defer { docctl.removeHome() }
        let cache = docctl.home + "/offline-cache"
        let dora = docctl.user("dora") + ["--cache", cache]

        // 20 sets, an update and a delete in a row, each its own process, each `pending`.
        var runs: [DocctlRunner.Result] = []
        var batches: [Int] = []
        for i in 0..<20 {
            let set = try await docctl.run(["set", "notes/n\(i)", #"{"n": \#(i)}"#] + dora)
            runs.append(set)
            batches.append(try #require(Self.pendingBatch(set, path: "notes/n\(i)")))
        }
        let update = try await docctl.run(["update", "notes/n0", #"{"edited": true}"#] + dora)
        runs.append(update)
        batches.append(try #require(Self.pendingBatch(update, path: "notes/n0")))
        let delete = try await docctl.run(["delete", "notes/n1", "--json"] + dora)
        runs.append(delete)
        #expect(delete.status == 0, "\(delete)")
        let deleteLine = try #require(JSONObjectLine(delete.lines.first ?? ""), "\(delete)")
        #expect(delete.lines.count == 1, "\(delete)")
        #expect(deleteLine.keys == ["path", "batchId", "status", "version", "error"], "\(delete)")
        #expect(deleteLine["path"] as? String == "notes/n1")
        #expect(deleteLine["status"] as? String == "pending")
        #expect(deleteLine["version"] is NSNull)
        #expect(deleteLine["error"] is NSNull)
        batches.append(try #require(deleteLine["batchId"] as? Int, "\(delete)"))

        // A regression guard for the timeout path, not a benchmark: waiting out the grace,
        // the 22 writes took at least 22 × 3 s = 66 s; answered as soon as the connection
        // is refused, they take process start-ups only (about 60 ms each here). Half the old
        // total leaves room for any slow machine while still failing if writes wait out the
        // grace again. Each process's own running time is summed, not the test's wall time:
        // with the whole suite running, the test's awaits waited up to 2 s each for a thread.
        let runningTimes = runs.map(\.runningTime)
        let total = runningTimes.compactMap { $0 }.reduce(Duration.zero, +)
        #expect(!runningTimes.contains(nil) && total < Self.grace * batches.count / 2,
                "\(batches.count) offline writes ran \(total) in all: \(runningTimes)")
        #expect(batches == batches.sorted() && Set(batches).count == batches.count, "batch ids \(batches)")

        // Pending was true: every write is queued in the cache, in order.
        let pending = try await docctl.run(["pending", "--json"] + dora)
        #expect(pending.status == 0, "\(pending)")
        #expect(pending.lines.compactMap { JSONObjectLine($0)?["batchId"] as? Int } == batches, "\(pending)")

        // The server starts on that port: sync pushes the queue, nothing is rejected…
        reservation.release()
        try await server.start()
        #expect(server.port == port)
        let sync = try await docctl.run(["sync", "--timeout", "60"] + dora)
        #expect(sync.status == 0, "\(sync)")
        #expect(sync.lines == ["synced: \(batches.count) batches sent, 0 rejected"], "\(sync)")
        let empty = try await docctl.run(["pending", "--json"] + dora)
        #expect(empty.status == 0 && empty.lines.isEmpty, "\(empty)")

        // …and another user (another cache) reads every write from the server.
        let erik = docctl.user("erik")
        let query = try await docctl.run(["query", "notes", "--limit", "100", "--json"] + erik)
        #expect(query.status == 0, "\(query)")
        let result = try #require(JSONObjectLine(query.lines.first ?? ""), "\(query)")
        #expect(result["fromCache"] as? Bool == false, "\(query)")
        let documents = result["documents"] as? [[String: Any]] ?? []
        var data: [String: [String: Any]] = [:]
        for document in documents {
            if let path = document["path"] as? String { data[path] = document["data"] as? [String: Any] ?? [:] }
        }
        let expected = Set((0..<20).filter { $0 != 1 }.map { "notes/n\($0)" })
        #expect(Set(data.keys) == expected, "\(query)")
        for i in 2..<20 {
            #expect(data["notes/n\(i)"]?["n"] as? Int == i, "notes/n\(i): \(query)")
        }
        #expect(data["notes/n0"]?["n"] as? Int == 0, "\(query)")
        #expect(data["notes/n0"]?["edited"] as? Bool == true, "\(query)")
        let deleted = try await docctl.run(["get", "notes/n1", "--source", "server", "--json"] + erik)
        #expect(deleted.status == 0, "\(deleted)")
        #expect(JSONObjectLine(deleted.lines.first ?? "")?["deleted"] as? Bool == true, "\(deleted)")

        // With the server answering, a write without --wait is committed as before (an
        // unreachable server only ends the wait early; it never replaces a commit).
        let online = try await docctl.run(["set", "notes/online", #"{"n": 99}"#] + dora)
        #expect(online.status == 0, "\(online)")
        #expect(online.stdout.range(of: #"^notes/online: committed \(version [0-9]+\)\n$"#, options: .regularExpression) != nil,
                "\(online)")
    }
}

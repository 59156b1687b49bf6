import DocCache
import DocModel
import DocTestSupport
import Foundation
import Testing

/// Issue 4: "a client killed with SIGKILL mid-sync resumes after restart and nothing is lost
/// or applied twice". A real child process (`doccache-crash-child`, syncing mode) writes
/// increments of one counter and sets of distinct documents through a store connected to the
/// real server, and is SIGKILLed while its queue is being sent. The test reopens the same cache
/// directory, lets it sync, and checks the server has every accepted write exactly once.
@Suite("Client SIGKILLed mid-sync", .serialized)
struct ClientCrashTests {
    struct Report {
        var accepted: [(batch: Int, path: String)] = []
        var committed: Set<Int> = []
        var ready = false
    }

    static func parse(_ lines: [String]) -> Report {
        var report = Report()
        for line in lines {
            let parts = line.split(separator: " ")
            if parts.count == 3, parts[0] == "accepted", let batch = Int(parts[1]) { report.accepted.append((batch, String(parts[2]))) }
            if parts.count == 2, parts[0] == "committed", let batch = Int(parts[1]) { report.committed.insert(batch) }
            if line == "ready" { report.ready = true }
        }
        return report
    }

    /// `pruned`: the server prunes its outcomes (all but the client's latest) before the
    /// client comes back, as when it stays away longer than the retention: the batches it had
    /// sent whose answers died with it are answered as processed before, and it keeps them as
    /// failed writes rather than taking them for another store's (it stored their first send).
    @Test(arguments: [(UInt64(0xC1A5_4001), false), (0xC1A5_4002, false), (0xC1A5_4003, true)])
    func aClientKilledMidSyncLosesNothingAndAppliesNothingTwice(seed: UInt64, pruned: Bool) async throws {
        let server = try await LiveServer(outcomeRetentionMicros: pruned ? 0 : nil)
        defer { server.removeData() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("doccache-client-crash-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let token = try await server.token(uid: "child")

        // 150 increments and 150 item sets; the kill comes once the child has accepted all of
        // them and the server has acknowledged a seeded number of them (so some are committed,
        // the rest still queued or in flight).
        let increments = 150
        var random = SplitMix64(seed: seed)
        let killAfterCommits = 10 + Int(random.next() % UInt64(increments))
        let child = try ChildProcess(executable: try ServerProcess.executable("doccache-crash-child"),
                                     arguments: [directory, String(increments), "--server", server.url, "--token", token],
                                     keepStandardInputOpen: true)
        defer { child.kill() }
        var report = Report()
        let reached = await eventually {
            report = Self.parse(child.lines)
            return !child.isRunning || (report.ready && report.committed.count >= killAfterCommits)
        }
        child.kill()
        report = Self.parse(child.lines)
        #expect(reached, "the child never got to the kill point: \(report.accepted.count) accepted, \(report.committed.count) committed; stderr: \(child.standardError)")
        #expect(child.wasKilled, "the child ended by itself: \(child.standardError)")
        #expect(report.ready)
        #expect(report.accepted.count == 2 * increments)
        let acceptedIncrements = report.accepted.filter { $0.path == "counters/c1" }.count
        let acceptedItems = Set(report.accepted.filter { $0.path.hasPrefix("items/") }.map { String($0.path.dropFirst("items/".count)) })
        #expect(acceptedIncrements == increments)

        // What survived in the cache: a queue of accepted batches, in order.
        let offline = try await DocumentStore.open(directory: directory, tenant: "acme", user: "child")
        let queued = try await offline.pendingWrites().map(\.batchID)
        await offline.close()
        #expect(Set(queued).isSubset(of: Set(report.accepted.map(\.batch))), "a batch nobody accepted is queued")
        #expect(queued == queued.sorted())
        // Queued increments the server had already applied: their acknowledgement was lost
        // with the process, so they are sent again after the restart (and must count once).
        let atKill: Int64
        if case .integer(let n)? = try await ServerReads.document("counters/c1", url: server.url, token: token)?["n"] { atKill = n } else { atKill = 0 }
        let queuedSet = Set(queued)
        let acknowledgedIncrements = report.accepted.filter { $0.path == "counters/c1" && !queuedSet.contains($0.batch) }.count
        print("client-crash seed \(seed): killed after \(report.committed.count) of \(report.accepted.count) writes were reported committed; \(queued.count) still queued; the server's counter at the kill: \(atKill), of which \(atKill - Int64(acknowledgedIncrements)) queued increments already applied (sent again)")

        if pruned { _ = await server.core.runMaintenance() }
        // Reopened with the server: the queue drains; nothing is lost, nothing counted twice.
        let endpoint = try ServerEndpoint(url: server.url) { token }
        let store = try await DocumentStore.open(directory: directory, tenant: "acme", user: "child", server: endpoint)
        let drained = await eventually { await store.pendingWriteCount == 0 }
        let left = await store.pendingWriteCount
        let lastError = await store.lastSyncError
        #expect(drained, "still \(left) pending; last error \(String(describing: lastError))")
        let counter = try await ServerReads.document("counters/c1", url: server.url, token: token)
        #expect(counter?["n"] == .integer(Int64(acceptedIncrements)), "the server's counter \(String(describing: counter)) after \(acceptedIncrements) accepted increments")
        let items = try await ServerReads.collection("items", url: server.url, token: token)
        #expect(Set(items.keys) == acceptedItems, "missing \(acceptedItems.subtracting(items.keys).sorted()), unexpected \(Set(items.keys).subtracting(acceptedItems).sorted())")
        for (id, fields) in items {
            #expect(fields["k"] == .integer(Int64(id.dropFirst())!), "items/\(id): \(fields)")
        }
        let failed = try await store.failedWrites()
        if pruned {
            // Only batches the server had applied are refused, each as processed before.
            #expect(failed.allSatisfy { $0.error.isBatchProcessedBefore }, "\(failed.map(\.error))")
            print("client-crash seed \(seed), outcomes pruned: \(failed.count) re-sent batches refused as processed before")
        } else {
            #expect(failed.isEmpty, "\(failed.map(\.error))")
            // The reopened client agrees with the server.
            #expect(try await store.document("counters/c1").getDocument(source: .cache).get("n") == .integer(Int64(acceptedIncrements)))
        }
        await store.close()
        await server.stop()
    }
}

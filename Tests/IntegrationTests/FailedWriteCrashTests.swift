import DocCache
import DocModel
import DocTestSupport
import Foundation
import Testing

/// Issue 17: a rejected write is kept "exactly once" even when the process is SIGKILLed while
/// the rejections arrive. A real child process (`doccache-crash-child --rejected`) queues
/// updates of documents that do not exist through a store connected to the real server, which
/// rejects each with `notFound`; the child is killed once a seeded number of rejections has
/// arrived. In the reopened cache every accepted write is either still pending or a failed
/// write — never both, never neither — and every rejection the child heard is a failed write.
@Suite("Failed writes across a SIGKILL", .serialized)
struct FailedWriteCrashTests {
    @Test(arguments: [UInt64(0xFA11_0001), 0xFA11_0002])
    func aWriteIsPendingOrFailedExactlyOnceAfterAKill(seed: UInt64) async throws {
        let server = try await LiveServer()
        defer { server.removeData() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("doccache-failed-crash-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let token = try await server.token(uid: "child")

        let count = 120
        var random = SplitMix64(seed: seed)
        let killAfterRejections = 5 + Int(random.next() % 60)
        let child = try ChildProcess(executable: try ServerProcess.executable("doccache-crash-child"),
                                     arguments: [directory, String(count), "--server", server.url, "--token", token, "--rejected"],
                                     keepStandardInputOpen: true)
        defer { child.kill() }
        func parse() -> (accepted: [Int], rejected: Set<Int>) {
            var accepted: [Int] = [], rejected = Set<Int>()
            for line in child.lines {
                let parts = line.split(separator: " ")
                if parts.count == 3, parts[0] == "accepted", let id = Int(parts[1]) { accepted.append(id) }
                if parts.count == 2, parts[0] == "rejected", let id = Int(parts[1]) { rejected.insert(id) }
            }
            return (accepted, rejected)
        }
        // Killed once every write is accepted (so the list is complete) and the seeded number
        // of rejections has arrived; the others are in flight or queued.
        let reached = await eventually {
            !child.isRunning || (child.lines.contains("ready") && parse().rejected.count >= killAfterRejections)
        }
        child.kill()
        let (accepted, rejected) = parse()
        #expect(reached, "the child never got to the kill point: \(accepted.count) accepted, \(rejected.count) rejected; stderr: \(child.standardError)")
        #expect(child.wasKilled, "the child ended by itself: \(child.standardError)")
        #expect(accepted.count == count)

        // Offline reopen: each accepted write is pending or failed, exactly once.
        let offline = try await DocumentStore.open(directory: directory, tenant: "acme", user: "child")
        let pending = try await offline.pendingWrites().map(\.batchID)
        let failed = try await offline.failedWrites()
        await offline.close()
        let failedIDs = failed.map(\.id)
        #expect(Set(pending).isDisjoint(with: failedIDs), "a write is both pending and failed")
        #expect(Set(failedIDs).count == failedIDs.count, "a failed write is listed twice")
        #expect(Set(pending).union(failedIDs) == Set(accepted), "lost: \(Set(accepted).subtracting(pending).subtracting(failedIDs).sorted())")
        #expect(rejected.isSubset(of: Set(failedIDs)), "a rejection the child heard is not kept: \(rejected.subtracting(failedIDs).sorted())")
        for record in failed {
            #expect(record.error.code == .notFound)
            #expect(record.writes.first?.path.hasPrefix("missing/m") == true)
            #expect(record.writes.first?.data?["text"] != nil, "the user's data is kept")
        }
        print("failed-write-crash seed \(seed): killed after \(rejected.count) rejections heard; \(failed.count) failed and \(pending.count) pending of \(accepted.count) accepted")

        // Reopened with the server: the rest are rejected too; every accepted write is a
        // failed write, once.
        let endpoint = try ServerEndpoint(url: server.url) { token }
        let store = try await DocumentStore.open(directory: directory, tenant: "acme", user: "child", server: endpoint)
        let drained = await eventually { await store.pendingWriteCount == 0 }
        #expect(drained)
        let all = try await store.failedWrites().map(\.id)
        #expect(all.sorted() == accepted.sorted())
        await store.close()
        await server.stop()
    }
}

import Foundation
import Testing
import DocModel
import DocTestSupport
@testable import DocCache

/// The product's promise: once a write call returns, a crash of the app loses nothing. Proven
/// by killing a real child process with SIGKILL while it writes.
@Suite("Durability across SIGKILL")
struct CrashDurabilityTests {
    static func childExecutable() throws -> URL {
        let exe = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                      ?? CommandLine.arguments[0])
        let candidate = exe.deletingLastPathComponent().appendingPathComponent("doccache-crash-child")
        guard FileManager.default.isExecutableFile(atPath: candidate.path) else {
            throw DocError(.notFound, "doccache-crash-child not built next to the test binary", at: candidate.path)
        }
        return candidate
    }

    @Test(arguments: [(40, true), (100_000, false)])
    func everyAcceptedWriteIsPendingAfterAKill(count: Int, waitForReady: Bool) async throws {
        let dir = TemporaryDirectory("crash")
        // Not Foundation's `Process` (see SpawnedProcess); stdin stays open (the child ends on
        // its end-of-file) until the child has been killed.
        let process = try SpawnedProcess(executable: try Self.childExecutable().path, arguments: [dir.path, String(count)],
                                         standardInput: .pipe, standardOutput: .pipe, standardError: .inherit)
        defer { close(process.standardInput) }

        // Read "accepted <batch> <path>" lines until ready (or, for the endless run, until
        // enough writes were reported), with a time limit so the test cannot hang. The reads
        // block, so they run on a thread of their own, not on one of the few threads every
        // other test's tasks share.
        let handle = FileHandle(fileDescriptor: process.standardOutput, closeOnDealloc: true)
        let accepted = await withCheckedContinuation { (done: CheckedContinuation<[(Int, String)], Never>) in
            Thread.detachNewThread {
                var accepted: [(Int, String)] = []
                var buffer = Data()
                let deadline = Date().addingTimeInterval(120)
                reading: while Date() < deadline {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    buffer.append(chunk)
                    while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                        let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                        buffer.removeSubrange(buffer.startIndex...newline)
                        if line == "ready" { break reading }
                        let parts = line.split(separator: " ")
                        if parts.count == 3, parts[0] == "accepted", let id = Int(parts[1]) { accepted.append((id, String(parts[2]))) }
                        if !waitForReady && accepted.count >= 60 { break reading }
                    }
                }
                done.resume(returning: accepted)
            }
        }
        process.signal(SIGKILL)
        #expect(process.waitUntilEnded(), "the child still runs after SIGKILL")
        #expect(process.wasSignaled, "the child ended by itself (status \(String(describing: process.exitStatus)))")
        #expect(accepted.count >= (waitForReady ? count : 60), "the child reported \(accepted.count) writes")

        let store = try await DocumentStore.open(directory: dir.path, tenant: "crash", user: "child")
        let pending = try await store.pendingWrites()
        let byID = Dictionary(uniqueKeysWithValues: pending.map { ($0.batchID, $0) })
        for (batchID, path) in accepted {
            #expect(byID[batchID]?.paths.contains(path) == true, "accepted batch \(batchID) for \(path) is pending after the kill")
        }
        #expect(pending.map(\.batchID) == pending.map(\.batchID).sorted(), "the queue keeps its order")
        for (_, path) in accepted {
            #expect(try await store.document(path).getDocument(source: .cache).exists, "\(path) is in the cache")
        }
        await store.close()
    }
}

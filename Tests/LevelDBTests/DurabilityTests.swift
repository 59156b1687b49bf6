import Foundation
import LevelDB
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A write that has returned survives a crash of the process. Each test runs
/// `leveldb-crash-child`, which writes and reports each write on its standard output once the
/// call has returned, kills it with SIGKILL, reopens the database here and checks that every
/// reported write is there.
@Suite("Durability across a process crash", .timeLimit(.minutes(3)))
struct DurabilityTests {
    private static let outputTimeout: Duration = .seconds(60)

    /// Checks that the database at `path` holds exactly what `reported` says for its keys.
    private func verify(_ reported: ReportedWrites, at path: String) throws {
        let db = try Database.open(path: path, options: Options(createIfMissing: false, paranoidChecks: true))
        defer { db.close() }
        #expect(!reported.values.isEmpty, "the child reported no writes")
        var missing: [String] = []
        for (key, value) in reported.values.sorted(by: { $0.key < $1.key }) {
            let stored = try db.get(key)
            if stored != value { missing.append(key) }
        }
        #expect(missing.isEmpty, "\(missing.count) reported writes lost or wrong, e.g. \(missing.prefix(5))")
        for key in reported.deleted {
            #expect(try db.get(key) == nil, "deleted \(key) is back")
        }
    }

    @Test("every write reported before SIGKILL is there after reopening")
    func killAfterWrites() async throws {
        try await withTemporaryPath { path in
            let count = 300
            let child = try CrashChild(arguments: [path, String(count)])
            let deadline = ContinuousClock.now + Self.outputTimeout
            var reported = ReportedWrites()
            var ready = false
            while let line = try await child.readLine(before: deadline) {
                if line == "ready" {
                    ready = true
                    break
                }
                let recognized = reported.record(line)
                #expect(recognized, "unexpected line from the child: \(line)")
            }
            try #require(ready, "leveldb-crash-child ended without reporting ready")

            // While the child holds the database, this process cannot open it.
            let lockError = #expect(throws: LevelDBError.self) { try Database.open(path: path) }
            #expect(lockError?.code == .locked)

            child.killAndWait()
            #expect(child.process.wasSignaled)
            #expect(child.process.exitStatus == 128 + SIGKILL)

            // 300 puts + the batch (150 puts and an overwrite).
            #expect(reported.writeCount == count + count / 2 + 1)
            #expect(reported.deleted == ["put-000001"])
            #expect(reported.values["put-000002"] == "overwritten-by-batch")
            try verify(reported, at: path)

            // Nothing else is there either.
            let db = try Database.open(path: path)
            defer { db.close() }
            #expect(try db.entries().collect().count == reported.values.count)
        }
    }

    @Test("killed in the middle of a stream of writes, every reported write is there")
    func killDuringWrites() async throws {
        try await withTemporaryPath { path in
            let child = try CrashChild(arguments: [path, "0", "--stream"])
            let deadline = ContinuousClock.now + Self.outputTimeout
            var reported = ReportedWrites()
            let minimum = 2_000
            while reported.writeCount < minimum, let line = try await child.readLine(before: deadline) {
                let recognized = reported.record(line)
                #expect(recognized, "unexpected line from the child: \(line)")
            }
            try #require(reported.writeCount >= minimum, "the child stopped after \(reported.writeCount) writes")
            child.killAndWait()
            #expect(child.process.wasSignaled)
            #expect(child.process.exitStatus == 128 + SIGKILL)

            // Lines already in the pipe were reported before the kill too.
            while let line = try await child.readLine(before: ContinuousClock.now + Self.outputTimeout) {
                // The last line may be cut short by the kill.
                _ = reported.record(line)
            }
            try verify(reported, at: path)
        }
    }
}

import DocModel
import DocProtocol
import DocTestSupport
import Foundation
import LevelDB
import Logging
import Testing
@testable import DocServer

/// Backups of the embedded store (LevelDBBackup, AdminSocketServer) and restores
/// (LevelDBRestore): every key comes back, damaged files and used directories are refused
/// with nothing changed, and resume tokens after a restore resume or reset, never resume
/// over lost commits.
@Suite struct BackupTests {
    /// Every key and value of a LevelDB directory (the store closed).
    func entries(_ directory: String) throws -> [[UInt8]: [UInt8]] {
        let database = try Database.open(path: directory, options: Options(createIfMissing: false))
        defer { database.close() }
        var all: [[UInt8]: [UInt8]] = [:]
        for entry in try database.entries().collect() { all[entry.key] = entry.value }
        return all
    }

    /// Three tenants with documents, tombstones, hard deletes, index rows, rejected and
    /// committed outcomes.
    func populate(_ server: TestServer) async throws {
        for tenant in ["acme", "beta", "a"] {
            let c = try await server.connect(tenant: tenant, client: "w-\(tenant)")
            for i in 0..<20 {
                await server.write(c, batch: i, [T.set("rooms/r\(i)", ["n": .integer(Int64(i)), "tags": ["x", .string(tenant)]])])
            }
            await server.write(c, batch: 20, [.tombstone(T.key("rooms/r3"))])
            await server.write(c, batch: 21, [.delete(T.key("rooms/r4"))])
            await server.write(c, batch: 22, [.update(T.key("rooms/missing"), fields: [T.field("n"): 1])])   // rejected: notFound
            await server.write(c, batch: 23, [T.increment("counters/c"), T.set("rooms/r5/sub/s", ["deep": true])])
        }
    }

    /// A restored directory holds exactly the backed-up keys; only the tenant states differ,
    /// by a new incarnation that remembers the old one up to the backup's version.
    func expectRestored(_ restored: [[UInt8]: [UInt8]], equal original: [[UInt8]: [UInt8]], tenants: [String]) throws {
        #expect(Set(restored.keys) == Set(original.keys))
        let stateKeys = Set(try tenants.map { TenantKeys(try TenantID($0)).state })
        for (key, value) in original where !stateKeys.contains(key) {
            #expect(restored[key] == value)
        }
        for key in stateKeys {
            let before = try TenantState(record: try #require(original[key]))
            let after = try TenantState(record: try #require(restored[key]))
            #expect(after.lastVersion == before.lastVersion && after.changeLogFloor == before.changeLogFloor)
            #expect(after.incarnation != before.incarnation)
            #expect(after.previousIncarnation == .init(incarnation: before.incarnation, validThrough: before.lastVersion))
        }
    }

    @Test func aStoppedStoreIsBackedUpAndRestoredKeyForKey() async throws {
        let server = TestServer()
        try await populate(server)
        server.store.database.close()
        let original = try entries(server.directory.path)
        let work = TempDirectory()
        defer { work.remove() }

        let backup = try LevelDBBackup.backup(dataDirectory: server.directory.path, to: work.path + "/store.backup")
        #expect(backup.source == .stoppedStore)
        #expect(backup.summary.records == original.count)
        #expect(backup.summary.header.layoutVersion == LevelDBServerStore.formatVersion)
        #expect(backup.summary.header.tenants.map(\.tenant.rawValue) == ["a", "acme", "beta"])
        #expect(!FileManager.default.fileExists(atPath: work.path + "/store.backup.partial"))

        let restored = try LevelDBRestore.restore(file: work.path + "/store.backup", into: work.path + "/restored")
        #expect(restored.tenants.map(\.tenant.rawValue) == ["a", "acme", "beta"])
        try expectRestored(try entries(work.path + "/restored"), equal: original, tenants: ["a", "acme", "beta"])
        // Nothing else is left beside it (the temporary directory was renamed).
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: work.path)) == ["store.backup", "restored"])

        // An existing empty directory is a fine target too; the restored store opens and reads.
        try FileManager.default.createDirectory(atPath: work.path + "/empty", withIntermediateDirectories: false)
        _ = try LevelDBRestore.restore(file: work.path + "/store.backup", into: work.path + "/empty")
        let reopened = try LevelDBServerStore.open(directory: work.path + "/empty", options: .init(syncWrites: false))
        let acme = try reopened.tenantStore(TenantID("acme"))
        let read = try await acme.documents([T.key("rooms/r1"), T.key("rooms/r3"), T.key("rooms/r4"), T.key("counters/c")])
        #expect(read.documents[T.key("rooms/r1")]?.data["n"] == 1)
        #expect(read.documents[T.key("rooms/r3")]?.isTombstone == true)
        #expect(read.documents[T.key("rooms/r4")] == nil)
        #expect(read.documents[T.key("counters/c")]?.data["n"] == 1)
        #expect(try await acme.query(T.collection("rooms", limit: nil, orderBy: "n", descending: true), limit: 2).documents
                    .map(\.key.documentID) == ["r19", "r18"])
        await reopened.close()
    }

    @Test func damagedFilesAreRefusedAndNothingIsCreated() async throws {
        let server = TestServer()
        try await populate(server)
        server.store.database.close()
        let work = TempDirectory()
        defer { work.remove() }
        _ = try LevelDBBackup.backup(dataDirectory: server.directory.path, to: work.path + "/good.backup")
        let good = try Array(Data(contentsOf: URL(fileURLWithPath: work.path + "/good.backup")))

        func refused(_ bytes: [UInt8], _ name: String, code: DocError.Code, saying fragment: String,
                     sourceLocation: SourceLocation = #_sourceLocation) throws {
            let file = work.path + "/" + name
            try Data(bytes).write(to: URL(fileURLWithPath: file))
            let target = work.path + "/target-" + name
            do {
                _ = try LevelDBRestore.restore(file: file, into: target)
                Issue.record("\(name) was restored", sourceLocation: sourceLocation)
            } catch {
                #expect(error.code == code, "\(name): \(error)", sourceLocation: sourceLocation)
                #expect(error.message.contains(fragment), "\(name): \(error.message)", sourceLocation: sourceLocation)
                #expect(error.message.contains(file), "\(name): \(error.message)", sourceLocation: sourceLocation)
            }
            #expect(!FileManager.default.fileExists(atPath: target), "\(name)", sourceLocation: sourceLocation)
            // No temporary directory is left beside the target.
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: work.path).filter { $0.contains("restoring") }
            #expect(leftovers.isEmpty, "\(name): \(leftovers)", sourceLocation: sourceLocation)
        }

        try refused(Array(good.prefix(good.count - 1)), "short-digest", code: .dataLoss, saying: "truncated")
        try refused(Array(good.prefix(good.count - 33)), "no-trailer", code: .dataLoss, saying: "truncated")
        try refused(Array(good.prefix(good.count / 2)), "half", code: .dataLoss, saying: "truncated")
        try refused(Array(good.prefix(20)), "in-header", code: .dataLoss, saying: "truncated")
        try refused([], "empty", code: .invalidArgument, saying: "not a doccache backup")
        try refused(Array("rooms,n\n1,2\n".utf8), "csv", code: .invalidArgument, saying: "not a doccache backup")
        try refused(good + [0], "extra-byte", code: .dataLoss, saying: "follow its trailer")
        // A byte of the first record's key flipped (a well-formed file with other data): only
        // the checksum can tell. The first record follows magic, format, header length, header.
        let headerLength = Int(good[12..<16].reduce(0) { $0 << 8 | UInt32($1) })
        var flipped = good
        flipped[16 + headerLength + 1 + 4 + 2] ^= 0x01
        try refused(flipped, "flipped", code: .dataLoss, saying: "checksum")
        var newer = good
        newer[11] = 9   // format version 9
        try refused(newer, "newer-format", code: .failedPrecondition, saying: "format 9")
        // A backup the server could not finish: its error record is reported.
        var failed = BackupEncoder(header: BackupHeader(layoutVersion: "2", createdAt: Timestamp(microseconds: 1), tenants: []))
        failed.append(key: [1, 2], value: [3])
        failed.fail("the store is closed")
        try refused(failed.take(), "server-failed", code: .dataLoss, saying: "the server failed while writing it: the store is closed")
        // A well-formed backup of a store layout this server does not read.
        var future = BackupEncoder(header: BackupHeader(layoutVersion: "7", createdAt: Timestamp(microseconds: 1), tenants: []))
        future.finish()
        try refused(future.take(), "layout-7", code: .failedPrecondition, saying: "store layout 7")

        let missing = #expect(throws: DocError.self) { try LevelDBRestore.restore(file: work.path + "/nothing", into: work.path + "/t") }
        #expect(missing?.code == .notFound && missing?.message.contains("no backup file") == true)
    }

    @Test func aTargetThatIsNotEmptyIsRefused() async throws {
        let server = TestServer()
        try await populate(server)
        server.store.database.close()
        let work = TempDirectory()
        defer { work.remove() }
        _ = try LevelDBBackup.backup(dataDirectory: server.directory.path, to: work.path + "/b.backup")
        let used = work.path + "/used"
        try FileManager.default.createDirectory(atPath: used, withIntermediateDirectories: false)
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: used + "/notes.txt"))
        let error = #expect(throws: DocError.self) { try LevelDBRestore.restore(file: work.path + "/b.backup", into: used) }
        #expect(error?.code == .failedPrecondition)
        #expect(error?.message.contains("\(used) is not empty") == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: used) == ["notes.txt"])
        #expect(try String(contentsOfFile: used + "/notes.txt", encoding: .utf8) == "keep me")
        let onFile = #expect(throws: DocError.self) { try LevelDBRestore.restore(file: work.path + "/b.backup", into: used + "/notes.txt") }
        #expect(onFile?.code == .failedPrecondition)

        // Backing up: a store that is not there, an --out that is a directory.
        #expect(throws: DocError.self) { try LevelDBBackup.backup(dataDirectory: work.path + "/none", to: work.path + "/x") }
        let noStore = #expect(throws: DocError.self) { try LevelDBBackup.backup(dataDirectory: used, to: work.path + "/x") }
        #expect(noStore?.code == .notFound && noStore?.message.contains("no store at") == true)
        let onDirectory = #expect(throws: DocError.self) { try LevelDBBackup.backup(dataDirectory: server.directory.path, to: used) }
        #expect(onDirectory?.code == .invalidArgument)
        #expect(!FileManager.default.fileExists(atPath: work.path + "/x") && !FileManager.default.fileExists(atPath: work.path + "/x.partial"))
    }

    @Test func aHeldStoreWithoutItsAdminSocketIsNamed() async throws {
        let server = TestServer()
        let work = TempDirectory()
        defer { work.remove() }
        // The store is open here (its LevelDB lock held) and nothing serves its admin socket.
        let error = #expect(throws: DocError.self) {
            try LevelDBBackup.backup(dataDirectory: server.directory.path, to: work.path + "/b.backup")
        }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("in use by another process") == true)
        #expect(error?.message.contains("admin socket") == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: work.path).isEmpty)
    }

    @Test func stateRecordsWithAndWithoutAPreviousIncarnation() throws {
        let plain = TenantState(lastVersion: SnapshotVersion(microseconds: 9), incarnation: 3, changeLogFloor: SnapshotVersion(microseconds: 2))
        #expect(try TenantState(record: plain.record) == plain)
        var restored = plain
        restored.incarnation = .max
        restored.previousIncarnation = .init(incarnation: 3, validThrough: SnapshotVersion(microseconds: 9))
        #expect(try TenantState(record: restored.record) == restored)
        // A record written before restores existed (no `pi`/`pv`) reads as never restored.
        let old = Value.map(["v": 9, "i": 3, "f": 2]).binaryEncoded()
        #expect(try TenantState(record: old) == plain)
        #expect(throws: DocError.self) { try TenantState(record: Value.map(["v": 9, "i": 3, "f": 2, "pi": 3]).binaryEncoded()) }

        #expect(restored.resumes(incarnation: .max, version: SnapshotVersion(microseconds: 1_000)))
        #expect(restored.resumes(incarnation: 3, version: SnapshotVersion(microseconds: 9)))
        #expect(!restored.resumes(incarnation: 3, version: SnapshotVersion(microseconds: 10)))
        #expect(!restored.resumes(incarnation: 4, version: SnapshotVersion(microseconds: 1)))
        #expect(!plain.resumes(incarnation: 4, version: SnapshotVersion(microseconds: 1)))
    }

    /// The backup is taken through the admin socket of a store in use; after the restore, a
    /// token from before the backup resumes, one from after it resets (even once new commits
    /// carry the store past its version), and a batch committed after the backup is applied
    /// again when re-sent while one before it stays a duplicate.
    @Test func onlineBackupThenTokensResumeOrReset() async throws {
        let server = TestServer()
        let work = TempDirectory()
        defer { work.remove() }
        let admin = AdminSocketServer(store: server.store, path: AdminSocketServer.path(dataDirectory: server.directory.path),
                                      logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let ready = AsyncStream<Void>.makeStream()
        let serving = Task { await admin.run { ready.continuation.yield() } }
        // Stopped gracefully once the backup is taken (below); cancelled only when the test throws first.
        defer { serving.cancel() }
        var readiness = ready.stream.makeAsyncIterator()
        await readiness.next()

        let w = try await server.connect(client: "w")
        for i in 0..<6 { await server.write(w, batch: i, [T.set("items/i\(i)", ["n": .integer(Int64(i))])]) }
        let target = T.collection("items", limit: 100)
        let early = try await server.connect(client: "early")
        var before = ClientMirror()
        before.apply(await server.core.watch(.init(targetID: 2, target: target), on: early))
        _ = early.outbound.drain()
        let tokenBefore = try #require(before.tokens[2] ?? nil)
        server.clock.advance(by: 1_000)
        await server.write(w, batch: 6, [.setMerge(T.key("items/i1"), T.data(["edited": true]))])
        await server.write(w, batch: 7, [.delete(T.key("items/i2"))])

        // The call blocks until the admin socket has sent the backup: on a thread of its own,
        // as the socket's handler needs the cooperative pool (two threads on these machines),
        // which every other test in the process shares (as in ShutdownLogTests).
        let (directory, file) = (server.directory.path, work.path + "/online.backup")
        let backup = try await onOwnThread { try LevelDBBackup.backup(dataDirectory: directory, to: file) }
        #expect(backup.source == .runningServer(socket: admin.path))
        let backupVersion = try #require(backup.summary.header.tenants.first { $0.tenant.rawValue == "acme" }).lastVersion
        #expect(backupVersion == (try await server.tenantStore("acme").state().lastVersion))

        // Lost by the restore: two commits after the backup, seen by a listener.
        server.clock.advance(by: 1_000)
        await server.write(w, batch: 8, [T.set("items/lost", ["n": 99])])
        await server.write(w, batch: 9, [.setMerge(T.key("items/i0"), T.data(["lost": true]))])
        let late = try await server.connect(client: "late")
        var after = ClientMirror()
        after.apply(await server.core.watch(.init(targetID: 2, target: target), on: late))
        let tokenAfter = try #require(after.tokens[2] ?? nil)
        let afterVersion = try #require(WatchToken(bytes: tokenAfter)).version
        #expect(afterVersion > backupVersion)
        #expect(after.keys(2).contains("items/lost"))
        await admin.shutdown()
        await serving.value

        let restoredPath = work.path + "/restored"
        _ = try LevelDBRestore.restore(file: work.path + "/online.backup", into: restoredPath)
        // The restored server runs later: its commits' versions pass the lost token's.
        let clock = ManualClock(server.clock.micros + 60_000_000)
        let store = try LevelDBServerStore.open(directory: restoredPath, options: .init(syncWrites: false, clock: clock.serverClock))
        var configuration = ServerConfiguration()
        configuration.clock = clock.serverClock
        let core = DocServerCore(store: store, configuration: configuration, logger: .discarding)
        let writer = try await core.handshake(tenant: "acme", uid: "u1", clientID: "w")
        _ = writer.outbound.drain()
        // Exactly once across the restore: a batch of before the backup is still a duplicate
        // (same version); one of after it, sent again (its answer lost), is applied again, once,
        // on the restored data. Then the client's next batch.
        let old = await core.write(.init(clientID: "w", batchID: 6, mutations: [.setMerge(T.key("items/i1"), T.data(["edited": true]))]), on: writer)
        #expect(old.writeResult != nil && old.writeResult!.commitVersion <= backupVersion)
        let resent = await core.write(.init(clientID: "w", batchID: 8, mutations: [T.set("items/lost", ["n": 99])]), on: writer)
        let resentVersion = try #require(resent.writeResult?.commitVersion)
        #expect(resentVersion > afterVersion)
        let fresh = await core.write(.init(clientID: "w", batchID: 10, mutations: [T.set("items/new", ["n": 7])]), on: writer)
        let freshVersion = try #require(fresh.writeResult?.commitVersion)
        #expect(freshVersion > resentVersion)
        _ = writer.outbound.drain()

        func truth() async throws -> [String: ObjectValue] {
            let read = try await store.tenantStore(TenantID("acme")).query(target, limit: nil)
            return Dictionary(uniqueKeysWithValues: read.documents.map { ($0.key.description, $0.data) })
        }
        func view(_ mirror: ClientMirror) -> [String: ObjectValue] {
            Dictionary(uniqueKeysWithValues: (mirror.targets[2] ?? [:]).map { ($0.key.description, $0.value.data) })
        }

        // The token from after the backup: reset, then exactly the restored data.
        let lateAgain = try await core.handshake(tenant: "acme", uid: "u1", clientID: "late")
        _ = lateAgain.outbound.drain()
        let reset = await core.watch(.init(targetID: 2, target: target, resumeToken: tokenAfter), on: lateAgain)
        #expect(reset.contains { $0.targetChange?.state == .reset })
        after.apply(reset)
        #expect(view(after) == (try await truth()))
        #expect(after.targets[2]?[T.key("items/i0")]?.data["lost"] == nil)

        // The token from before the backup: resumed (only what changed since), same data.
        let earlyAgain = try await core.handshake(tenant: "acme", uid: "u1", clientID: "early")
        _ = earlyAgain.outbound.drain()
        let resumed = await core.watch(.init(targetID: 2, target: target, resumeToken: tokenBefore), on: earlyAgain)
        #expect(!resumed.contains { $0.targetChange?.state == .reset })
        before.documentsReceived = 0
        before.apply(resumed)
        #expect(before.documentsReceived == 3)   // i1 edited, new, lost (re-sent); i2 deleted
        #expect(view(before) == (try await truth()))
        // Tokens the restored server hands out are of its new incarnation.
        let issuedBytes = try #require(before.tokens[2] ?? nil)
        let issued = try #require(WatchToken(bytes: issuedBytes))
        #expect(issued.incarnation == (try await store.tenantStore(TenantID("acme")).state().incarnation))
        await store.close()
    }
}

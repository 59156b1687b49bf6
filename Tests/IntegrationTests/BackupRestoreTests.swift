import DocModel
import DocProtocol
import DocServer
import DocTestSupport
import Foundation
import Synchronization
import Testing

/// Online backup and restore with real processes: `docctl backup` against a running
/// `docctl serve` taking 1,000 concurrent writes, `docctl restore` into a new directory, and
/// a server started on it.
@Suite("Online backup and restore", .serialized)
struct BackupRestoreTests {
    static let tenants = ["acme", "beta"]
    static let writersPerTenant = 4
    static let writesPerWriter = 125   // 2 × 4 × 125 = 1,000 batches
    static let target = try! DocModel.Query(collection: "items").limit(to: 1_000).toTarget()

    /// The mutations of write `i` of writer `w`: sets, an increment, deletes, tombstones and
    /// two-document batches over 40 documents shared by the tenant's writers.
    static func mutations(writer w: Int, write i: Int) -> [Mutation] {
        let key = try! DocumentKey("items/d\((w * 13 + i * 7) % 40)")
        switch i % 10 {
        case 6: return [.setMerge(key, ObjectValue(), transforms: [.increment(try! FieldPath("n"), by: .integer(1))])]
        case 7: return [.delete(key)]
        case 8: return [.tombstone(key)]
        case 9: return [.set(key, ObjectValue(["n": .integer(Int64(i)), "w": .integer(Int64(w))])),
                        .set(try! DocumentKey("items/pair\(w)"), ObjectValue(["i": .integer(Int64(i))]))]
        default: return [.set(key, ObjectValue(["n": .integer(Int64(i)), "w": .integer(Int64(w))]))]
        }
    }

    /// One client's view of target 2, from watch messages only.
    struct Mirror {
        var documents: [String: ObjectValue] = [:]
        var sawReset = false
        var documentsReceived = 0

        mutating func apply(_ message: ServerMessage) {
            switch message {
            case .targetChange(let c) where c.state == .reset && c.targetIDs.contains(2):
                sawReset = true
                documents = [:]
            case .documentChange(let c):
                if c.targetIDs.contains(2) {
                    documents[c.document.key.description] = c.document.data
                    documentsReceived += 1
                } else if c.removedTargetIDs.contains(2) {
                    documents[c.document.key.description] = nil
                }
            case .documentDelete(let d) where d.removedTargetIDs.contains(2): documents[d.key.description] = nil
            case .documentRemove(let r) where r.removedTargetIDs.contains(2): documents[r.key.description] = nil
            default: break
            }
        }

        /// By document id, as ServerReads answers.
        var byID: [String: [String: Value]] {
            Dictionary(uniqueKeysWithValues: documents.map { (String($0.key.split(separator: "/").last!), $0.value.fields) })
        }
    }

    /// Listens to `items` (resuming from `token` if given) until the target is current;
    /// returns the view and the resume token.
    static func listen(_ url: String, token: String, from resumeToken: [UInt8]? = nil, into mirror: inout Mirror) async throws -> [UInt8] {
        let socket = RawSocket(url: url)
        defer { Task { await socket.close() } }
        guard case .welcome? = await socket.hello(token: token) else { throw DocError(.unavailable, "no welcome from \(url)") }
        socket.send(.addTarget(.init(targetID: 2, target: target, resumeToken: resumeToken)))
        while let message = await socket.next() {
            mirror.apply(message)
            if case .targetChange(let c) = message, c.state == .current, c.targetIDs == [2], let token = c.resumeToken {
                return token
            }
        }
        throw DocError(.unavailable, "the listen on \(url) ended before its target was current")
    }

    /// How many batches were answered, across writers, and whether the backup is done.
    final class Answers: Sendable {
        private let count = Atomic<Int>(0)
        private let backedUp = Atomic<Bool>(false)
        func add() { count.add(1, ordering: .relaxed) }
        var value: Int { count.load(ordering: .relaxed) }
        func backupDone() { backedUp.store(true, ordering: .relaxed) }
        var isBackupDone: Bool { backedUp.load(ordering: .relaxed) }
    }

    /// Each writer's last writes wait for the backup to be done, so that every tenant has
    /// commits after the backup's version however slowly `docctl backup` starts (the writes
    /// before run during the backup).
    static let writesAfterBackup = 15

    /// Sends one writer's batches one after the other, each once answered; counts answers.
    static func write(url: String, token: String, client: String, writer: Int, answered: Answers) async throws {
        let socket = RawSocket(url: url)
        defer { Task { await socket.close() } }
        guard case .welcome? = await socket.hello(token: token, clientID: client) else { throw DocError(.unavailable, "no welcome") }
        for i in 0..<writesPerWriter {
            if i == writesPerWriter - writesAfterBackup {
                guard await eventually(livenessCap, { answered.isBackupDone }) else { throw DocError(.deadlineExceeded, "no backup") }
            }
            socket.send(.write(.init(clientID: client, batchID: i + 1, mutations: mutations(writer: writer, write: i))))
            let answer = await socket.next { message in
                switch message {
                case .writeResult(let r): r.batchID == i + 1
                case .writeError(let e): e.batchID == i + 1
                default: false
                }
            }
            if case .writeError(let e)? = answer, e.error.code.isTransient { throw e.error }
            guard answer != nil else { throw DocError(.unavailable, "\(client): batch \(i + 1) was not answered") }
            answered.add()
        }
    }

    /// Every document of a tenant (tombstones included) as the change log says it was at
    /// `version`: the log's entries up to it, replayed.
    static func documents(asOf version: SnapshotVersion, in store: any TenantStore) async throws -> (documents: [String: Document], logBefore: Int, logAfter: Int) {
        let state = try await store.state()
        guard case .complete(let entries, _) = try await store.changes(after: state.changeLogFloor, maxEntries: 1_000_000) else {
            throw DocError(.internal, "the change log of \(store.tenant) is incomplete")
        }
        var documents: [String: Document] = [:]
        var before = 0
        for entry in entries where entry.version <= version {
            before += 1
            switch entry.document {
            case .document(let document): documents[entry.key.description] = document
            case .noDocument, .unknown: documents[entry.key.description] = nil
            }
        }
        return (documents, before, entries.count - before)
    }

    /// Every stored document of a tenant (tombstones included).
    static func stored(_ store: any TenantStore) async throws -> [String: Document] {
        var all: [String: Document] = [:]
        var after: DocumentKey?
        while true {
            let page = try await store.scan(after: after, limit: 500)
            for document in page { all[document.key.description] = document }
            guard page.count == 500 else { return all }
            after = page.last?.key
        }
    }

    @Test func aBackupTakenDuringConcurrentWritesRestoresTheStateAtItsVersion() async throws {
        let server = try ServerProcess()
        defer { server.kill(); server.removeData() }
        try await server.start()
        let runner = try DocctlRunner(server: server.url, secret: server.secretFile)
        defer { runner.removeHome() }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("doccache-backup-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let backupFile = work + "/store.backup"
        let reader = try await server.token(tenant: "acme", uid: "reader")

        let answered = Answers()
        let started = ContinuousClock.now
        let writers = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for tenant in Self.tenants {
                    let token = try await server.token(tenant: tenant, uid: "writer")
                    for w in 0..<Self.writersPerTenant {
                        group.addTask {
                            try await Self.write(url: server.url, token: token, client: "w-\(tenant)-\(w)", writer: w, answered: answered)
                        }
                    }
                }
                try await group.waitForAll()
            }
        }

        // A listener caught up early: its token is from before the backup.
        #expect(await eventually { answered.value >= 150 })
        var early = Mirror()
        let earlyToken = try await Self.listen(server.url, token: reader, into: &early)

        // The backup, through the real docctl against the running server, while writes go on.
        #expect(await eventually { answered.value >= 300 })
        let answeredAtBackup = answered.value
        let backupStarted = ContinuousClock.now
        let backup = try await runner.run(["backup", "--data", server.dataDirectory, "--out", backupFile, "--json"])
        let backupTook = ContinuousClock.now - backupStarted
        let answeredAfterBackup = answered.value
        answered.backupDone()
        #expect(backup.status == 0, "\(backup)")
        let report = try #require(backup.lines.first.flatMap(JSONObjectLine.init), "\(backup)")
        #expect(report["source"] as? String == "server")
        #expect(backup.stderr.contains("note: attachments are not in the backup"))
        #expect(!FileManager.default.fileExists(atPath: backupFile + ".partial"))

        try await writers.value
        let writesTook = ContinuousClock.now - started
        #expect(answered.value == 1_000)
        // A listener caught up after every write: its token is from after the backup.
        var late = Mirror()
        let lateToken = try await Self.listen(server.url, token: reader, into: &late)
        await server.stop()

        // The backup's versions, from the file itself.
        let summary = try LevelDBBackup.verify(file: backupFile)
        let versions = Dictionary(uniqueKeysWithValues: summary.header.tenants.map { ($0.tenant.rawValue, $0.lastVersion) })
        #expect(Set(versions.keys) == Set(Self.tenants))
        let earlyVersion = try #require(WatchToken(bytes: earlyToken)).version
        let lateVersion = try #require(WatchToken(bytes: lateToken)).version
        let acmeVersion = try #require(versions["acme"])
        #expect(earlyVersion <= acmeVersion && acmeVersion < lateVersion, "\(earlyVersion) \(acmeVersion) \(lateVersion)")

        // Restore into the directory a second server will use.
        let restoredServer = try ServerProcess(sharingSecretWith: server)
        defer { restoredServer.kill(); restoredServer.removeData() }
        let restore = try await runner.run(["restore", backupFile, "--data", restoredServer.dataDirectory])
        #expect(restore.status == 0, "\(restore)")
        #expect(restore.lines.last?.hasPrefix("restored \(backupFile) into \(restoredServer.dataDirectory): 2 tenants") == true, "\(restore)")

        // The restored documents are the original store's state at the backup's version,
        // replayed from the original's change log; the backup was taken while writes went on.
        let original = try LevelDBServerStore.open(directory: server.dataDirectory)
        let restored = try LevelDBServerStore.open(directory: restoredServer.dataDirectory)
        var logBefore = 0, logAfter = 0
        for tenant in Self.tenants {
            let version = try #require(versions[tenant])
            let expected = try await Self.documents(asOf: version, in: try await original.tenant(TenantID(tenant)))
            logBefore += expected.logBefore
            logAfter += expected.logAfter
            let actual = try await Self.stored(try await restored.tenant(TenantID(tenant)))
            #expect(actual.count == expected.documents.count, "\(tenant)")
            #expect(actual == expected.documents, "\(tenant): the restored documents differ from the log's state at \(version)")
            #expect(try await restored.tenant(TenantID(tenant)).state().lastVersion == version)
        }
        #expect(logBefore > 0 && logAfter > 0, "the backup was not taken during the writes: \(logBefore) changes before, \(logAfter) after")
        await original.close()
        await restored.close()

        // The restored server resumes clients: a token from before the backup resumes (or
        // resets) to the restored data; one from after it resets — also once a new commit has
        // carried the tenant past its version.
        try await restoredServer.start()
        let writer = RawSocket(url: restoredServer.url)
        guard case .welcome? = await writer.hello(token: try await restoredServer.token(tenant: "acme", uid: "writer"), clientID: "after") else {
            Issue.record("no welcome from the restored server"); return
        }
        writer.send(.write(.init(clientID: "after", batchID: 1, mutations: [.set(try DocumentKey("items/fresh"), ObjectValue(["n": 1]))])))
        let fresh = await writer.next { if case .writeResult = $0 { true } else { false } }
        guard case .writeResult(let result)? = fresh else { Issue.record("the restored server did not commit"); return }
        #expect(result.commitVersion > lateVersion)
        await writer.close()
        let truth = try await ServerReads.collection("items", url: restoredServer.url, token: reader)

        _ = try await Self.listen(restoredServer.url, token: reader, from: lateToken, into: &late)
        #expect(late.sawReset, "a token from after the backup was resumed")
        #expect(late.byID == truth)
        #expect(late.documents["items/fresh"] != nil)

        early.documentsReceived = 0
        _ = try await Self.listen(restoredServer.url, token: reader, from: earlyToken, into: &early)
        #expect(early.byID == truth)
        if early.sawReset { Issue.record("a token from before the backup was reset instead of resumed") }

        print("""
            backup-restore: 1,000 writes in \(writesTook); docctl backup (process start to exit) in \(backupTook) \
            while \(answeredAfterBackup - answeredAtBackup) writes were answered; \(summary.records) records, \(summary.bytes) bytes; \
            \(logBefore) changes before the backup's versions, \(logAfter) after
            """)
    }
}

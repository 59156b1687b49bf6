import DocCache
import DocModel
import DocProtocol
import DocServer
import DocTestSupport
import Foundation
import Synchronization
import Testing

/// Issue 18's KYC flow with real processes: a field device (`doccache-crash-child`, attachments
/// mode) is offline — its server URL points at a port nobody listens on — adds three photos of a
/// few MiB, saves the form that refers to them, and is SIGKILLed once the form is reported
/// accepted. The test reopens that store directory with the real server reachable and watches
/// the server while it syncs: the three photos are stored before the form, the server never
/// holds the form while a photo is missing, the form is committed exactly once, and another
/// device reading the form downloads the three photos byte for byte.
@Suite("Attachments: offline KYC form across a SIGKILL", .serialized, .timeLimit(.minutes(4)))
struct AttachmentCrashTests {
    struct Report {
        /// `attachment <index> <id> <size> <state>` lines, in order.
        var attachments: [(id: String, size: Int64, state: String)] = []
        /// `accepted <batchID> <path>` lines.
        var accepted: [(batch: Int, path: String)] = []
        var pending: [String] = []
        var ready = false
    }

    static func parse(_ lines: [String]) -> Report {
        var report = Report()
        for line in lines {
            let parts = line.split(separator: " ", maxSplits: 2).map(String.init)
            if parts.first == "attachment" {
                let fields = line.split(separator: " ").map(String.init)
                if fields.count == 5, let size = Int64(fields[3]) { report.attachments.append((fields[2], size, fields[4])) }
            }
            if parts.count == 3, parts[0] == "accepted", let batch = Int(parts[1]) { report.accepted.append((batch, parts[2])) }
            if parts.first == "pending" { report.pending.append(line) }
            if line == "ready" { report.ready = true }
        }
        return report
    }

    /// One poll of the server during the sync: whether it had the form (read first), then
    /// which photos were complete in its blob store (read after). Photos only ever become
    /// complete, so a poll that saw the form and then found a photo missing proves the server
    /// held the form while that photo was missing.
    struct Poll: Sendable {
        var formVersion: SnapshotVersion?
        var completePhotos: Int
    }

    @Test func anOfflineFormWithThreePhotosKilledAfterSavingSyncsPhotosFirstAndExactlyOnce() async throws {
        let started = ContinuousClock.now
        let server = try await LiveServer(rules: try LiveServer.defaultRules())
        defer { server.removeData() }
        let blobRoot = server.dataDirectory + "/attachments"
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("doccache-attach-crash-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let directory = root + "/field-phone"

        // Three "photos" of random bytes (one over the client's 4 MiB upload chunk: two PUTs).
        let photos = [randomPhoto(seed: 0xF0_7001, bytes: 3_100_000), randomPhoto(seed: 0xF0_7002, bytes: 4_700_000),
                      randomPhoto(seed: 0xF0_7003, bytes: 2_300_000)]
        let expectedIDs = photos.map { sha256Hex($0) }
        var files: [String] = []
        for (i, bytes) in photos.enumerated() {
            let path = root + "/photo-\(i).jpg"
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            files.append(path)
        }

        // 1. The field device, offline: its server is a port nobody listens on.
        let unreachable = try LoopbackPortReservation()
        defer { unreachable.release() }
        let nowhere = "http://127.0.0.1:\(unreachable.port)"
        let child = try ChildProcess(executable: try ServerProcess.executable("doccache-crash-child"),
                                     arguments: [directory, "--attachments-form", "--server", nowhere, "--token", "offline"] + files,
                                     keepStandardInputOpen: true)
        defer { child.kill() }
        var report = Report()
        let reachedReady = await eventually {
            report = Self.parse(child.lines)
            return report.ready || !child.isRunning
        }
        child.kill()
        report = Self.parse(child.lines)
        #expect(reachedReady && report.ready, "the child never reported ready: \(child.lines); stderr: \(child.standardError)")
        #expect(child.wasKilled, "the child ended by itself: \(child.standardError)")
        try #require(report.attachments.count == 3, "attachments reported: \(child.lines); stderr: \(child.standardError)")
        #expect(report.attachments.map(\.id) == expectedIDs, "each id is the SHA-256 of the photo's bytes")
        #expect(report.attachments.map(\.size) == photos.map { Int64($0.count) })
        #expect(report.attachments.map(\.state) == ["local_only", "local_only", "local_only"], "offline, nothing was uploaded")
        try #require(report.accepted.map(\.path) == ["kyc/f1", "notes/after-form"], "accepted: \(report.accepted)")
        let formBatch = report.accepted[0].batch
        print("attachment-crash: child killed after \(child.lines.count) lines: \(report.pending)")
        let ids = try expectedIDs.map { try AttachmentID($0) }

        // The originals are gone (the store copied them): only the killed store has the photos.
        for file in files { try FileManager.default.removeItem(atPath: file) }

        // 2. What survived the SIGKILL, opened offline: three local attachments, and the form
        // first in the queue, held back by a photo; the later note waits behind it.
        let survived = try await DocumentStore.open(directory: directory, tenant: "acme", user: "child")
        let kept = await survived.attachments.all()
        #expect(Set(kept.map(\.id)) == Set(ids), "\(kept)")
        #expect(kept.allSatisfy { $0.state == .localOnly }, "\(kept)")
        let queued = try await survived.pendingWrites()
        #expect(queued.map(\.batchID) == report.accepted.map(\.batch), "the queue after the kill: \(queued)")
        if case .waiting(.attachmentNotUploaded(let blocking))? = queued.first?.state {
            #expect(ids.contains(blocking))
        } else {
            Issue.record("the form should wait for a photo: \(queued)")
        }
        #expect(queued.last?.state == .waiting(.earlierBatch(formBatch)), "queue order is kept: \(queued)")
        await survived.close()
        #expect(try await BlobStoreSnapshot.read(root: blobRoot, tenant: "acme").listing.isEmpty, "the server has nothing yet")

        // 3. Reopened with the server reachable, while the server is watched two ways: a listener
        // on the form over its own WebSocket connection checks the blob store the moment the
        // server announces the form, and a poller reads the form (first) and then the blob store
        // (after), over and over.
        let token = try await server.token(uid: "child")
        let watch = RawSocket(url: server.url)
        guard case .welcome? = await watch.hello(token: token) else { throw DocError(.unavailable, "the watcher got no welcome") }
        watch.send(.addTarget(.init(targetID: 2, target: try DocModel.Query(document: DocumentKey("kyc/f1")).toTarget())))
        let announced = Task { () -> (version: SnapshotVersion, completePhotos: Int)? in
            while let message = await watch.next() {
                guard case .documentChange(let change) = message, change.document.key.description == "kyc/f1" else { continue }
                var complete = 0
                for id in ids where (try? await BlobStoreSnapshot.isComplete(id, root: blobRoot, tenant: "acme")) == true { complete += 1 }
                return (change.document.version, complete)
            }
            return nil
        }
        let polls = Mutex<[Poll]>([])
        let stopPolling = Flag()
        let poller = Task {
            while !stopPolling.isSet {
                do {
                    let form = try await ServerDocument.read("kyc/f1", url: server.url, token: token)
                    var complete = 0
                    for id in ids where try await BlobStoreSnapshot.isComplete(id, root: blobRoot, tenant: "acme") { complete += 1 }
                    polls.withLock { $0.append(Poll(formVersion: form?.version, completePhotos: complete)) }
                } catch {
                    Issue.record("polling the server failed: \(error)")
                    return
                }
                try? await Task.sleep(for: .milliseconds(15))   // a polling interval, not a synchronization
            }
        }
        let endpoint = try ServerEndpoint(url: server.url) { token }
        let store = try await DocumentStore.open(directory: directory, tenant: "acme", user: "child", server: endpoint)
        let drained = await eventually { await store.pendingWriteCount == 0 }
        let left = try await store.pendingWrites()
        let lastError = await store.lastSyncError
        let states = await store.attachments.all().map(\.state)
        #expect(drained, "still queued: \(left); last sync error: \(String(describing: lastError)); attachments: \(states)")
        #expect(await store.attachments.all().map(\.state) == [.uploaded, .uploaded, .uploaded])
        #expect(try await store.failedWrites().isEmpty, "nothing was rejected")
        // The form is on the server now: let the poller see it at least once, then stop it.
        let pollerSawForm = await eventually { polls.withLock { $0.contains { $0.formVersion != nil } } }
        stopPolling.set()
        await poller.value

        // The server never held the form while a photo was missing.
        let samples = polls.withLock { $0 }
        let violations = samples.filter { $0.formVersion != nil && $0.completePhotos < 3 }
        let photosWithoutForm = samples.filter { $0.formVersion == nil && $0.completePhotos > 0 }.count
        print("attachment-crash: synced \(ContinuousClock.now - started) after the test began; \(samples.count) polls of the server; \(photosWithoutForm) saw photos stored and no form yet; \(samples.filter { $0.formVersion != nil }.count) saw the form")
        #expect(pollerSawForm, "the poller never saw the form on the server")
        #expect(violations.isEmpty, "the server held the form with only \(violations.map(\.completePhotos)) photos complete")
        let firstAnnouncement = await announced.value
        await watch.close()
        #expect(firstAnnouncement?.completePhotos == 3,
                "when the server announced the form, \(String(describing: firstAnnouncement?.completePhotos)) photos were complete")

        // The form arrived after the three uploads: its commit version (microseconds of the
        // server's clock) is later than each photo's completion, and it is committed exactly once.
        let blobs = try await BlobStoreSnapshot.read(root: blobRoot, tenant: "acme")
        let formOnServer = try await ServerDocument.read("kyc/f1", url: server.url, token: token)
        let form = try #require(formOnServer, "the server has no form")
        for id in ids {
            let stored = try #require(blobs.complete[id], "photo \(id) is not complete on the server: \(blobs)")
            #expect(stored.metadata.createdAt.microseconds < form.createTime.microseconds,
                    "photo \(id) completed at \(stored.metadata.createdAt), the form was committed at \(form.createTime)")
            #expect(stored.storedSHA256 == id.hex && stored.metadata.sha256 == id.hex, "the stored bytes hash to the id")
            #expect(stored.metadata.contentType == "image/jpeg")
        }
        #expect(Set(blobs.complete.keys) == Set(ids) && blobs.listing.count == 3, "one complete entry per photo: \(blobs)")
        #expect(blobs.partialFiles.isEmpty && blobs.strayFiles.isEmpty, "no leftovers: \(blobs)")
        #expect(form.createTime == form.version, "the form was written once, never changed: created \(form.createTime), version \(form.version)")
        for (i, id) in ids.enumerated() { #expect(form.data.fields["photo\(i)"] == .attachment(id)) }
        #expect(form.data.fields["photoCount"] == .integer(3))
        let counter = try await ServerReads.document("counters/kyc", url: server.url, token: token)
        #expect(counter?["forms"] == .integer(1), "the form's batch applied exactly once: \(String(describing: counter))")
        let note = try await ServerDocument.read("notes/after-form", url: server.url, token: token)
        #expect(note.map { $0.version > form.version } == true, "the later write arrived after the form: \(String(describing: note)) vs \(form)")
        await store.close()

        // 4. Another device reads the form and downloads the three photos, which match.
        let officeToken = try await server.token(uid: "office")
        let office = try await DocumentStore.open(directory: root + "/office", tenant: "acme", user: "office",
                                                  server: try ServerEndpoint(url: server.url) { officeToken })
        let snapshot = try await office.document("kyc/f1").getDocument(source: .server)
        for (i, expected) in photos.enumerated() {
            guard case .attachment(let id)? = snapshot.get("photo\(i)") else {
                Issue.record("photo\(i) is not an attachment reference: \(String(describing: snapshot.get("photo\(i)")))")
                continue
            }
            let downloaded = try await office.attachments.bytes(id)
            #expect(sha256Hex(downloaded) == expectedIDs[i] && downloaded == expected, "photo\(i) as downloaded by another device")
        }
        await office.close()
        await server.stop()
    }
}

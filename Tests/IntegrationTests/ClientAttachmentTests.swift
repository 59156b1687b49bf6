import Crypto
import DocCache
import DocModel
import DocServer
import DocTestSupport
import Foundation
import Testing

/// Attachments from a DocCache client to the real server on 127.0.0.1 (HTTP uploads and
/// downloads, WebSocket writes): uploaded before the writes that refer to them, downloaded by
/// another device, kept across a reopen.
@Suite("Client attachments", .serialized, .timeLimit(.minutes(3)))
struct ClientAttachmentTests {
    static func photo(_ seed: UInt8, bytes: Int) -> [UInt8] {
        var generator = SplitMix64(seed: UInt64(seed))
        return (0..<bytes).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
    }

    @Test func aFormWithThreePhotosReachesTheServerAfterItsPhotosAndAnotherDeviceDownloadsThem() async throws {
        let server = try await LiveServer(rules: try LiveServer.defaultRules())
        let devices = ClientSyncTests.Devices(server)
        defer { server.removeData() }
        let field = try await devices.open("alice", device: "field-phone")
        try await field.disableNetwork()

        // Offline: three photos (one over the 4 MiB chunk) and the form that refers to them.
        let photos = [Self.photo(1, bytes: 1_500_000), Self.photo(2, bytes: 5_000_000), Self.photo(3, bytes: 700_000)]
        let files = try photos.enumerated().map { i, bytes in
            let path = devices.root + "-photo-\(i).jpg"
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            return path
        }
        defer { for file in files { try? FileManager.default.removeItem(atPath: file) } }
        var ids: [AttachmentID] = []
        for file in files {
            let attachment = try await field.attachments.add(file: file, contentType: "image/jpeg")
            #expect(attachment.state == .localOnly)
            ids.append(attachment.id)
        }
        for (id, bytes) in zip(ids, photos) {
            #expect(id.hex == SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined(), "the id is the content's SHA-256")
        }
        let form = try await field.document("kyc/f1").setData([
            "name": "Ada", "idFront": .attachment(ids[0]), "idBack": .attachment(ids[1]), "selfie": .attachment(ids[2]),
        ])
        let later = try await field.document("notes/n1").setData(["text": "written after the form"])
        let queued = try await field.pendingWrites()
        guard case .waiting(.attachmentNotUploaded(let blocking))? = queued.first?.state else {
            Issue.record("the form should wait for a photo: \(queued)")
            return
        }
        #expect(ids.contains(blocking), "\(queued)")
        #expect(queued.last?.state == .waiting(.earlierBatch(form.batchID)), "queue order is kept: \(queued)")

        // Online: the photos go up, then the form; the server never holds the form without them.
        let office = try await devices.open("bob", device: "office")
        let seen = Recorder<DocumentSnapshot>()
        let listener = try await office.document("kyc/f1").addSnapshotListener { seen.record($0) }
        try await field.enableNetwork()
        _ = try await form.committed
        _ = try await later.committed
        #expect(await eventually { seen.last?.exists == true })
        for id in ids {
            let attachment = await field.attachments.attachment(id)
            #expect(attachment?.state == .uploaded, "\(String(describing: attachment))")
        }
        listener.remove()

        // The office reads the form and downloads the three photos, which match.
        let snapshot = try await office.document("kyc/f1").getDocument(source: .server)
        for (field, expected) in zip(["idFront", "idBack", "selfie"], photos) {
            guard case .attachment(let id)? = snapshot.get(field) else {
                Issue.record("\(field) is not an attachment reference: \(String(describing: snapshot.get(field)))")
                continue
            }
            let path = try await office.attachments.file(id)
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(expected))
        }

        // Downloaded copies are served offline, and the uploads' states survive a reopen.
        try await office.disableNetwork()
        #expect(try await office.attachments.bytes(ids[2]) == photos[2])
        await field.close()
        let reopened = try await devices.open("alice", device: "field-phone")
        #expect(await reopened.attachments.all().map(\.state) == [.uploaded, .uploaded, .uploaded])
        await devices.close()
        await server.stop()
    }

    /// Alice's store on her device `phone`, its attachment cache limited to 1 MiB.
    static func phoneWithASmallCache(_ devices: ClientSyncTests.Devices) async throws -> DocumentStore {
        try await devices.open("alice", device: "phone", settings: StoreSettings(attachmentCacheSizeBytes: 1 << 20))
    }

    /// The attachment cache's size limit: files the server holds go least recently used first
    /// once the total is over the limit; files not uploaded never go; a deleted one is
    /// downloaded again when read.
    @Test func theAttachmentCacheKeepsToItsSizeAndNeverDropsWhatIsNotUploaded() async throws {
        let server = try await LiveServer(rules: try LiveServer.defaultRules())
        defer { server.removeData() }
        let devices = ClientSyncTests.Devices(server)
        let store = try await Self.phoneWithASmallCache(devices)
        try await store.disableNetwork()
        let photos = (1...3).map { Self.photo(UInt8(10 + $0), bytes: 400_000) }
        var ids: [AttachmentID] = []
        for photo in photos { ids.append(try await store.attachments.add(bytes: photo, contentType: "image/jpeg").id) }
        // 1.2 MB over a 1 MiB limit, but none is on the server: all stay.
        #expect(await store.attachments.all().map(\.id) == ids)

        // Uploaded oldest first; once the first is up it is the only one the cache may drop,
        // and dropping it brings the files under the limit.
        try await store.enableNetwork()
        #expect(await eventually { await store.attachments.all().map(\.state) == [.uploaded, .uploaded] })
        #expect(await store.attachments.all().map(\.id) == [ids[1], ids[2]])
        let directory = devices.root + "/phone/acme/alice/attachments"
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: directory)) == [ids[1].hex, ids[2].hex])

        // Read again: downloaded and verified; the least recently used of the others makes room.
        #expect(try await store.attachments.bytes(ids[0]) == photos[0])
        #expect(await store.attachments.attachment(ids[0])?.state == .uploaded)
        #expect(await store.attachments.attachment(ids[1]) == nil)
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: directory)) == [ids[0].hex, ids[2].hex])
        await devices.close()
        await server.stop()
    }

    /// Refuses uploads of one content type (the others: tenant isolation only).
    struct RefusingPolicy: AttachmentAccessPolicy {
        static let refusedType = "application/x-refused"
        func decide(_ operation: AttachmentOperation, tenant: TenantID, auth: AuthContext,
                    object: AttachmentObject) async -> AttachmentAccessDecision {
            object.contentType == Self.refusedType ? .denied(DocError(.permissionDenied, "refused (test)")) : .allowed
        }
    }

    /// An uploaded attachment that a queued write refers to stays in the cache over its limit:
    /// the server deletes an attachment no document refers to after its grace period, so a
    /// write that waits (here behind one whose attachment the server refused) may find it gone,
    /// and this device's file is then the only copy. Attachments no write refers to go instead.
    @Test func theCacheKeepsAnUploadedAttachmentAQueuedWriteRefersTo() async throws {
        let server = try await LiveServer(rules: try LiveServer.defaultRules(), attachmentPolicy: RefusingPolicy())
        defer { server.removeData() }
        let devices = ClientSyncTests.Devices(server)
        let store = try await Self.phoneWithASmallCache(devices)
        // A write the queue cannot send: its attachment is refused for good.
        let refused = try await store.attachments.add(bytes: Self.photo(30, bytes: 100_000), contentType: RefusingPolicy.refusedType).id
        _ = try await store.document("notes/blocked").setData(["file": .attachment(refused)])
        #expect(await eventually { if case .failed? = await store.attachments.attachment(refused)?.state { true } else { false } })
        // A photo and its write, queued behind it: the photo is uploaded, the write waits.
        let kept = try await store.attachments.add(bytes: Self.photo(31, bytes: 400_000), contentType: "image/jpeg").id
        _ = try await store.document("notes/photo").setData(["photo": .attachment(kept)])
        #expect(await eventually { await store.attachments.attachment(kept)?.state == .uploaded })
        // Two more photos, no write: over the 1 MiB limit once they are up.
        var others: [AttachmentID] = []
        for seed in [32, 33] as [UInt8] {
            others.append(try await store.attachments.add(bytes: Self.photo(seed, bytes: 400_000), contentType: "image/jpeg").id)
        }
        let trimmed = await eventually {
            let all = await store.attachments.all()
            return all.allSatisfy { $0.state != .localOnly } && all.count < 4
        }
        let states = await store.attachments.all().map(\.state)
        #expect(trimmed, "\(states)")
        // The least recently used is the kept photo; it stays, and one of the others went.
        let left = await store.attachments.all().map(\.id)
        #expect(left.contains(kept) && left.contains(refused), "\(left)")
        #expect(!Set(others).isSubset(of: Set(left)), "\(left)")
        #expect(try await store.attachments.bytes(kept) == Self.photo(31, bytes: 400_000))
        #expect(try await store.pendingWrites().count == 2)
        await devices.close()
        await server.stop()
    }

    /// A server that collects every unreferenced attachment at once (grace 0).
    static func collectingServer() async throws -> LiveServer {
        try await LiveServer(rules: try LiveServer.defaultRules(), attachmentGraceMicros: 0)
    }

    /// Runs the server's collector until it deleted `count` attachments (its grace is 0, but an
    /// attachment stored in this microsecond is not older than that yet). It collects the
    /// tenants the server serves: `online` writes through it first.
    static func collect(_ count: Int, on server: LiveServer, online: DocumentStore) async throws {
        _ = try await online.document("devices/online").setData(["online": true]).committed
        var deleted = 0
        for _ in 0..<50 where deleted < count {
            try await Task.sleep(for: .milliseconds(2))
            deleted += await server.core.runMaintenance().attachmentsDeleted
        }
        try #require(deleted == count, "the collector deleted \(deleted) attachments")
    }

    /// A photo uploaded, then its write queued while the phone is offline, longer than the
    /// server keeps an attachment no document refers to: the server deletes the photo. When
    /// the phone comes back (reopened, as after days), it asks the server about the photo
    /// before it sends the write, uploads it again, and the write goes through: no failed
    /// write, and another device downloads the photo.
    @Test func aWriteQueuedPastTheServersGracePeriodUploadsItsPhotoAgainFirst() async throws {
        let server = try await Self.collectingServer()
        defer { server.removeData() }
        let devices = ClientSyncTests.Devices(server)
        let settings = StoreSettings(attachmentConfirmationAge: .zero)
        let phone = try await devices.open("alice", device: "phone", settings: settings)
        let bytes = Self.photo(40, bytes: 300_000)
        let id = try await phone.attachments.add(bytes: bytes, contentType: "image/jpeg").id
        #expect(await eventually { await phone.attachments.attachment(id)?.state == .uploaded })
        try await phone.disableNetwork()
        _ = try await phone.document("forms/f1").setData(["photo": .attachment(id)])
        await phone.close()
        let office = try await devices.open("alice", device: "office")
        try await Self.collect(1, on: server, online: office)

        let again = try await devices.open("alice", device: "phone", settings: settings)
        #expect(await eventually { (try? await again.pendingWrites().isEmpty) == true })
        #expect(try await again.failedWrites().isEmpty)
        #expect(await again.attachments.attachment(id)?.state == .uploaded)

        // The server holds the form and the photo again (the collector had deleted it).
        let form = try await office.document("forms/f1").getDocument(source: .server)
        #expect(form.get("photo") == .attachment(id))
        #expect(try await office.attachments.bytes(id) == bytes)
        await devices.close()
        await server.stop()
    }

    /// A photo this phone downloaded, put into a new document while offline, after the only
    /// document that referred to it was deleted and the server collected the photo: the phone
    /// asks the server about it before sending, finds it gone, and uploads its downloaded copy,
    /// so the write succeeds instead of failing.
    @Test func aWriteReusingAPhotoDownloadedLongAgoUploadsItAgainFirst() async throws {
        let server = try await Self.collectingServer()
        defer { server.removeData() }
        let devices = ClientSyncTests.Devices(server)
        let office = try await devices.open("alice", device: "office")
        let bytes = Self.photo(42, bytes: 200_000)
        let id = try await office.attachments.add(bytes: bytes, contentType: "image/jpeg").id
        _ = try await office.document("forms/original").setData(["photo": .attachment(id)]).committed

        let phone = try await devices.open("alice", device: "phone", settings: StoreSettings(attachmentConfirmationAge: .zero))
        #expect(try await phone.attachments.bytes(id) == bytes, "downloaded")
        try await phone.disableNetwork()
        _ = try await phone.document("forms/copy").setData(["photo": .attachment(id)])
        // The original goes; nothing on the server refers to the photo, which is collected.
        _ = try await office.document("forms/original").delete().committed
        try await Self.collect(1, on: server, online: office)

        try await phone.enableNetwork()
        try await phone.waitForPendingWrites()
        #expect(try await phone.failedWrites().isEmpty)
        let copy = try await office.document("forms/copy").getDocument(source: .server)
        #expect(copy.get("photo") == .attachment(id))
        #expect(try await office.attachments.bytes(id) == bytes, "the server holds the photo again")
        await devices.close()
        await server.stop()
    }

    /// The same deletion when the phone did not expect it (its photo was uploaded moments
    /// ago): the server refuses the write, which is kept as a failed write; the phone then
    /// finds the photo missing and uploads it again, so retrying the failed write succeeds.
    @Test func aWriteRefusedForAPhotoTheServerDeletedSucceedsOnRetryOnceThePhotoIsUpAgain() async throws {
        let server = try await Self.collectingServer()
        defer { server.removeData() }
        let devices = ClientSyncTests.Devices(server)
        let phone = try await devices.open("alice", device: "phone")
        let bytes = Self.photo(41, bytes: 300_000)
        let id = try await phone.attachments.add(bytes: bytes, contentType: "image/jpeg").id
        #expect(await eventually { await phone.attachments.attachment(id)?.state == .uploaded })
        try await phone.disableNetwork()
        let write = try await phone.document("forms/f2").setData(["photo": .attachment(id)])
        let office = try await devices.open("alice", device: "office")
        try await Self.collect(1, on: server, online: office)
        try await phone.enableNetwork()
        await #expect(throws: DocError.self) { _ = try await write.committed }
        let failed = try await phone.failedWrites()
        try #require(failed.count == 1)
        #expect(failed[0].error.code == .failedPrecondition, "\(failed[0].error)")

        // Uploaded again by itself: the office can download it.
        #expect(await eventually { (try? await office.attachments.bytes(id)) == bytes })
        let retried = try await phone.retryFailedWrite(failed[0].id)
        _ = try await retried.committed
        let form = try await office.document("forms/f2").getDocument(source: .server)
        #expect(form.get("photo") == .attachment(id))
        #expect(try await phone.failedWrites().isEmpty)
        await devices.close()
        await server.stop()
    }

    /// A failed write keeps its attachments in the cache too: retrying it must find them on
    /// the device, since the server may have deleted them meanwhile.
    @Test func theCacheKeepsAnUploadedAttachmentAFailedWriteRefersTo() async throws {
        let server = try await LiveServer(rules: try LiveServer.defaultRules())
        defer { server.removeData() }
        let devices = ClientSyncTests.Devices(server)
        let store = try await Self.phoneWithASmallCache(devices)
        let kept = try await store.attachments.add(bytes: Self.photo(50, bytes: 400_000), contentType: "image/jpeg").id
        #expect(await eventually { await store.attachments.attachment(kept)?.state == .uploaded })
        // Only admins write accounts (Rules/firestore.rules): refused, kept as a failed write.
        let refused = try await store.document("accounts/a1").setData(["receipt": .attachment(kept)])
        await #expect(throws: DocError.self) { _ = try await refused.committed }
        #expect(try await store.failedWrites().count == 1)
        // Two more photos, no write: over the 1 MiB limit once they are up.
        var others: [AttachmentID] = []
        for seed in [51, 52] as [UInt8] {
            others.append(try await store.attachments.add(bytes: Self.photo(seed, bytes: 400_000), contentType: "image/jpeg").id)
        }
        let trimmed = await eventually {
            let all = await store.attachments.all()
            return all.allSatisfy { $0.state == .uploaded } && all.count < 3
        }
        let left = await store.attachments.all().map(\.id)
        #expect(trimmed, "\(left)")
        // The least recently used is the failed write's photo; it stays, and one of the others went.
        #expect(left.contains(kept) && left.count == 2, "\(left)")
        await devices.close()
        await server.stop()
    }

    @Test func badInputIsRefusedAndNothingIsStored() async throws {
        let root = NSTemporaryDirectory() + "doccache-attach-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let store = try await DocumentStore.open(directory: root + "/store", tenant: "acme", user: "u1")
        try FileManager.default.createDirectory(atPath: root + "/folder", withIntermediateDirectories: true)
        try #require(FileManager.default.createFile(atPath: root + "/empty.bin", contents: Data()))
        try #require(FileManager.default.createFile(atPath: root + "/ok.bin", contents: Data([1, 2, 3])))

        let cases: [(String, String, DocError.Code, String)] = [
            (root + "/missing.jpg", "image/jpeg", .notFound, "no file"),
            (root + "/folder", "image/jpeg", .invalidArgument, "directory"),
            (root + "/empty.bin", "image/jpeg", .invalidArgument, "empty"),
            (root + "/ok.bin", "jpeg", .invalidArgument, "content type"),
            (root + "/ok.bin", "", .invalidArgument, "content type"),
        ]
        for (path, type, code, words) in cases {
            let error = await #expect(throws: DocError.self) { try await store.attachments.add(file: path, contentType: type) }
            #expect(error?.code == code, "\(path) \(type): \(String(describing: error))")
            #expect(error?.message.contains(words) == true, "\(String(describing: error))")
        }
        #expect(await store.attachments.all().isEmpty, "nothing half-stored")
        let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: root + "/store/acme/u1/attachments")) ?? []
        #expect(leftovers.isEmpty, "\(leftovers)")

        // The same bytes twice are one attachment; a store without a server keeps it local.
        let first = try await store.attachments.add(file: root + "/ok.bin", contentType: "application/octet-stream")
        let again = try await store.attachments.add(bytes: [1, 2, 3], contentType: "application/octet-stream")
        #expect(first.id == again.id)
        #expect(await store.attachments.all().count == 1)
        #expect(first.size == 3)
        let unknown = try AttachmentID(String(repeating: "0", count: 64))
        #expect(await #expect(throws: DocError.self) { try await store.attachments.retry(unknown) }?.code == .notFound)
        #expect(await #expect(throws: DocError.self) { try await store.attachments.remove(first.id) }?.code == .failedPrecondition,
                "an attachment waiting for its upload is not removed")
        #expect(await #expect(throws: DocError.self) { try await store.attachments.file(unknown) }?.code == .unavailable)
        await store.close()
    }
}

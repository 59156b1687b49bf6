import Crypto
import DocModel
import DocProtocol
import DocServer
import DocServerPostgres
import DocTestSupport
import Foundation
import NIOCore
import Synchronization
import Testing

/// Two server instances on one database and one blob store (a shared file system): an
/// attachment collection on one cannot delete an attachment that a commit on the other has
/// checked and is about to refer to.
@Suite struct PostgresAttachmentCollectionTests {
    /// A blob store that forwards to a real one and, when asked to, holds the caller of a
    /// `metadata` lookup after the answer, until released: the moment between a commit's
    /// attachment check and its store commit, made long.
    final class HoldingBlobStore: BlobStore {
        let base: any BlobStore
        let lookups = CallHold<AttachmentID>()

        init(base: any BlobStore) { self.base = base }

        var maxSize: Int64 { base.maxSize }

        func metadata(_ id: AttachmentID, tenant: TenantID) async throws(DocError) -> AttachmentMetadata? {
            let answer = try await base.metadata(id, tenant: tenant)
            await lookups.pass(id)
            return answer
        }

        func partial(_ id: AttachmentID, tenant: TenantID) async throws(DocError) -> PartialUpload? {
            try await base.partial(id, tenant: tenant)
        }
        func openPartial(_ id: AttachmentID, tenant: TenantID, declaration: UploadDeclaration,
                         at offset: Int64) async throws(DocError) -> any BlobPartialWriter {
            try await base.openPartial(id, tenant: tenant, declaration: declaration, at: offset)
        }
        func finishPartial(_ id: AttachmentID, tenant: TenantID) async throws(DocError) -> AttachmentMetadata {
            try await base.finishPartial(id, tenant: tenant)
        }
        func discardPartial(_ id: AttachmentID, tenant: TenantID) async throws(DocError) {
            try await base.discardPartial(id, tenant: tenant)
        }
        func lockUpload(_ id: AttachmentID, tenant: TenantID) async throws(DocError) -> (any BlobUploadLock)? {
            try await base.lockUpload(id, tenant: tenant)
        }
        func openRead(_ id: AttachmentID, tenant: TenantID, from offset: Int64) async throws(DocError) -> any BlobReader {
            try await base.openRead(id, tenant: tenant, from: offset)
        }
        func delete(_ id: AttachmentID, tenant: TenantID) async throws(DocError) { try await base.delete(id, tenant: tenant) }
        func list(tenant: TenantID) async throws(DocError) -> [BlobListing] { try await base.list(tenant: tenant) }
    }

    @Test func aCollectionCannotDeleteAnAttachmentAnotherInstanceIsCommittingAReferenceTo() async throws {
        let url = try await freshDatabase("collect")
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("blobs-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let now = Mutex(ServerClock.system.nowMicros())
        let clock = ServerClock { now.withLock { $0 } }
        let grace: Int64 = 3_600_000_000

        // Each instance has its own store connection and its own view of the shared files.
        let holding = HoldingBlobStore(base: try FileBlobStore(root: root, clock: clock))
        let blobsB = try FileBlobStore(root: root, clock: clock)
        let storeA = try await PostgresServerStore.connect(url: url, options: testOptions())
        let storeB = try await PostgresServerStore.connect(url: url, options: testOptions())
        defer { Task { await storeA.close(); await storeB.close() } }
        func core(_ store: any ServerStore, _ blobs: any BlobStore) -> DocServerCore {
            DocServerCore(store: store, configuration: ServerConfiguration(
                clock: clock, attachments: AttachmentSettings(store: blobs, unreferencedGraceMicros: grace)), logger: .discarding)
        }
        let a = core(storeA, holding)
        let b = core(storeB, blobsB)

        // An attachment uploaded long ago that nothing refers to yet.
        let tenant = try TenantID("acme")
        let bytes = Array("a photo taken offline".utf8)
        let id = AttachmentID(digest: SHA256.hash(data: bytes))
        let writer = try await blobsB.openPartial(id, tenant: tenant, declaration: .init(size: Int64(bytes.count), contentType: "image/jpeg"), at: 0)
        try await writer.write(ByteBuffer(bytes: bytes))
        await writer.close()
        _ = try await blobsB.finishPartial(id, tenant: tenant)
        now.withLock { $0 += grace + 1 }

        // Instance A checks the attachment for a write referring to it, and is held there.
        let connection = try await a.handshake(tenant: "acme", uid: "u1", clientID: "A")
        let (reached, release) = holding.lookups.holdNext(where: { $0 == id })
        let mutation = Mutation.set(try DocumentKey("forms/f1"), ObjectValue(["photo": .attachment(id)]))
        let write = Task { await a.write(.init(clientID: "A", batchID: 1, mutations: [mutation]), on: connection) }
        for await _ in reached { break }

        // Meanwhile instance B, which serves the tenant too, collects: nothing refers to the
        // attachment yet.
        _ = try await b.handshake(tenant: "acme", uid: "u2", clientID: "B")
        let report = await b.runMaintenance()
        #expect(report.failures.isEmpty)
        #expect(report.attachmentsDeleted == 1)
        #expect(try await blobsB.metadata(id, tenant: tenant) == nil)

        // A's commit rechecks under the tenant's lock, sees the deletion and is processed
        // again: the write is refused, and no document refers to bytes that are gone.
        release.yield()
        guard case .writeError(let refused) = await write.value else {
            Issue.record("the write referring to a deleted attachment was not refused")
            return
        }
        #expect(refused.error.code == DocError.Code.failedPrecondition)
        #expect(refused.error.message.contains(id.hex) && refused.error.message.contains("not on the server"))
        let stored = try await storeB.tenant(tenant).documents([try DocumentKey("forms/f1")])
        #expect(stored.documents.isEmpty)
    }
}

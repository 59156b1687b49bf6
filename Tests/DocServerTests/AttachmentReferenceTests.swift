import DocModel
import DocProtocol
import NIOCore
import Synchronization
import Testing
@testable import DocServer

/// Documents and the attachments they refer to on the server: a write that makes a live
/// document refer to an attachment the blob store does not hold is refused, and maintenance
/// deletes the attachments no live document refers to once their grace period is over.
@Suite struct AttachmentReferenceTests {
    static let grace: Int64 = 7 * 24 * 3_600 * 1_000_000
    let acme = try! TenantID("acme")

    /// A server core whose blob store shares the core's manual clock.
    final class Fixture: Sendable {
        let clock = ManualClock()
        let directory = TempDirectory()
        let blobs: FileBlobStore
        let server: TestServer

        init(attachments: Bool = true) throws {
            blobs = try FileBlobStore(root: directory.path + "/blobs", clock: clock.serverClock)
            var configuration = ServerConfiguration()
            if attachments {
                configuration.attachments = AttachmentSettings(store: blobs, unreferencedGraceMicros: AttachmentReferenceTests.grace)
            }
            server = TestServer(configuration: configuration, clock: clock)
        }

        deinit { directory.remove() }

        /// Stores `text`'s bytes complete in `tenant`; returns the id.
        @discardableResult
        func store(_ text: String, tenant: TenantID) async throws -> AttachmentID {
            let bytes = Array(text.utf8)
            let id = BlobDigest.id(of: bytes)
            let writer = try await blobs.openPartial(id, tenant: tenant, declaration: .init(size: Int64(bytes.count), contentType: "image/jpeg"), at: 0)
            try await writer.write(ByteBuffer(bytes: bytes))
            await writer.close()
            _ = try await blobs.finishPartial(id, tenant: tenant)
            return id
        }

        /// Begins an upload of `text` and leaves it unfinished; returns the id.
        func storePartial(_ text: String, tenant: TenantID) async throws -> AttachmentID {
            let bytes = Array(text.utf8)
            let id = BlobDigest.id(of: bytes)
            let writer = try await blobs.openPartial(id, tenant: tenant, declaration: .init(size: Int64(bytes.count), contentType: "image/jpeg"), at: 0)
            try await writer.write(ByteBuffer(bytes: bytes.prefix(3)))
            await writer.close()
            return id
        }

        func stored(tenant: TenantID) async throws -> Set<AttachmentID> {
            Set(try await blobs.list(tenant: tenant).map(\.id))
        }
    }

    static func unknown(_ n: UInt8) -> AttachmentID { AttachmentID(digest: [UInt8](repeating: n, count: 32)) }

    @Test func aWriteReferringToAMissingAttachmentIsRefusedAndRemembered() async throws {
        let fixture = try Fixture()
        let c = try await fixture.server.connect()
        let missing = Self.unknown(7)
        let mutation = T.set("forms/f1", ["name": "Ada", "photo": .attachment(missing)])
        let first = try #require(await fixture.server.write(c, batch: 1, [T.set("forms/f0", ["ok": true]), mutation]).writeError)
        #expect(first.error.code == .failedPrecondition)
        #expect(first.error.message.contains(missing.hex) && first.error.message.contains("not on the server"))
        #expect(first.error.location == "write 1: forms/f1")
        // All or nothing: the first write of the batch is not stored either.
        #expect(try await fixture.server.tenantStore("acme").documents([T.key("forms/f0"), T.key("forms/f1")]).documents.isEmpty)
        // The refusal is the batch's outcome: sent again once the bytes are there, it is still refused.
        let id = try await fixture.store("the photo", tenant: acme)
        let present = T.set("forms/f1", ["name": "Ada", "photo": .attachment(id)])
        #expect(await fixture.server.write(c, batch: 1, [T.set("forms/f0", ["ok": true]), mutation]).writeError?.error.code
            == .failedPrecondition)
        // A new batch referring to the stored attachment commits.
        #expect(await fixture.server.write(c, batch: 2, [present]).writeResult != nil)
    }

    @Test func referencesAreFoundAtAnyDepthAndInArrayUnions() async throws {
        let fixture = try Fixture()
        let c = try await fixture.server.connect()
        let id = try await fixture.store("stored", tenant: acme)
        let nested: [Mutation] = [
            T.set("forms/a", ["photos": .array([.attachment(id), .map(["scan": .attachment(Self.unknown(1))])])]),
        ]
        let union: [Mutation] = [
            .setMerge(T.key("forms/b"), ObjectValue(), transforms: [
                .arrayUnion(T.field("photos"), [.attachment(Self.unknown(2))]),
            ]),
        ]
        for (batch, mutations) in [nested, union].enumerated() {
            let answer = await fixture.server.write(c, batch: batch + 1, mutations)
            #expect(answer.writeError?.error.code == .failedPrecondition, "\(mutations)")
        }
        #expect(await fixture.server.write(c, batch: 3, [T.set("forms/c", ["p": .array([.attachment(id)])])]).writeResult != nil)
    }

    @Test func anAttachmentOfAnotherTenantDoesNotCount() async throws {
        let fixture = try Fixture()
        let id = try await fixture.store("globex's photo", tenant: TenantID("globex"))
        let c = try await fixture.server.connect(tenant: "acme")
        let answer = await fixture.server.write(c, batch: 1, [T.set("forms/f", ["photo": .attachment(id)])])
        #expect(answer.writeError?.error.code == .failedPrecondition)
    }

    @Test func aServerWithoutAttachmentsRefusesReferences() async throws {
        let fixture = try Fixture(attachments: false)
        let c = try await fixture.server.connect()
        let answer = await fixture.server.write(c, batch: 1, [T.set("forms/f", ["photo": .attachment(Self.unknown(3))])])
        #expect(answer.writeError?.error.code == .failedPrecondition)
        #expect(answer.writeError?.error.message.contains("stores no attachments") == true)
        // Documents without references are not affected.
        #expect(await fixture.server.write(c, batch: 2, [T.set("forms/g", ["n": 1])]).writeResult != nil)
    }

    /// The proof of issue 18: tombstoning a document does not delete an attachment another
    /// document uses; what nothing refers to goes after the grace period, and not before.
    @Test func maintenanceDeletesOnlyUnreferencedAttachmentsPastTheirGrace() async throws {
        let fixture = try Fixture()
        let server = fixture.server
        let c = try await server.connect()
        let shared = try await fixture.store("shared photo", tenant: acme)
        let own = try await fixture.store("photo of form 3 only", tenant: acme)
        let orphan = try await fixture.store("uploaded, never referenced", tenant: acme)
        let abandoned = try await fixture.storePartial("an upload never finished", tenant: acme)
        let otherTenant = try await fixture.store("globex keeps its own", tenant: TenantID("globex"))
        #expect(await server.write(c, batch: 1, [
            T.set("forms/1", ["photo": .attachment(shared)]),
            T.set("forms/2", ["pages": .array([.map(["photo": .attachment(shared)])])]),
            T.set("forms/3", ["photo": .attachment(own)]),
        ]).writeResult != nil)
        #expect(await server.write(c, batch: 2, [.tombstone(T.key("forms/1")), .tombstone(T.key("forms/3"))]).writeResult != nil)

        // Within the grace period nothing goes.
        fixture.clock.advance(by: Self.grace - 1_000_000)
        #expect(await server.core.runMaintenance().attachmentsDeleted == 0)
        #expect(try await fixture.stored(tenant: acme) == [shared, own, orphan, abandoned])

        // Past it, what no live document refers to goes; a fresh upload stays.
        fixture.clock.advance(by: 2_000_000)
        let fresh = try await fixture.store("uploaded just now", tenant: acme)
        let report = await server.core.runMaintenance()
        #expect(report.failures.isEmpty)
        #expect(report.attachmentsDeleted == 3)
        #expect(try await fixture.stored(tenant: acme) == [shared, fresh])
        #expect(try await fixture.stored(tenant: TenantID("globex")) == [otherTenant])
        #expect(try await fixture.blobs.metadata(own, tenant: acme) == nil)

        // A document cannot refer to a deleted attachment again, nor bring one back by
        // undeleting the tombstone that held it.
        #expect(await server.write(c, batch: 3, [T.set("forms/4", ["photo": .attachment(own)])]).writeError?.error.code
            == .failedPrecondition)
        let undelete = Mutation.update(T.key("forms/3"), fields: [T.field("deletedAt"): .null])
        let refused = try #require(await server.write(c, batch: 4, [undelete]).writeError)
        #expect(refused.error.code == .failedPrecondition && refused.error.message.contains(own.hex))
        // Undeleting the tombstone whose attachment is still stored works.
        let revived = Mutation.update(T.key("forms/1"), fields: [T.field("deletedAt"): .null])
        #expect(await server.write(c, batch: 5, [revived]).writeResult != nil)

        // The shared attachment stays while a live document refers to it: with forms/1 and
        // forms/2 tombstoned it goes at the next collection.
        #expect(await server.write(c, batch: 6, [.tombstone(T.key("forms/1")), .tombstone(T.key("forms/2"))]).writeResult != nil)
        #expect(await server.core.runMaintenance().attachmentsDeleted == 1)
        #expect(try await fixture.stored(tenant: acme) == [fresh])
    }

    /// A store that counts the reads of documents and of the change log, for a collector that
    /// must make none: it looks its candidates up in the store's reference rows.
    final class ReadCountingStore: ForwardingTenantStore {
        let base: any TenantStore
        let reads = Mutex(0)
        init(base: any TenantStore) { self.base = base }
        func documents(_ keys: [DocumentKey]) async throws(DocError) -> DocumentsRead {
            reads.withLock { $0 += keys.count }
            return try await base.documents(keys)
        }
        func query(_ target: Target, limit: Int?) async throws(DocError) -> QueryRead {
            reads.withLock { $0 += 1 }
            return try await base.query(target, limit: limit)
        }
        func scan(after: DocumentKey?, limit: Int) async throws(DocError) -> [Document] {
            reads.withLock { $0 += 1 }
            return try await base.scan(after: after, limit: limit)
        }
        func changes(after version: SnapshotVersion, maxEntries: Int) async throws(DocError) -> ChangeLogRead {
            reads.withLock { $0 += 1 }
            return try await base.changes(after: version, maxEntries: maxEntries)
        }
    }

    /// The survey keeps the old attachments no live document refers to; a commit between the
    /// survey and the sweep that refers to one of them keeps it (the sweep looks again, inside
    /// the store's critical section); no document and no change log is read either time.
    @Test func aCollectionLooksItsCandidatesUpAndReadsNoDocument() async throws {
        let fixture = try Fixture()
        let server = fixture.server
        let c = try await server.connect()
        let kept = try await fixture.store("referenced all along", tenant: acme)
        let late = try await fixture.store("referenced after the survey", tenant: acme)
        let orphan = try await fixture.store("never referenced", tenant: acme)
        let tombstoned = try await fixture.store("referenced by a tombstone only", tenant: acme)
        #expect(await server.write(c, batch: 1, [
            T.set("forms/1", ["photo": .attachment(kept)]),
            T.set("notes/n1/forms/2", ["photos": .array([.attachment(tombstoned)])]),
        ]).writeResult != nil)
        #expect(await server.write(c, batch: 2, [.tombstone(T.key("notes/n1/forms/2"))]).writeResult != nil)
        fixture.clock.advance(by: Self.grace + 1)

        let settings = try #require(server.core.configuration.attachments)
        let collector = AttachmentCollector(settings: settings)
        let store = ReadCountingStore(base: try server.tenantStore("acme"))
        let survey = try #require(try await collector.survey(store, now: fixture.clock.micros))
        #expect(Set(survey.candidates.map(\.id)) == [late, orphan, tombstoned])
        #expect(await server.write(c, batch: 3, [T.set("forms/3", ["scan": .map(["file": .attachment(late)])])]).writeResult != nil)
        let deleted = try await collector.sweep(survey, store: store)
        #expect(Set(deleted) == [orphan, tombstoned])
        #expect(try await fixture.stored(tenant: acme) == [kept, late])
        #expect(store.reads.withLock { $0 } == 0)
    }

    @Test func anAttachmentBeingUploadedIsNotDeleted() async throws {
        let fixture = try Fixture()
        _ = try await fixture.server.connect()
        let partial = try await fixture.storePartial("still uploading", tenant: acme)
        fixture.clock.advance(by: Self.grace + 1)
        // The upload endpoint holds the attachment's lock while bytes arrive: this server's,
        // or another's whose blob store shares the directory.
        let otherServer = try FileBlobStore(root: fixture.blobs.root)
        for uploader in [fixture.blobs, otherServer] {
            let lock = try #require(try await uploader.lockUpload(partial, tenant: acme))
            #expect(await fixture.server.core.runMaintenance().attachmentsDeleted == 0)
            #expect(try await fixture.stored(tenant: acme) == [partial])
            lock.unlock()
        }
        #expect(await fixture.server.core.runMaintenance().attachmentsDeleted == 1)
    }
}

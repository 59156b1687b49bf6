import DocModel
import DocServer
import DocServerPostgres
import Foundation
import NIOCore
import PostgresTestSupport
import Synchronization
import Testing

/// The blob stores the contract runs against.
enum BlobStoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case files
    case postgres

    var testDescription: String { rawValue }
}

/// Two instances of one blob store kind on one storage (a directory, a database), as two
/// server processes sharing it have, with a clock the test moves.
final class BlobFixture: Sendable {
    let clock = ManualClock()
    let a: any BlobStore
    let b: any BlobStore
    private let cleanUp: @Sendable () async -> Void

    init(_ kind: BlobStoreKind, maxSize: Int64 = 1 << 20) async throws {
        switch kind {
        case .files:
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("blobs-\(UUID().uuidString)").path
            a = try FileBlobStore(root: root, maxSize: maxSize, clock: clock.serverClock)
            b = try FileBlobStore(root: root, maxSize: maxSize, clock: clock.serverClock)
            cleanUp = { try? FileManager.default.removeItem(atPath: root) }
        case .postgres:
            let url = try await PostgresCluster.shared().createUniqueDatabase(prefix: "blobs")
            let first = try await PostgresServerStore.connect(url: url, options: StoreFixture.postgresOptions(clock))
            let second = try await PostgresServerStore.connect(url: url, options: StoreFixture.postgresOptions(clock))
            a = try PostgresBlobStore(store: first, maxSize: maxSize, clock: clock.serverClock)
            b = try PostgresBlobStore(store: second, maxSize: maxSize, clock: clock.serverClock)
            cleanUp = { await first.close(); await second.close() }
        }
    }

    func tearDown() async { await cleanUp() }
}

/// The contract of ``BlobStore`` (its documentation), run against every store: what the
/// attachment endpoints and the collector rely on.
@Suite struct BlobStoreContractTests {
    let acme = try! TenantID("acme")
    let globex = try! TenantID("globex")

    static func bytes(_ count: Int, seed: UInt8 = 7) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
    }

    static func id(_ bytes: [UInt8]) -> AttachmentID { BlobDigest.id(of: bytes) }

    /// Uploads `bytes` in chunks of `chunk` bytes and finishes.
    static func store(_ bytes: [UInt8], in blobs: any BlobStore, tenant: TenantID, chunk: Int = 1_000,
                      type: String = "image/jpeg") async throws -> AttachmentMetadata {
        let id = id(bytes)
        let writer = try await blobs.openPartial(id, tenant: tenant, declaration: .init(size: Int64(bytes.count), contentType: type), at: 0)
        for start in stride(from: 0, to: bytes.count, by: chunk) {
            try await writer.write(ByteBuffer(bytes: bytes[start..<min(bytes.count, start + chunk)]))
        }
        await writer.close()
        return try await blobs.finishPartial(id, tenant: tenant)
    }

    /// Everything a reader hands out from `offset`, `maxBytes` at a time.
    static func read(_ id: AttachmentID, from blobs: any BlobStore, tenant: TenantID, offset: Int64 = 0,
                     maxBytes: Int) async throws -> [UInt8] {
        let reader = try await blobs.openRead(id, tenant: tenant, from: offset)
        var out: [UInt8] = []
        while let chunk = try await reader.next(maxBytes: maxBytes) {
            #expect(chunk.readableBytes >= 1 && chunk.readableBytes <= maxBytes)
            out += chunk.readableBytesView
        }
        await reader.close()
        return out
    }

    @Test(arguments: BlobStoreKind.allCases)
    func anUploadInChunksIsCompleteVerifiedAndReadInPieces(_ kind: BlobStoreKind) async throws {
        let fixture = try await BlobFixture(kind)
        defer { Task { await fixture.tearDown() } }
        let bytes = Self.bytes(10_000)
        let id = Self.id(bytes)
        let writer = try await fixture.a.openPartial(id, tenant: acme, declaration: .init(size: 10_000, contentType: "image/png"), at: 0)
        try await writer.write(ByteBuffer(bytes: bytes[0..<4_000]))
        #expect(writer.received == 4_000)
        await writer.close()
        // Seen from the other instance too, and not complete yet.
        let partial = try #require(try await fixture.b.partial(id, tenant: acme))
        #expect(partial.received == 4_000 && partial.declaration == .init(size: 10_000, contentType: "image/png"))
        #expect(partial.createdAt.microseconds == fixture.clock.micros)
        #expect(try await fixture.b.metadata(id, tenant: acme) == nil)
        #expect(try await fixture.b.list(tenant: acme) == [BlobListing(id: id, createdAt: partial.createdAt, isComplete: false)])

        // Continued elsewhere, where it stopped.
        let wrong = await #expect(throws: DocError.self) {
            _ = try await fixture.b.openPartial(id, tenant: acme, declaration: .init(size: 10_000, contentType: "image/png"), at: 3_000)
        }
        #expect(wrong?.code == .failedPrecondition)
        let rest = try await fixture.b.openPartial(id, tenant: acme, declaration: .init(size: 10_000, contentType: "image/png"), at: 4_000)
        try await rest.write(ByteBuffer(bytes: bytes[4_000..<7_000]))
        try await rest.write(ByteBuffer(bytes: bytes[7_000...]))
        await rest.close()
        fixture.clock.advance(by: 5)
        let metadata = try await fixture.a.finishPartial(id, tenant: acme)
        #expect(metadata == AttachmentMetadata(id: id, size: 10_000, contentType: "image/png", sha256: id.hex,
                                               createdAt: Timestamp(microseconds: fixture.clock.micros)))
        #expect(try await fixture.b.metadata(id, tenant: acme) == metadata)
        #expect(try await fixture.b.partial(id, tenant: acme) == nil)
        #expect(try await fixture.a.finishPartial(id, tenant: acme) == metadata)
        #expect(try await fixture.b.list(tenant: acme) == [BlobListing(id: id, createdAt: metadata.createdAt, isComplete: true)])

        // Read whole in pieces of any size, and from an offset (inside a stored chunk too).
        #expect(try await Self.read(id, from: fixture.b, tenant: acme, maxBytes: 777) == bytes)
        #expect(try await Self.read(id, from: fixture.a, tenant: acme, maxBytes: 1 << 20) == bytes)
        #expect(try await Self.read(id, from: fixture.a, tenant: acme, offset: 4_321, maxBytes: 2_048) == Array(bytes[4_321...]))
        #expect(try await Self.read(id, from: fixture.a, tenant: acme, offset: 10_000, maxBytes: 10).isEmpty)
        let past = await #expect(throws: DocError.self) { _ = try await fixture.a.openRead(id, tenant: acme, from: 10_001) }
        #expect(past?.code == .outOfRange)

        // Tenants are isolated.
        #expect(try await fixture.a.metadata(id, tenant: globex) == nil)
        #expect(try await fixture.a.list(tenant: globex).isEmpty)
        let elsewhere = await #expect(throws: DocError.self) { _ = try await fixture.a.openRead(id, tenant: globex, from: 0) }
        #expect(elsewhere?.code == .notFound)
    }

    @Test(arguments: BlobStoreKind.allCases)
    func badUploadsAreRefusedAndStoreNothing(_ kind: BlobStoreKind) async throws {
        let fixture = try await BlobFixture(kind, maxSize: 50_000)
        defer { Task { await fixture.tearDown() } }
        let blobs = fixture.a
        let bytes = Self.bytes(3_000)
        let id = Self.id(bytes)
        func code(_ body: () async throws -> Void) async -> DocError.Code? {
            do { try await body() } catch let error as DocError { return error.code } catch { return nil }
            return nil
        }
        #expect(await code { _ = try await blobs.openPartial(id, tenant: acme, declaration: .init(size: 0, contentType: "a/b"), at: 0) }
                == .invalidArgument)
        #expect(await code { _ = try await blobs.openPartial(id, tenant: acme, declaration: .init(size: 50_001, contentType: "a/b"), at: 0) }
                == .invalidArgument)
        #expect(await code { _ = try await blobs.openPartial(id, tenant: acme, declaration: .init(size: 3_000, contentType: "a/b"), at: 10) }
                == .failedPrecondition)
        #expect(await code { _ = try await blobs.finishPartial(id, tenant: acme) } == .notFound)
        #expect(try await blobs.list(tenant: acme).isEmpty)

        let writer = try await blobs.openPartial(id, tenant: acme, declaration: .init(size: 3_000, contentType: "a/b"), at: 0)
        try await writer.write(ByteBuffer(bytes: bytes[0..<2_000]))
        // Past the declared size: nothing of the chunk is stored.
        #expect(await code { try await writer.write(ByteBuffer(bytes: bytes[0..<1_001])) } == .outOfRange)
        #expect(writer.received == 2_000)
        await writer.close()
        #expect(try await blobs.partial(id, tenant: acme)?.received == 2_000)
        #expect(await code { _ = try await blobs.openPartial(id, tenant: acme, declaration: .init(size: 4_000, contentType: "a/b"), at: 0) }
                == .failedPrecondition)
        #expect(await code { _ = try await blobs.finishPartial(id, tenant: acme) } == .failedPrecondition)

        // Bytes that do not hash to the id: refused, and the upload is discarded.
        let more = try await blobs.openPartial(id, tenant: acme, declaration: .init(size: 3_000, contentType: "a/b"), at: 2_000)
        try await more.write(ByteBuffer(bytes: [UInt8](repeating: 0, count: 1_000)))
        await more.close()
        #expect(await code { _ = try await blobs.finishPartial(id, tenant: acme) } == .invalidArgument)
        #expect(try await blobs.partial(id, tenant: acme) == nil)
        #expect(try await blobs.list(tenant: acme).isEmpty)

        // A complete attachment is not opened again.
        _ = try await Self.store(bytes, in: blobs, tenant: acme)
        #expect(await code { _ = try await blobs.openPartial(id, tenant: acme, declaration: .init(size: 3_000, contentType: "a/b"), at: 0) }
                == .alreadyExists)
    }

    @Test(arguments: BlobStoreKind.allCases)
    func discardingAndDeletingRemoveWhatTheyName(_ kind: BlobStoreKind) async throws {
        let fixture = try await BlobFixture(kind)
        defer { Task { await fixture.tearDown() } }
        let blobs = fixture.a
        let kept = try await Self.store(Self.bytes(2_500, seed: 1), in: blobs, tenant: acme)
        let gone = try await Self.store(Self.bytes(2_500, seed: 2), in: blobs, tenant: acme)
        let shared = try await Self.store(Self.bytes(2_500, seed: 1), in: blobs, tenant: globex)
        let unfinished = Self.id(Self.bytes(900, seed: 3))
        let writer = try await blobs.openPartial(unfinished, tenant: acme, declaration: .init(size: 900, contentType: "a/b"), at: 0)
        try await writer.write(ByteBuffer(bytes: Self.bytes(900, seed: 3)[0..<100]))
        await writer.close()

        // Discarding leaves complete attachments alone.
        try await fixture.b.discardPartial(kept.id, tenant: acme)
        #expect(try await blobs.metadata(kept.id, tenant: acme) == kept)
        try await fixture.b.discardPartial(unfinished, tenant: acme)
        #expect(try await blobs.partial(unfinished, tenant: acme) == nil)
        // A new upload of it starts from nothing.
        let again = try await blobs.openPartial(unfinished, tenant: acme, declaration: .init(size: 900, contentType: "a/b"), at: 0)
        #expect(again.received == 0)
        await again.close()

        try await fixture.b.delete(gone.id, tenant: acme)
        try await fixture.b.delete(unfinished, tenant: acme)
        try await fixture.b.delete(Self.id([1, 2, 3]), tenant: acme)
        #expect(try await blobs.metadata(gone.id, tenant: acme) == nil)
        #expect(Set(try await blobs.list(tenant: acme).map(\.id)) == [kept.id])
        // The same bytes in another tenant are another attachment.
        #expect(try await blobs.metadata(shared.id, tenant: globex) == shared)
        #expect(try await Self.read(kept.id, from: fixture.b, tenant: acme, maxBytes: 1_000) == Self.bytes(2_500, seed: 1))
    }

    @Test(arguments: BlobStoreKind.allCases)
    func anUploadLockHasOneHolderAmongTheInstances(_ kind: BlobStoreKind) async throws {
        let fixture = try await BlobFixture(kind)
        defer { Task { await fixture.tearDown() } }
        let id = Self.id([1])
        let held = try #require(try await fixture.a.lockUpload(id, tenant: acme))
        #expect(try await fixture.a.lockUpload(id, tenant: acme) == nil)
        #expect(try await fixture.b.lockUpload(id, tenant: acme) == nil)
        let other = try #require(try await fixture.b.lockUpload(Self.id([2]), tenant: acme))
        let elsewhere = try #require(try await fixture.b.lockUpload(id, tenant: globex))
        held.unlock()
        held.unlock()
        // Taken again at once by the instance that let it go.
        let again = try #require(try await fixture.a.lockUpload(id, tenant: acme))
        #expect(try await fixture.b.lockUpload(id, tenant: acme) == nil)
        again.unlock()
        // And by the other instance once the release has reached the storage.
        var taken: (any BlobUploadLock)?
        for _ in 0..<500 where taken == nil {
            taken = try await fixture.b.lockUpload(id, tenant: acme)
            if taken == nil { try await Task.sleep(for: .milliseconds(10)) }
        }
        let lock = try #require(taken, "the released lock was never free for the other instance")
        #expect(try await fixture.a.lockUpload(id, tenant: acme) == nil)
        // A release that returns has the id free for every instance at once.
        await lock.release()
        let next = try #require(try await fixture.a.lockUpload(id, tenant: acme))
        await next.release()
        let after = try #require(try await fixture.b.lockUpload(id, tenant: acme))
        for lock in [after, other, elsewhere] { await lock.release() }
    }

    /// A holder that is gone (its process killed: no release, no renewal) keeps the lock
    /// only until its lease runs out.
    @Test func aDatabaseLockOfAHolderThatIsGoneEndsWithItsLease() async throws {
        let fixture = try await BlobFixture(.postgres)
        defer { Task { await fixture.tearDown() } }
        let id = Self.id([9])
        let abandoned = try #require(try await fixture.a.lockUpload(id, tenant: acme))
        fixture.clock.advance(by: PostgresBlobStore.defaultLeaseMicros - 1)
        #expect(try await fixture.b.lockUpload(id, tenant: acme) == nil)
        fixture.clock.advance(by: 1)
        let taken = try #require(try await fixture.b.lockUpload(id, tenant: acme))
        // The old holder's late release does not free the new holder's lock.
        abandoned.unlock()
        try await Task.sleep(for: .milliseconds(200))
        #expect(try await fixture.a.lockUpload(id, tenant: acme) == nil)
        taken.unlock()
    }

    /// A pool of one connection would deadlock a commit's attachment recheck against its own
    /// transaction: refused when the blob store is made.
    @Test func aDatabaseStoreNeedsAPoolOfTwoConnections() async throws {
        let clock = ManualClock()
        let url = try await PostgresCluster.shared().createUniqueDatabase(prefix: "blobs")
        var options = StoreFixture.postgresOptions(clock)
        options.maximumConnections = 1
        let store = try await PostgresServerStore.connect(url: url, options: options)
        defer { Task { await store.close() } }
        let error = #expect(throws: DocError.self) { try PostgresBlobStore(store: store) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("at least 2 connections") == true)
        #expect(error?.message.contains("has 1") == true)
    }

    /// A row with an id that is not 32 bytes (written by something else than the store) is
    /// reported as `dataLoss` by the listing the collector walks, not trusted.
    @Test func aDatabaseRowWithABadIdIsDataLossInTheListing() async throws {
        let clock = ManualClock()
        let cluster = try await PostgresCluster.shared()
        let url = try await cluster.createUniqueDatabase(prefix: "blobs")
        let store = try await PostgresServerStore.connect(url: url, options: StoreFixture.postgresOptions(clock))
        defer { Task { await store.close() } }
        let blobs = try PostgresBlobStore(store: store, clock: clock.serverClock)
        _ = try await Self.store(Self.bytes(100), in: blobs, tenant: acme)
        #expect(try await blobs.list(tenant: acme).count == 1)
        let database = String(try #require(url.split(separator: "/").last))
        try await cluster.psql("""
            INSERT INTO doccache_blobs (tenant, id, size, content_type, received, complete, created_at)
            VALUES ('acme', '\\x0102', 1, 'image/jpeg', 1, true, 0)
            """, database: database)
        let error = await #expect(throws: DocError.self) { try await blobs.list(tenant: acme) }
        #expect(error?.code == .dataLoss)
        #expect(error?.message.contains("2 bytes") == true)
    }

    /// A holder that is still there renews its lease, so the lock outlives it.
    @Test func aDatabaseLockIsRenewedWhileHeld() async throws {
        let clock = ManualClock()
        let url = try await PostgresCluster.shared().createUniqueDatabase(prefix: "blobs")
        let first = try await PostgresServerStore.connect(url: url, options: StoreFixture.postgresOptions(clock))
        let second = try await PostgresServerStore.connect(url: url, options: StoreFixture.postgresOptions(clock))
        defer { Task { await first.close(); await second.close() } }
        // A lease of 0.3 s of the test's clock, renewed every 0.1 s of real time.
        let a = try PostgresBlobStore(store: first, clock: clock.serverClock, leaseMicros: 300_000)
        let b = try PostgresBlobStore(store: second, clock: clock.serverClock, leaseMicros: 300_000)
        let id = Self.id([8])
        let held = try #require(try await a.lockUpload(id, tenant: acme))
        clock.advance(by: 299_000)
        #expect(try await b.lockUpload(id, tenant: acme) == nil)
        // Renewed meanwhile (its lease now runs 0.3 s from here): still held past the first.
        try await Task.sleep(for: .milliseconds(400))
        clock.advance(by: 2_000)
        #expect(try await b.lockUpload(id, tenant: acme) == nil, "the held lock was not renewed")
        held.unlock()
    }
}

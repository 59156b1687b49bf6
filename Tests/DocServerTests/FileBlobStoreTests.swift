import DocModel
import Foundation
import NIOCore
import Testing
@testable import DocServer

/// The filesystem blob store alone: layout, tenant names, partial uploads, verification,
/// durability ordering, reads in chunks, deletion and listing.
@Suite struct FileBlobStoreTests {
    let acme = try! TenantID("acme")

    func withStore(maxSize: Int64 = 1 << 20, _ body: (FileBlobStore, String) async throws -> Void) async throws {
        let directory = TempDirectory()
        defer { directory.remove() }
        let root = directory.path + "/blobs"
        try await body(try FileBlobStore(root: root, maxSize: maxSize, clock: ServerClock { 1_700_000_000_000_000 }), root)
    }

    /// Uploads `bytes` in one write and finishes.
    func store(_ bytes: [UInt8], in blobs: FileBlobStore, tenant: TenantID, type: String = "image/png") async throws -> AttachmentMetadata {
        let id = BlobDigest.id(of: bytes)
        let writer = try await blobs.openPartial(id, tenant: tenant, declaration: .init(size: Int64(bytes.count), contentType: type), at: 0)
        try await writer.write(ByteBuffer(bytes: bytes))
        await writer.close()
        return try await blobs.finishPartial(id, tenant: tenant)
    }

    @Test func theIdIsTheSHA256OfTheBytes() {
        // FIPS 180-2 test vectors.
        #expect(BlobDigest.id(of: Array("abc".utf8)).hex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(BlobDigest.id(of: []).hex == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func tenantNamesBecomeSafeDistinctDirectoryNames() throws {
        let names = ["acme", "Acme", ".", "..", "a.b", "%41", "ÿ", "a b", String(repeating: "x", count: 128),
                     String(repeating: ".", count: 128), String(repeating: "é", count: 64)]
        var seen = Set<String>()
        for name in names {
            let directory = FileBlobLayout.directoryName(of: try TenantID(name))
            #expect(!directory.contains("/") && directory != "." && directory != ".." && !directory.isEmpty, "\(name)")
            #expect(directory.utf8.count <= 200, "\(name)")
            #expect(seen.insert(directory.lowercased()).inserted, "\(name) collides (case-insensitively) with another")
        }
        #expect(FileBlobLayout.directoryName(of: try TenantID("acme-1_b")) == "acme-1_b")
        #expect(FileBlobLayout.directoryName(of: try TenantID("..")) == "%2E%2E")
        #expect(FileBlobLayout.directoryName(of: try TenantID(String(repeating: ".", count: 128))).hasPrefix("~"))
    }

    @Test func aFinishedUploadIsInItsPlaceAndSurvivesReopening() async throws {
        try await withStore { blobs, root in
            let bytes = Array("hello attachments".utf8)
            let metadata = try await store(bytes, in: blobs, tenant: acme, type: "text/plain")
            let id = metadata.id
            #expect(metadata.size == Int64(bytes.count) && metadata.sha256 == id.hex && metadata.contentType == "text/plain")
            #expect(metadata.createdAt == Timestamp(microseconds: 1_700_000_000_000_000))
            let shard = root + "/acme/" + id.hex.prefix(2)
            #expect(FileManager.default.contents(atPath: shard + "/" + id.hex) == Data(bytes))
            #expect(FileManager.default.fileExists(atPath: shard + "/" + id.hex + ".json"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/acme/partial").isEmpty)

            let reopened = try FileBlobStore(root: root)
            #expect(try await reopened.metadata(id, tenant: acme) == metadata)
            #expect(try await reopened.partial(id, tenant: acme) == nil)
            #expect(try await reopened.metadata(id, tenant: TenantID("other")) == nil)
        }
    }

    @Test func partialUploadsContinueOnlyAtTheirEnd() async throws {
        try await withStore { blobs, _ in
            let bytes = (0..<1_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
            let id = BlobDigest.id(of: bytes)
            let declaration = UploadDeclaration(size: 1_000, contentType: "application/pdf")
            await #expect(throws: DocError.self) { try await blobs.openPartial(id, tenant: acme, declaration: declaration, at: 10) }

            let first = try await blobs.openPartial(id, tenant: acme, declaration: declaration, at: 0)
            try await first.write(ByteBuffer(bytes: bytes[..<400]))
            #expect(first.received == 400)
            await first.close()
            let partial = try #require(try await blobs.partial(id, tenant: acme))
            #expect(partial.received == 400 && partial.declaration == declaration)

            // Not at its end, another size, or unfinished: refused.
            await #expect(throws: DocError.self) { try await blobs.openPartial(id, tenant: acme, declaration: declaration, at: 0) }
            let otherSize = UploadDeclaration(size: 999, contentType: "application/pdf")
            let refusal = await #expect(throws: DocError.self) {
                try await blobs.openPartial(id, tenant: acme, declaration: otherSize, at: 400)
            }
            #expect(refusal?.code == .failedPrecondition)
            let unfinished = await #expect(throws: DocError.self) { try await blobs.finishPartial(id, tenant: acme) }
            #expect(unfinished?.code == .failedPrecondition)

            let second = try await blobs.openPartial(id, tenant: acme, declaration: declaration, at: 400)
            let tooMuch = await #expect(throws: DocError.self) { try await second.write(ByteBuffer(bytes: bytes[400...] + [0])) }
            #expect(tooMuch?.code == .outOfRange)
            #expect(second.received == 400)
            try await second.write(ByteBuffer(bytes: bytes[400...]))
            await second.close()
            let metadata = try await blobs.finishPartial(id, tenant: acme)
            #expect(metadata.size == 1_000)
            // Finishing again answers the stored metadata; opening a complete one is refused.
            #expect(try await blobs.finishPartial(id, tenant: acme) == metadata)
            let complete = await #expect(throws: DocError.self) {
                try await blobs.openPartial(id, tenant: acme, declaration: declaration, at: 0)
            }
            #expect(complete?.code == .alreadyExists)
        }
    }

    @Test func bytesThatDoNotHashToTheIdAreDiscarded() async throws {
        try await withStore { blobs, root in
            let bytes = Array(repeating: UInt8(1), count: 64)
            let claimed = BlobDigest.id(of: Array(repeating: UInt8(2), count: 64))
            let writer = try await blobs.openPartial(claimed, tenant: acme, declaration: .init(size: 64, contentType: "x/y"), at: 0)
            try await writer.write(ByteBuffer(bytes: bytes))
            await writer.close()
            let error = await #expect(throws: DocError.self) { try await blobs.finishPartial(claimed, tenant: acme) }
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains(BlobDigest.id(of: bytes).hex) == true)
            #expect(try await blobs.partial(claimed, tenant: acme) == nil)
            #expect(try await blobs.metadata(claimed, tenant: acme) == nil)
            #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/acme/partial").isEmpty)
        }
    }

    @Test func theSizeLimitIsEnforced() async throws {
        try await withStore(maxSize: 100) { blobs, _ in
            let id = BlobDigest.id(of: [1])
            let error = await #expect(throws: DocError.self) {
                try await blobs.openPartial(id, tenant: acme, declaration: .init(size: 101, contentType: "x/y"), at: 0)
            }
            #expect(error?.code == .invalidArgument)
            let partial = try await blobs.partial(id, tenant: acme)
            #expect(partial == nil)
        }
    }

    @Test func readsStreamInChunksFromAnOffset() async throws {
        try await withStore { blobs, _ in
            let bytes = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let metadata = try await store(bytes, in: blobs, tenant: acme)
            let reader = try await blobs.openRead(metadata.id, tenant: acme, from: 2_500)
            var read: [UInt8] = []
            var chunks = 0
            while let chunk = try await reader.next(maxBytes: 1_000) {
                #expect(chunk.readableBytes <= 1_000)
                read += chunk.readableBytesView
                chunks += 1
            }
            await reader.close()
            #expect(read == Array(bytes[2_500...]) && chunks == 8)
            let past = await #expect(throws: DocError.self) { try await blobs.openRead(metadata.id, tenant: acme, from: 10_001) }
            #expect(past?.code == .outOfRange)
            let missing = await #expect(throws: DocError.self) {
                try await blobs.openRead(BlobDigest.id(of: [9]), tenant: acme, from: 0)
            }
            #expect(missing?.code == .notFound)
        }
    }

    @Test func bytesWithoutMetadataAreNotComplete() async throws {
        // A crash after the bytes were renamed into place but before the metadata was written.
        try await withStore { blobs, root in
            let bytes = Array("half way".utf8)
            let id = BlobDigest.id(of: bytes)
            let shard = root + "/acme/" + id.hex.prefix(2)
            try FileManager.default.createDirectory(atPath: shard, withIntermediateDirectories: true)
            try #require(FileManager.default.createFile(atPath: shard + "/" + id.hex, contents: Data(bytes)))
            try #require(FileManager.default.createFile(atPath: shard + "/" + id.hex + ".json.tmp", contents: Data("{".utf8)))
            #expect(try await blobs.metadata(id, tenant: acme) == nil)
            #expect(try await blobs.list(tenant: acme).isEmpty)
            // Uploading again completes it.
            #expect(try await store(bytes, in: blobs, tenant: acme).id == id)
            #expect(try await blobs.list(tenant: acme).map(\.id) == [id])
        }
    }

    @Test func corruptMetadataIsDataLoss() async throws {
        try await withStore { blobs, root in
            let metadata = try await store([1, 2, 3], in: blobs, tenant: acme)
            let path = root + "/acme/" + metadata.id.hex.prefix(2) + "/" + metadata.id.hex + ".json"
            try Data("not json".utf8).write(to: URL(fileURLWithPath: path))
            let error = await #expect(throws: DocError.self) { try await blobs.metadata(metadata.id, tenant: acme) }
            #expect(error?.code == .dataLoss)
        }
    }

    @Test func deleteAndList() async throws {
        try await withStore { blobs, _ in
            let a = try await store([1], in: blobs, tenant: acme)
            let b = try await store([2], in: blobs, tenant: acme)
            let other = try await store([3], in: blobs, tenant: TenantID("globex"))
            let partialID = BlobDigest.id(of: [4, 4])
            let writer = try await blobs.openPartial(partialID, tenant: acme, declaration: .init(size: 2, contentType: "x/y"), at: 0)
            try await writer.write(ByteBuffer(bytes: [4]))
            await writer.close()

            let listed = try await blobs.list(tenant: acme)
            #expect(Set(listed.filter(\.isComplete).map(\.id)) == [a.id, b.id])
            #expect(listed.filter { !$0.isComplete }.map(\.id) == [partialID])
            #expect(listed.allSatisfy { $0.createdAt == Timestamp(microseconds: 1_700_000_000_000_000) })
            #expect(!listed.contains { $0.id == other.id })

            try await blobs.delete(a.id, tenant: acme)
            try await blobs.delete(partialID, tenant: acme)
            try await blobs.delete(BlobDigest.id(of: [9]), tenant: acme)
            #expect(try await blobs.list(tenant: acme).map(\.id) == [b.id])
            #expect(try await blobs.metadata(a.id, tenant: acme) == nil)
            #expect(try await blobs.metadata(other.id, tenant: TenantID("globex")) == other)
        }
    }
}

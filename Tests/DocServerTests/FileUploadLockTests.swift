import DocModel
import DocTestSupport
import Foundation
import Testing
@testable import DocServer

/// The file blob store's upload lock: one holder among every store and process sharing a
/// root, released by its holder or by the end of the holder's process, and invisible to
/// the listing.
@Suite struct FileUploadLockTests {
    let acme = try! TenantID("acme")
    let id = BlobDigest.id(of: Array("a photo".utf8))
    let other = BlobDigest.id(of: Array("another photo".utf8))

    @Test func oneHolderAmongTheStoresSharingARoot() async throws {
        let directory = TempDirectory()
        defer { directory.remove() }
        // Two server instances' stores on one shared directory.
        let a = try FileBlobStore(root: directory.path)
        let b = try FileBlobStore(root: directory.path)
        let held = try #require(try await a.lockUpload(id, tenant: acme))
        #expect(try await a.lockUpload(id, tenant: acme) == nil)
        #expect(try await b.lockUpload(id, tenant: acme) == nil)
        // Per attachment and per tenant.
        let free = try #require(try await b.lockUpload(other, tenant: acme))
        let elsewhere = try #require(try await b.lockUpload(id, tenant: try TenantID("globex")))
        // A lock is not an upload.
        #expect(try await a.list(tenant: acme).isEmpty)
        #expect(try await b.partial(id, tenant: acme) == nil)

        held.unlock()
        held.unlock()
        let taken = try #require(try await b.lockUpload(id, tenant: acme))
        #expect(try await a.lockUpload(id, tenant: acme) == nil)
        for lock in [taken, free, elsewhere] { lock.unlock() }
        // Every lock file goes with its lock.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/acme/partial").isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/globex/partial").isEmpty)
        let again = try #require(try await a.lockUpload(id, tenant: acme))
        again.unlock()
    }

    @Test func aLockOfAnotherProcessHoldsUntilThatProcessIsKilled() async throws {
        let directory = TempDirectory()
        defer { directory.remove() }
        let blobs = try FileBlobStore(root: directory.path)
        let path = FileBlobLayout(root: directory.path).partialLockPath(id, tenant: acme)
        try FileManager.default.createDirectory(atPath: directory.path + "/acme/partial", withIntermediateDirectories: true)
        // Another process takes the lock (as another server's FileBlobStore does: `flock` on
        // the lock file) and keeps it until it is killed.
        let holder = try SpawnedProcess(
            executable: "/bin/sh",
            arguments: ["-c", "exec 9>\"$0\" && flock -x -n 9 && echo locked && exec sleep 300", path],
            standardError: .inherit)
        defer { holder.killAndWait(); close(holder.standardOutput) }
        let said = try await onOwnThread { () -> String in
            var output: [UInt8] = []
            readChunks(of: holder.standardOutput) { chunk in
                output += chunk
                return !output.contains(UInt8(ascii: "\n"))
            }
            return String(decoding: output, as: UTF8.self)
        }
        try #require(said == "locked\n", "the other process did not take the lock")

        #expect(try await blobs.lockUpload(id, tenant: acme) == nil)
        holder.killAndWait()
        #expect(holder.wasSignaled)
        let lock = try #require(try await blobs.lockUpload(id, tenant: acme), "a killed holder's lock was not released")
        lock.unlock()
    }
}

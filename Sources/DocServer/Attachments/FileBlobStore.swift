#if canImport(FoundationEssentials)
internal import FoundationEssentials
#else
internal import Foundation
#endif
#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif
public import DocModel

/// A ``BlobStore`` on a local filesystem (layout: ``FileBlobLayout``).
///
/// ```swift
/// let blobs = try FileBlobStore(root: "/var/lib/doccache/attachments")
/// ```
///
/// Durability: a partial upload's bytes are written as they arrive, unsynced (a crash of the
/// process keeps every written byte; a crash of the machine may lose or garble the last ones,
/// which the hash check at the end refuses). Finishing reads the bytes back through SHA-256,
/// `fsync`s them, renames them to their final name, syncs the directories and only then
/// writes the metadata file (itself synced and renamed into place): the metadata file is the
/// commit point, so a crash never leaves a half file that reads as complete.
///
/// One writer per partial upload at a time is the caller's job, with
/// ``lockUpload(_:tenant:)`` (an exclusive `flock`, ``FileUploadLock``): several server
/// processes may share one root (a shared file system whose locks hold across its clients).
public final class FileBlobStore: BlobStore {
    /// The default ``maxSize``: 100 MiB.
    public static let defaultMaxSize: Int64 = 100 * 1024 * 1024

    /// The root directory.
    public let root: String
    /// The largest attachment accepted, in bytes (at least 1; default ``defaultMaxSize``).
    public let maxSize: Int64
    private let layout: FileBlobLayout
    private let clock: ServerClock
    private let uploadLocks = UploadLockRegistry()

    /// How much a hash check reads at once.
    static let hashChunkBytes = 1 << 20

    /// Opens (creating it when missing) a store under `root`.
    ///
    /// - Parameters:
    ///   - maxSize: the largest attachment accepted (default 100 MiB).
    ///   - clock: the time recorded as `createdAt`.
    /// - Throws: `invalidArgument` for a `maxSize` below 1; `unavailable` when the root cannot
    ///   be created.
    public init(root: String, maxSize: Int64 = FileBlobStore.defaultMaxSize, clock: ServerClock = .system) throws(DocError) {
        guard maxSize >= 1 else {
            throw DocError(.invalidArgument, "the largest attachment must be at least 1 byte, not \(maxSize)",
                           at: "attachment store")
        }
        var root = root
        while root.count > 1 && root.hasSuffix("/") { root.removeLast() }
        guard !root.isEmpty else {
            throw DocError(.invalidArgument, "the attachment directory is empty", at: "attachment store")
        }
        self.root = root
        self.maxSize = maxSize
        self.layout = FileBlobLayout(root: root)
        self.clock = clock
        try BlobFile.makeDirectories(root)
    }

    // MARK: Reading state

    /// Reads the attachment's metadata file; `nil` when there is none (partial or unknown).
    /// Throws `dataLoss` when the file is not valid metadata.
    public func metadata(_ id: AttachmentID, tenant: TenantID) async throws(DocError) -> AttachmentMetadata? {
        let path = layout.metadataPath(id, tenant: tenant)
        return try await BlockingIO.run { () throws(DocError) in try Self.readMetadata(path) }
    }

    /// Reads the upload's declaration file and the size of its bytes so far; `nil` when no upload
    /// of `id` is in progress.
    public func partial(_ id: AttachmentID, tenant: TenantID) async throws(DocError) -> PartialUpload? {
        let layout = self.layout
        return try await BlockingIO.run { () throws(DocError) in try Self.readPartial(id, tenant: tenant, layout: layout) }
    }

    // MARK: Uploading

    /// Opens the upload's data file for appending (errors: see
    /// ``BlobStore/openPartial(_:tenant:declaration:at:)``). A continued upload keeps its size but
    /// takes `declaration`'s content type; a new one starts from an empty file.
    public func openPartial(_ id: AttachmentID, tenant: TenantID, declaration: UploadDeclaration,
                            at offset: Int64) async throws(DocError) -> any BlobPartialWriter {
        try BlobStoreError.check(declaration, maxSize: maxSize, id: id)
        let layout = self.layout
        let now = Timestamp(microseconds: clock.nowMicros())
        return try await BlockingIO.run { () throws(DocError) -> FileBlobWriter in
            if try Self.readMetadata(layout.metadataPath(id, tenant: tenant)) != nil {
                throw BlobStoreError.alreadyComplete(id)
            }
            let dataPath = layout.partialPath(id, tenant: tenant)
            let declarationPath = layout.partialDeclarationPath(id, tenant: tenant)
            let directory = layout.partialDirectory(tenant)
            if let existing = try Self.readPartialRecord(declarationPath) {
                guard existing.size == declaration.size else {
                    throw BlobStoreError.declaredOtherwise(id, inProgress: existing.size, declared: declaration.size)
                }
                if existing.contentType != declaration.contentType {
                    let record = PartialRecord(size: existing.size, contentType: declaration.contentType,
                                               createdAtMicros: existing.createdAtMicros)
                    try BlobFile.writeAtomically(try Self.encode(record, "an upload declaration"), to: declarationPath, directory: directory)
                }
                let fd = try BlobFile.openForWriting(dataPath, create: true)
                let received: Int64
                do throws(DocError) {
                    received = try BlobFile.size(fd: fd, path: dataPath)
                    guard received == offset else {
                        throw BlobStoreError.continuesAt(id, received: received, not: offset)
                    }
                } catch {
                    _ = close(fd)
                    throw error
                }
                return FileBlobWriter(fd: fd, path: dataPath, received: received, limit: declaration.size)
            }
            guard offset == 0 else {
                throw BlobStoreError.noUpload(id, startAt: offset)
            }
            try BlobFile.makeDirectories(directory)
            let record = PartialRecord(size: declaration.size, contentType: declaration.contentType,
                                       createdAtMicros: now.microseconds)
            try BlobFile.writeAtomically(try Self.encode(record, "an upload declaration"), to: declarationPath, directory: directory)
            let fd = try BlobFile.openForWriting(dataPath, create: true)
            do throws(DocError) {
                // Bytes left by an upload whose declaration was removed first are not a prefix of this one.
                try BlobFile.truncate(fd, to: 0, path: dataPath)
            } catch {
                _ = close(fd)
                throw error
            }
            return FileBlobWriter(fd: fd, path: dataPath, received: 0, limit: declaration.size)
        }
    }

    /// Hashes the bytes, syncs and renames them into place, then writes the metadata file (the
    /// commit point). An already complete attachment returns its metadata and drops any leftover
    /// partial; bytes that do not hash to `id` are discarded (`invalidArgument`).
    public func finishPartial(_ id: AttachmentID, tenant: TenantID) async throws(DocError) -> AttachmentMetadata {
        let layout = self.layout
        let now = Timestamp(microseconds: clock.nowMicros())
        return try await BlockingIO.run { () throws(DocError) -> AttachmentMetadata in
            let metadataPath = layout.metadataPath(id, tenant: tenant)
            if let existing = try Self.readMetadata(metadataPath) {
                try Self.removePartial(id, tenant: tenant, layout: layout)
                return existing
            }
            guard let partial = try Self.readPartial(id, tenant: tenant, layout: layout) else {
                throw BlobStoreError.noUploadInProgress(id)
            }
            guard partial.received == partial.declaration.size else {
                throw BlobStoreError.bytesMissing(id, received: partial.received, size: partial.declaration.size)
            }
            let dataPath = layout.partialPath(id, tenant: tenant)
            let digest = try Self.verify(dataPath, id: id, size: partial.declaration.size)
            guard digest == id else {
                try Self.removePartial(id, tenant: tenant, layout: layout)
                throw BlobStoreError.hashMismatch(id, size: partial.declaration.size, digest: digest)
            }
            let shard = layout.shardDirectory(id, tenant: tenant)
            try BlobFile.makeDirectories(shard)
            try BlobFile.move(dataPath, to: layout.blobPath(id, tenant: tenant))
            try BlobFile.syncDirectory(shard)
            try BlobFile.syncDirectory(layout.partialDirectory(tenant))
            let metadata = AttachmentMetadata(id: id, size: partial.declaration.size,
                                              contentType: partial.declaration.contentType, sha256: digest.hex,
                                              createdAt: now)
            try BlobFile.writeAtomically(Self.encode(metadata, "attachment metadata"), to: metadataPath, directory: shard)
            try BlobFile.remove(layout.partialDeclarationPath(id, tenant: tenant))
            return metadata
        }
    }

    /// Removes the upload's declaration file, then its bytes; no upload in progress is not an
    /// error.
    public func discardPartial(_ id: AttachmentID, tenant: TenantID) async throws(DocError) {
        let layout = self.layout
        try await BlockingIO.run { () throws(DocError) in try Self.removePartial(id, tenant: tenant, layout: layout) }
    }

    /// Takes an exclusive `flock` on the upload's lock file (``FileUploadLock``); `nil` at once
    /// when this process or another one holds it.
    public func lockUpload(_ id: AttachmentID, tenant: TenantID) async throws(DocError) -> (any BlobUploadLock)? {
        let (layout, registry) = (self.layout, uploadLocks)
        return try await registry.lock(id, tenant: tenant) { () async throws(DocError) in
            try await BlockingIO.run { () throws(DocError) -> FileUploadLock? in
                try FileUploadLock.take(id, tenant: tenant, layout: layout) { registry.remove(id, tenant: tenant) }
            }
        }
    }

    // MARK: Reading bytes

    /// Opens the attachment's file at `offset` (0…size). Throws `notFound` when it is not complete,
    /// `outOfRange` past its end, `dataLoss` when its metadata is there but not its bytes.
    public func openRead(_ id: AttachmentID, tenant: TenantID, from offset: Int64) async throws(DocError) -> any BlobReader {
        let layout = self.layout
        return try await BlockingIO.run { () throws(DocError) -> FileBlobReader in
            guard let metadata = try Self.readMetadata(layout.metadataPath(id, tenant: tenant)) else {
                throw BlobStoreError.notFound(id)
            }
            guard offset >= 0, offset <= metadata.size else {
                throw BlobStoreError.pastTheEnd(id, offset: offset, size: metadata.size)
            }
            let path = layout.blobPath(id, tenant: tenant)
            guard let fd = try BlobFile.openForReading(path) else {
                throw DocError(.dataLoss, "the bytes of attachment \(id) are missing although its metadata is stored",
                               at: path)
            }
            return FileBlobReader(fd: fd, path: path, metadata: metadata, position: offset)
        }
    }

    // MARK: Deleting and listing

    /// Removes the metadata file first (from then on the attachment is not complete), then the
    /// bytes and any partial upload; missing files are skipped.
    public func delete(_ id: AttachmentID, tenant: TenantID) async throws(DocError) {
        let layout = self.layout
        try await BlockingIO.run { () throws(DocError) in
            // The metadata first: from then on the attachment is not complete.
            try BlobFile.remove(layout.metadataPath(id, tenant: tenant))
            try BlobFile.remove(layout.blobPath(id, tenant: tenant))
            try Self.removePartial(id, tenant: tenant, layout: layout)
        }
    }

    /// Walks the tenant's directories: complete attachments (by their metadata files), then
    /// partial uploads not already complete, each group in file-name order.
    public func list(tenant: TenantID) async throws(DocError) -> [BlobListing] {
        let layout = self.layout
        return try await BlockingIO.run { () throws(DocError) -> [BlobListing] in
            var listings: [BlobListing] = []
            var complete = Set<AttachmentID>()
            let tenantDirectory = layout.tenantDirectory(tenant)
            for shard in try BlobFile.list(tenantDirectory).sorted() where shard != FileBlobLayout.partialDirectory {
                for name in try BlobFile.list(tenantDirectory + "/" + shard).sorted() {
                    guard let id = Self.id(fromMetadataName: name) else { continue }
                    guard let metadata = try Self.readMetadata(layout.metadataPath(id, tenant: tenant)) else { continue }
                    complete.insert(id)
                    listings.append(BlobListing(id: id, createdAt: metadata.createdAt, isComplete: true))
                }
            }
            for name in try BlobFile.list(layout.partialDirectory(tenant)).sorted() {
                guard let id = Self.id(fromMetadataName: name), !complete.contains(id),
                      let record = try Self.readPartialRecord(layout.partialDeclarationPath(id, tenant: tenant))
                else { continue }
                listings.append(BlobListing(id: id, createdAt: Timestamp(microseconds: record.createdAtMicros),
                                            isComplete: false))
            }
            return listings
        }
    }

    // MARK: Helpers (blocking)

    /// What a partial upload's declaration file holds.
    struct PartialRecord: Codable {
        var size: Int64
        var contentType: String
        var createdAtMicros: Int64
    }

    private static func id(fromMetadataName name: String) -> AttachmentID? {
        guard name.hasSuffix(FileBlobLayout.metadataSuffix) else { return nil }
        return try? AttachmentID(String(name.dropLast(FileBlobLayout.metadataSuffix.count)))
    }

    /// The JSON of a metadata or declaration file (keys sorted).
    private static func encode(_ value: some Encodable, _ what: String) throws(DocError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do {
            return Array(try encoder.encode(value))
        } catch {
            throw DocError(.internal, "cannot encode \(what): \(error)", at: "attachment store")
        }
    }

    /// A metadata or declaration file, or `nil` when it does not exist.
    private static func decode<T: Decodable>(_ type: T.Type, at path: String, _ what: String) throws(DocError) -> T? {
        guard let bytes = try BlobFile.readSmallFile(path) else { return nil }
        do {
            return try JSONDecoder().decode(type, from: Data(bytes))
        } catch {
            throw DocError(.dataLoss, "the \(what) file is not readable: \(error)", at: path)
        }
    }

    private static func readMetadata(_ path: String) throws(DocError) -> AttachmentMetadata? {
        try decode(AttachmentMetadata.self, at: path, "attachment metadata")
    }

    private static func readPartialRecord(_ path: String) throws(DocError) -> PartialRecord? {
        try decode(PartialRecord.self, at: path, "upload declaration")
    }

    private static func readPartial(_ id: AttachmentID, tenant: TenantID, layout: FileBlobLayout) throws(DocError) -> PartialUpload? {
        guard let record = try readPartialRecord(layout.partialDeclarationPath(id, tenant: tenant)) else { return nil }
        let received = try BlobFile.size(layout.partialPath(id, tenant: tenant)) ?? 0
        return PartialUpload(id: id, declaration: UploadDeclaration(size: record.size, contentType: record.contentType),
                             received: received, createdAt: Timestamp(microseconds: record.createdAtMicros))
    }

    /// Removes a partial upload: the declaration first (from then on there is no partial),
    /// then the bytes.
    private static func removePartial(_ id: AttachmentID, tenant: TenantID, layout: FileBlobLayout) throws(DocError) {
        try BlobFile.remove(layout.partialDeclarationPath(id, tenant: tenant))
        try BlobFile.remove(layout.partialPath(id, tenant: tenant))
    }

    /// Reads the file at `path` through SHA-256 and syncs it; returns the id of its bytes.
    ///
    /// - Throws: `aborted` when the file's size is not `size` (written by someone else meanwhile:
    ///   the client asks for the upload's state and goes on, as `PostgresBlobStore` has it too).
    private static func verify(_ path: String, id: AttachmentID, size: Int64) throws(DocError) -> AttachmentID {
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw BlobFile.failure("open", path) }
        defer { _ = close(fd) }
        var digest = BlobDigest()
        var offset: Int64 = 0
        while true {
            let chunk = try BlobFile.read(fd, at: offset, count: hashChunkBytes, path: path)
            if chunk.readableBytes == 0 { break }
            chunk.withUnsafeReadableBytes { digest.update($0) }
            offset += Int64(chunk.readableBytes)
        }
        guard offset == size else {
            throw DocError(.aborted, "the upload of \(id) changed while it was being verified: \(offset) bytes, "
                               + "expected \(size); upload it again", at: "attachments/\(id)")
        }
        try BlobFile.sync(fd, path: path)
        return digest.finish()
    }
}

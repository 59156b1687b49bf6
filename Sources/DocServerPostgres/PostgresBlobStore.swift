public import DocModel
public import DocServer
internal import Logging
internal import NIOCore
internal import PostgresNIO

/// A ``BlobStore`` in the PostgreSQL database of a ``PostgresServerStore``: attachments for
/// server instances that share the database and no file system (docs/attachments.md,
/// "In the database").
///
/// ```swift
/// let store = try await PostgresServerStore.connect(url: url)
/// let blobs = try PostgresBlobStore(store: store)
/// ```
///
/// Tables (schema version 5, ``PostgresSchema``): `doccache_blobs`, one row per attachment
/// (declaration, bytes received, whether complete, creation time); `doccache_blob_parts`, its
/// bytes as the chunks that arrived, keyed by their offset; `doccache_blob_locks`, the upload
/// locks.
///
/// - A chunk is one statement that appends the part and advances `received` only if it is
///   still the offset the writer continues at: an acknowledged chunk is committed (durable),
///   and two writers can never interleave bytes, even without the lock.
/// - Finishing reads the parts back through SHA-256 and then marks the row complete, in one
///   statement conditioned on the row being the same upload: the commit is the point where
///   the attachment becomes complete.
/// - The upload lock is a lease row (``leaseMicros``, renewed by its holder every third of
///   it): released by ``BlobUploadLock/unlock()``, and when its holder is gone, once the
///   lease runs out.
///
/// The pool is the server store's: attachment statements share its connections and its
/// operation timeout. It needs at least two connections
/// (``PostgresServerStore/Options/maximumConnections``; the initializer refuses fewer): a
/// commit's attachment recheck (``CommitRequest/recheck``) and a collection's deletions run
/// while the tenant's transaction holds one (with one, they would wait for the operation
/// timeout and fail).
public final class PostgresBlobStore: BlobStore {
    /// The largest attachment accepted, in bytes (default ``FileBlobStore/defaultMaxSize``).
    public let maxSize: Int64
    let database: PostgresDatabase
    let clock: ServerClock
    /// This store's name on its lock rows: a lock it holds is taken over by itself at once,
    /// whatever its lease (its own registry guards the ids it holds).
    let holder: [UInt8]
    let registry = UploadLockRegistry()

    /// How long an upload lock holds without renewal, in microseconds (default 30 s); its
    /// holder renews it every third of that.
    public let leaseMicros: Int64
    /// The default of ``leaseMicros``: 30 s.
    public static let defaultLeaseMicros: Int64 = 30_000_000
    /// The span of bytes one statement of a hash check or a read asks for: the parts that
    /// start within it (so it returns this much, plus the last part's overhang).
    static let readSpan: Int64 = 2 << 20

    /// The fewest connections the store's pool may have.
    public static let minimumConnections = 2

    /// Attachments in `store`'s database, at most `maxSize` bytes each (default 100 MiB), upload
    /// locks held for `leaseMicros` without renewal (at least 3 ms).
    ///
    /// - Throws: `invalidArgument` when `store`'s pool has fewer than
    ///   ``minimumConnections`` connections.
    public init(store: PostgresServerStore, maxSize: Int64 = FileBlobStore.defaultMaxSize, clock: ServerClock = .system,
                leaseMicros: Int64 = PostgresBlobStore.defaultLeaseMicros) throws(DocError) {
        guard store.options.maximumConnections >= Self.minimumConnections else {
            throw DocError(.invalidArgument, """
                attachments in the database need a pool of at least \(Self.minimumConnections) connections \
                (a commit checks its attachments while its transaction holds one); this store's pool has \
                \(store.options.maximumConnections)
                """, at: "maximumConnections")
        }
        self.database = store.database
        self.maxSize = maxSize
        self.clock = clock
        self.leaseMicros = max(3_000, leaseMicros)
        self.holder = (0..<16).map { _ in UInt8.random(in: 0...255) }
    }

    static func key(_ id: AttachmentID) -> ByteBuffer { ByteBuffer(bytes: id.digestBytes) }

    // MARK: Reading state

    /// The row of `id`: (declared size, content type, received, complete, created at).
    struct Row {
        var size: Int64
        var contentType: String
        var received: Int64
        var complete: Bool
        var createdAt: Int64
    }

    static func row(_ rows: [PostgresRow], _ database: String) throws(DocError) -> Row? {
        guard let row = rows.first else { return nil }
        let (size, contentType, received, complete, createdAt) = try PostgresErrorMapping.decode("an attachment row", in: database) {
            try row.decode((Int64, String, Int64, Bool, Int64).self)
        }
        return Row(size: size, contentType: contentType, received: received, complete: complete, createdAt: createdAt)
    }

    func row(_ id: AttachmentID, tenant: TenantID) async throws(DocError) -> Row? {
        let rows = try await database.rows("read attachment \(id) of tenant \(tenant)", """
            SELECT size, content_type, received, complete, created_at FROM doccache_blobs
            WHERE tenant = \(tenant.rawValue) AND id = \(Self.key(id))
            """)
        return try Self.row(rows, database.name)
    }

    static func metadata(_ id: AttachmentID, _ row: Row) -> AttachmentMetadata {
        AttachmentMetadata(id: id, size: row.size, contentType: row.contentType, sha256: id.hex,
                           createdAt: Timestamp(microseconds: row.createdAt))
    }

    /// The metadata from the attachment's row; `nil` when there is no row or it is not complete.
    public func metadata(_ id: AttachmentID, tenant: TenantID) async throws(DocError) -> AttachmentMetadata? {
        guard let row = try await row(id, tenant: tenant), row.complete else { return nil }
        return Self.metadata(id, row)
    }

    /// The upload in progress from the attachment's row; `nil` when there is no row or it is
    /// complete.
    public func partial(_ id: AttachmentID, tenant: TenantID) async throws(DocError) -> PartialUpload? {
        guard let row = try await row(id, tenant: tenant), !row.complete else { return nil }
        return PartialUpload(id: id, declaration: UploadDeclaration(size: row.size, contentType: row.contentType),
                             received: row.received, createdAt: Timestamp(microseconds: row.createdAt))
    }

    // MARK: Uploading

    /// Checks the offset and declaration against the attachment's row in one transaction (errors:
    /// see ``BlobStore/openPartial(_:tenant:declaration:at:)``), or inserts a new row at offset 0
    /// after deleting stray parts. A continued upload takes `declaration`'s content type.
    public func openPartial(_ id: AttachmentID, tenant: TenantID, declaration: UploadDeclaration,
                            at offset: Int64) async throws(DocError) -> any BlobPartialWriter {
        try BlobStoreError.check(declaration, maxSize: maxSize, id: id)
        let (name, key, now, databaseName) = (tenant.rawValue, Self.key(id), clock.nowMicros(), database.name)
        let received = try await database.transaction("open the upload of \(id) in tenant \(tenant)") { connection, logger in
            let rows = try await connection.rows("""
                SELECT size, content_type, received, complete, created_at FROM doccache_blobs
                WHERE tenant = \(name) AND id = \(key) FOR UPDATE
                """, logger)
            if let existing = try Self.row(rows, databaseName) {
                if existing.complete { throw BlobStoreError.alreadyComplete(id) }
                guard existing.size == declaration.size else {
                    throw BlobStoreError.declaredOtherwise(id, inProgress: existing.size, declared: declaration.size)
                }
                guard existing.received == offset else { throw BlobStoreError.continuesAt(id, received: existing.received, not: offset) }
                if existing.contentType != declaration.contentType {
                    try await connection.run("""
                        UPDATE doccache_blobs SET content_type = \(declaration.contentType) WHERE tenant = \(name) AND id = \(key)
                        """, logger)
                }
                return existing.received
            }
            guard offset == 0 else { throw BlobStoreError.noUpload(id, startAt: offset) }
            // Parts left by an upload whose row was removed first are not a prefix of this one.
            try await connection.run("DELETE FROM doccache_blob_parts WHERE tenant = \(name) AND id = \(key)", logger)
            try await connection.run("""
                INSERT INTO doccache_blobs (tenant, id, size, content_type, received, complete, created_at)
                VALUES (\(name), \(key), \(declaration.size), \(declaration.contentType), 0, FALSE, \(now))
                """, logger)
            return Int64(0)
        }
        return PostgresBlobWriter(store: self, id: id, tenant: tenant, received: received, limit: declaration.size)
    }

    /// Hashes the parts, then marks the row complete if it is still the same upload (an already
    /// complete one returns its metadata). Throws `notFound` with no upload, `failedPrecondition`
    /// before every byte arrived, `invalidArgument` (the upload discarded) when the bytes do not
    /// hash to `id`, `dataLoss` when stored parts are missing, `aborted` when the upload was
    /// replaced meanwhile.
    public func finishPartial(_ id: AttachmentID, tenant: TenantID) async throws(DocError) -> AttachmentMetadata {
        guard let row = try await row(id, tenant: tenant) else { throw BlobStoreError.noUploadInProgress(id) }
        if row.complete { return Self.metadata(id, row) }
        guard row.received == row.size else { throw BlobStoreError.bytesMissing(id, received: row.received, size: row.size) }
        var digest = BlobDigest()
        var position: Int64 = 0
        reading: while position < row.size {
            let parts = try await parts(of: id, tenant: tenant, startingAt: position)
            guard !parts.isEmpty else { break }
            for (start, bytes) in parts {
                guard start == position else { break reading }
                bytes.withUnsafeReadableBytes { digest.update($0) }
                position += Int64(bytes.readableBytes)
            }
        }
        guard position == row.size else {
            throw DocError(.dataLoss, "the parts of the upload of \(id) hold \(position) of its \(row.size) bytes",
                           at: BlobStoreError.at(id))
        }
        let found = digest.finish()
        guard found == id else {
            try await discardPartial(id, tenant: tenant)
            throw BlobStoreError.hashMismatch(id, size: row.size, digest: found)
        }
        let now = clock.nowMicros()
        let done = try await database.rows("complete attachment \(id) of tenant \(tenant)", """
            UPDATE doccache_blobs SET complete = TRUE, created_at = \(now)
            WHERE tenant = \(tenant.rawValue) AND id = \(Self.key(id)) AND NOT complete AND received = \(row.size)
              AND created_at = \(row.createdAt)
            RETURNING size
            """)
        guard !done.isEmpty else {
            // Completed or replaced by another writer meanwhile: what is stored now says which.
            if let metadata = try await metadata(id, tenant: tenant) { return metadata }
            throw DocError(.aborted, "the upload of \(id) changed while it was being verified: upload it again",
                           at: BlobStoreError.at(id))
        }
        return AttachmentMetadata(id: id, size: row.size, contentType: row.contentType, sha256: id.hex,
                                  createdAt: Timestamp(microseconds: now))
    }

    /// The parts of `id` that start within ``readSpan`` bytes from byte `from`, in order.
    func parts(of id: AttachmentID, tenant: TenantID, startingAt from: Int64) async throws(DocError) -> [(Int64, ByteBuffer)] {
        try decodeParts(try await database.rows("read the bytes of attachment \(id) of tenant \(tenant)", """
            SELECT start, bytes FROM doccache_blob_parts
            WHERE tenant = \(tenant.rawValue) AND id = \(Self.key(id)) AND start >= \(from) AND start < \(from + Self.readSpan)
            ORDER BY start
            """))
    }

    /// The part of `id` that holds byte `position`, if any.
    func part(of id: AttachmentID, tenant: TenantID, holding position: Int64) async throws(DocError) -> (Int64, ByteBuffer)? {
        try decodeParts(try await database.rows("read the bytes of attachment \(id) of tenant \(tenant)", """
            SELECT start, bytes FROM doccache_blob_parts
            WHERE tenant = \(tenant.rawValue) AND id = \(Self.key(id)) AND start <= \(position)
            ORDER BY start DESC LIMIT 1
            """)).first
    }

    private func decodeParts(_ rows: [PostgresRow]) throws(DocError) -> [(Int64, ByteBuffer)] {
        var parts: [(Int64, ByteBuffer)] = []
        parts.reserveCapacity(rows.count)
        for row in rows {
            parts.append(try PostgresErrorMapping.decode("an attachment part", in: database.name) {
                try row.decode((Int64, ByteBuffer).self)
            })
        }
        return parts
    }

    /// Deletes the row and parts of an unfinished upload of `id`; a complete attachment, or none,
    /// is left alone.
    public func discardPartial(_ id: AttachmentID, tenant: TenantID) async throws(DocError) {
        try await remove(id, tenant: tenant, onlyPartial: true)
    }

    // MARK: Reading bytes

    /// A reader of the parts from `offset` (0…size). Throws `notFound` when the attachment is not
    /// complete, `outOfRange` when `offset` is past its end.
    public func openRead(_ id: AttachmentID, tenant: TenantID, from offset: Int64) async throws(DocError) -> any BlobReader {
        guard let metadata = try await metadata(id, tenant: tenant) else { throw BlobStoreError.notFound(id) }
        guard offset >= 0, offset <= metadata.size else { throw BlobStoreError.pastTheEnd(id, offset: offset, size: metadata.size) }
        return PostgresBlobReader(store: self, tenant: tenant, metadata: metadata, position: offset)
    }

    // MARK: Deleting and listing

    /// Deletes the attachment's row and parts, complete or not, in one statement; nothing to
    /// delete is not an error.
    public func delete(_ id: AttachmentID, tenant: TenantID) async throws(DocError) {
        try await remove(id, tenant: tenant, onlyPartial: false)
    }

    /// Removes the row of `id` (only an unfinished one when `onlyPartial`) and its parts, in
    /// one statement.
    private func remove(_ id: AttachmentID, tenant: TenantID, onlyPartial: Bool) async throws(DocError) {
        let (name, key) = (tenant.rawValue, Self.key(id))
        _ = try await database.rows("delete attachment \(id) of tenant \(tenant)", """
            WITH gone AS (
                DELETE FROM doccache_blobs WHERE tenant = \(name) AND id = \(key) AND (NOT complete OR NOT \(onlyPartial))
                RETURNING id
            )
            DELETE FROM doccache_blob_parts WHERE tenant = \(name) AND id IN (SELECT id FROM gone)
            """)
    }

    /// Every attachment row of `tenant`, complete and partial, ordered by id.
    public func list(tenant: TenantID) async throws(DocError) -> [BlobListing] {
        let rows = try await database.rows("list the attachments of tenant \(tenant)", """
            SELECT id, created_at, complete FROM doccache_blobs WHERE tenant = \(tenant.rawValue) ORDER BY id
            """)
        var listings: [BlobListing] = []
        listings.reserveCapacity(rows.count)
        for row in rows {
            let (id, createdAt, complete) = try PostgresErrorMapping.decode("an attachment listing", in: database.name) {
                try row.decode((ByteBuffer, Int64, Bool).self)
            }
            // A row this store did not write (the column has no length check) is reported,
            // not trusted: the id's initializer requires 32 bytes.
            guard id.readableBytes == 32 else {
                throw DocError(.dataLoss, "an attachment row of tenant \(tenant) in \(database.name) has an id of "
                    + "\(id.readableBytes) bytes, not a 32-byte SHA-256")
            }
            listings.append(BlobListing(id: AttachmentID(digest: id.readableBytesView), createdAt: Timestamp(microseconds: createdAt),
                                        isComplete: complete))
        }
        return listings
    }

    // MARK: Upload locks

    /// Takes the lease row of `id` (held ``leaseMicros``, renewed by the holder); `nil` at once
    /// when this process or a live lease of another holds it.
    public func lockUpload(_ id: AttachmentID, tenant: TenantID) async throws(DocError) -> (any BlobUploadLock)? {
        try await registry.lock(id, tenant: tenant) { () async throws(DocError) in
            try await PostgresUploadLock.take(id, tenant: tenant, store: self)
        }
    }
}

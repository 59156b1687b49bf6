public import DocModel
public import NIOCore

/// Where attachment bytes live: one namespace per tenant, content-addressed by
/// ``AttachmentID`` (the SHA-256 of the bytes).
///
/// An attachment is first a *partial upload* (a declaration and a prefix of the bytes, grown
/// by ``openPartial(_:tenant:declaration:at:)`` in one or more requests), then, once
/// ``finishPartial(_:tenant:)`` has verified that the bytes hash to the id, a *complete*
/// attachment with ``AttachmentMetadata``, immutable until deleted.
///
/// Contract every implementation keeps (``FileBlobStore`` on a filesystem; an S3-compatible
/// store is the intended next one):
///
/// - **Tenants are isolated**: an id stored in one tenant is unknown in every other.
/// - **A partial holds a prefix of the content**: bytes are appended only at the end, so
///   ``PartialUpload/received`` is where the next write continues; a write that fails may
///   lose its own last bytes but never leaves bytes that were not sent at that offset.
/// - **Complete means verified and durable**: ``metadata(_:tenant:)`` returns a value only
///   after the bytes hashed to the id and were made durable; a crash never leaves a half
///   written attachment that reads as complete.
/// - **One writer per upload**: ``lockUpload(_:tenant:)`` is exclusive across every process
///   that shares the storage, and released when its holder's process ends (at once, or when
///   its lease runs out).
/// - **Reads stream**: ``openRead(_:tenant:from:)`` hands out the bytes in chunks; no
///   implementation holds a whole attachment in memory.
///
/// Mapping to S3 (not built): a partial upload is a multipart upload (`CreateMultipartUpload`
/// keyed by tenant and id, parts buffered to the 5 MiB part minimum, `ListParts` for
/// ``partial(_:tenant:)``), finishing is `CompleteMultipartUpload` to a staging key, a
/// streamed hash check, then a copy to `<tenant>/<id>` with the metadata as object metadata;
/// ``openRead(_:tenant:from:)`` is a ranged `GetObject` streamed in chunks; the upload lock
/// a conditional put of a lock object with an expiry its holder renews.
///
/// Every method throws ``DocError``: `invalidArgument` for a request the store refuses,
/// `failedPrecondition` for one that does not fit the stored state, `notFound` for what is
/// not there, `resourceExhausted` for a full disk, `dataLoss` / `unavailable` for I/O.
public protocol BlobStore: Sendable {
    /// The largest attachment accepted, in bytes.
    var maxSize: Int64 { get }

    /// The complete attachment `id` of `tenant`, or `nil` when it is not complete (or unknown).
    func metadata(_ id: AttachmentID, tenant: TenantID) async throws(DocError) -> AttachmentMetadata?

    /// The upload in progress for `id`, or `nil` when there is none.
    func partial(_ id: AttachmentID, tenant: TenantID) async throws(DocError) -> PartialUpload?

    /// Opens the partial upload of `id` for appending at `offset`, creating it with
    /// `declaration` when there is none (then `offset` must be 0). The caller ensures one
    /// writer per id at a time.
    ///
    /// - Throws: `failedPrecondition` when `offset` is not the number of bytes held, or the
    ///   partial was declared with another size (discard it to start over);
    ///   `invalidArgument` when the declared size is over ``maxSize``; `alreadyExists` when
    ///   the attachment is complete.
    func openPartial(_ id: AttachmentID, tenant: TenantID, declaration: UploadDeclaration,
                     at offset: Int64) async throws(DocError) -> any BlobPartialWriter

    /// Completes the partial upload of `id`: checks that it holds the declared size, that its
    /// bytes hash to `id`, makes them durable and records the metadata.
    ///
    /// - Returns: the stored metadata (the existing one when it was already complete).
    /// - Throws: `invalidArgument` when the bytes do not hash to the id (the partial is then
    ///   discarded: its bytes are wrong somewhere); `failedPrecondition` when bytes are
    ///   missing; `notFound` when there is no partial; `aborted` when the upload changed while
    ///   it was verified (another writer despite the upload lock: the client asks for the
    ///   upload's state again).
    func finishPartial(_ id: AttachmentID, tenant: TenantID) async throws(DocError) -> AttachmentMetadata

    /// Discards the partial upload of `id`, if any.
    func discardPartial(_ id: AttachmentID, tenant: TenantID) async throws(DocError)

    /// Takes the upload lock of `id`: one holder at a time among all users of the storage,
    /// every server process sharing it included (the upload endpoint holds it while it writes
    /// and finishes a partial upload, the collector while it deletes). Returns `nil`, at once,
    /// when it is held.
    func lockUpload(_ id: AttachmentID, tenant: TenantID) async throws(DocError) -> (any BlobUploadLock)?

    /// Opens the complete attachment `id` for reading from byte `offset`.
    ///
    /// - Throws: `notFound` when it is not complete; `outOfRange` when `offset` is past its end.
    func openRead(_ id: AttachmentID, tenant: TenantID, from offset: Int64) async throws(DocError) -> any BlobReader

    /// Deletes the attachment `id` (complete or partial). Deleting what is not there is not
    /// an error.
    func delete(_ id: AttachmentID, tenant: TenantID) async throws(DocError)

    /// Every attachment of `tenant`, complete and partial, with its creation time: the input
    /// of a collector that deletes what no document refers to.
    func list(tenant: TenantID) async throws(DocError) -> [BlobListing]
}

/// Appends to one partial upload. Used by one task at a time; ``close()`` ends it (also
/// after a failure).
public protocol BlobPartialWriter: Sendable {
    /// The bytes the partial holds now: the offset of the next write.
    var received: Int64 { get }

    /// Appends `chunk`. When it returns, the bytes are handed to the storage (they survive a
    /// crash of the server process; a crash of the machine may lose the latest ones, which
    /// ``BlobStore/finishPartial(_:tenant:)``'s hash check catches).
    ///
    /// - Throws: `outOfRange` when the chunk would go past the declared size (nothing of it
    ///   is written); an I/O error.
    func write(_ chunk: ByteBuffer) async throws(DocError)

    /// Ends the writing. Idempotent.
    func close() async
}

/// Reads a complete attachment in chunks. Used by one task at a time; ``close()`` ends it.
public protocol BlobReader: Sendable {
    /// The attachment's metadata.
    var metadata: AttachmentMetadata { get }

    /// The next chunk of at most `maxBytes` (at least 1), or `nil` at the end.
    func next(maxBytes: Int) async throws(DocError) -> ByteBuffer?

    /// Ends the reading. Idempotent.
    func close() async
}

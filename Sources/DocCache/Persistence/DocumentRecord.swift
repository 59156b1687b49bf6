internal import DocModel

/// The stored form of a document in the remote document cache and in the overlays: a format
/// byte, a flags byte, one zigzag integer (the read time of a remote document, the largest
/// batch id of an overlay) and the document in DocModel's binary encoding.
///
/// Flags: bit 0 carries `NoDocument.hasLocalMutations`, which DocModel's binary encoding does
/// not keep (an overlay of a pending delete is a no-document with local mutations). Bit 1
/// (overlays only, schema 2) marks a **batch reference**: the record ends after the integer,
/// and the document is what the batch with that id makes of no document (the overlay of a
/// document whose only pending write replaced it with a one-write batch, which holds the
/// same data: the overlay does not store it a second time). Other bits must be zero.
enum DocumentRecord {
    /// The format byte of a document record.
    static let format: UInt8 = 1
    /// The flag bit for `NoDocument.hasLocalMutations`.
    static let noDocumentLocalMutations: UInt8 = 0x01
    /// The flag bit of a batch reference.
    static let batchReference: UInt8 = 0x02

    /// Encodes `document` with the record's integer (`extra`).
    static func encode(_ document: MaybeDocument, extra: Int64) -> [UInt8] {
        var w = ByteWriter(format: format, capacity: 12)
        var flags: UInt8 = 0
        if case .noDocument(let d) = document, d.hasLocalMutations { flags |= noDocumentLocalMutations }
        w.byte(flags)
        w.zigzag(extra)
        return document.binaryEncoded(after: w.bytes)
    }

    /// Encodes a batch reference to the batch `batchID`.
    static func encodeBatchReference(_ batchID: Int64) -> [UInt8] {
        var w = ByteWriter(format: format, capacity: 10)
        w.byte(batchReference)
        w.zigzag(batchID)
        return w.bytes
    }

    /// Decodes a record: the document and the record's integer. A batch reference is
    /// refused (as unknown flags): only overlays may hold one, see ``decodeOverlay(_:record:)``.
    static func decode(_ bytes: [UInt8], record: String) throws(DocError) -> (MaybeDocument, Int64) {
        let (document, extra) = try decode(bytes, record: record, allowedFlags: noDocumentLocalMutations)
        guard let document else { preconditionFailure("a batch reference was decoded without being allowed") }
        return (document, extra)
    }

    /// Decodes an overlay record: the document (`nil` for a batch reference) and the
    /// record's integer.
    /// With a `projection`, a document holds only those top-level fields
    /// (``MaybeDocument/init(binary:projecting:)``).
    static func decodeOverlay(_ bytes: [UInt8], record: String, projecting projection: FieldProjection? = nil) throws(DocError) -> (MaybeDocument?, Int64) {
        try decode(bytes, record: record, allowedFlags: noDocumentLocalMutations | batchReference, projection: projection)
    }

    private static func decode(
        _ bytes: [UInt8], record: String, allowedFlags: UInt8, projection: FieldProjection? = nil
    ) throws(DocError) -> (MaybeDocument?, Int64) {
        var r = ByteReader(bytes, record: record)
        let f = try r.byte()
        guard f == format else { throw r.fail("unsupported format \(f) (this build reads format \(format))", at: 0) }
        let flagsAt = r.offset
        let flags = try r.byte()
        guard flags & ~allowedFlags == 0 else { throw r.fail("unknown flags \(flags)", at: flagsAt) }
        let extra = try r.zigzag()
        if flags & batchReference != 0 {
            guard flags == batchReference else { throw r.fail("a batch reference with other flags (\(flags))", at: flagsAt) }
            try r.finish()
            return (nil, extra)
        }
        let bodyAt = r.offset
        var document: MaybeDocument
        do {
            document = try MaybeDocument(binary: r.rest(), projecting: projection)
        } catch {
            throw r.fail("bad document (\(error.message))", at: bodyAt)
        }
        if flags & noDocumentLocalMutations != 0 {
            guard case .noDocument(var d) = document else {
                throw r.fail("local-mutations flag on a record that is not a no-document", at: flagsAt)
            }
            d.hasLocalMutations = true
            document = .noDocument(d)
        }
        return (document, extra)
    }
}

internal import DocModel

/// The stored form of a document in the remote document cache and in the overlays: a format
/// byte, a flags byte, one zigzag integer (the read time of a remote document, the largest
/// batch id of an overlay) and the document in DocModel's binary encoding.
///
/// Flags: bit 0 carries `NoDocument.hasLocalMutations`, which DocModel's binary encoding does
/// not keep (an overlay of a pending delete is a no-document with local mutations); other
/// bits must be zero.
enum DocumentRecord {
    /// The format byte of a document record.
    static let format: UInt8 = 1
    /// The flag bit for `NoDocument.hasLocalMutations`.
    static let noDocumentLocalMutations: UInt8 = 0x01

    /// Encodes `document` with the record's integer (`extra`). `encodedData`, when given, is
    /// `binaryEncoded()` of the document's data (see `MaybeDocument.binaryEncoded(after:encodedData:)`).
    static func encode(_ document: MaybeDocument, extra: Int64, encodedData: [UInt8]? = nil) -> [UInt8] {
        var w = ByteWriter(format: format, capacity: 12)
        var flags: UInt8 = 0
        if case .noDocument(let d) = document, d.hasLocalMutations { flags |= noDocumentLocalMutations }
        w.byte(flags)
        w.zigzag(extra)
        return document.binaryEncoded(after: w.bytes, encodedData: encodedData)
    }

    /// Decodes a record: the document and the record's integer.
    static func decode(_ bytes: [UInt8], record: String) throws(DocError) -> (MaybeDocument, Int64) {
        var r = ByteReader(bytes, record: record)
        let f = try r.byte()
        guard f == format else { throw r.fail("unsupported format \(f) (this build reads format \(format))", at: 0) }
        let flagsAt = r.offset
        let flags = try r.byte()
        guard flags & ~noDocumentLocalMutations == 0 else { throw r.fail("unknown flags \(flags)", at: flagsAt) }
        let extra = try r.zigzag()
        let bodyAt = r.offset
        var document: MaybeDocument
        do {
            document = try MaybeDocument(binary: r.rest())
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

package import DocModel

/// The bundles a store has loaded (key space 0x60, by bundle id: the metadata, so a bundle
/// already loaded is not loaded again) and the named queries they brought (key space 0x61, by
/// name; a later bundle's query of the same name replaces it). See docs/bundles.md.
package struct BundleCache {
    package init() {}

    /// The bundle record: `format, zigzag create time µs, varint version, varint total
    /// documents, zigzag total bytes, string id`.
    static let bundleFormat: UInt8 = 1
    /// The named-query record: `format`, then the JSON body of the `namedQuery` element
    /// (``BundleNamedQuery/encodedJSON``), so the stored form is the bundle format itself.
    static let namedQueryFormat: UInt8 = 1

    /// The metadata of the bundle `id` as last loaded, or `nil`.
    package func metadata(of id: String, in txn: PersistenceTransaction) throws(DocError) -> BundleMetadata? {
        guard let raw = try txn.get(KeySchema.bundle(id)) else { return nil }
        var r = ByteReader(raw, record: "bundle metadata")
        guard try r.byte() == Self.bundleFormat else { throw r.fail("unknown bundle record format") }
        let createTime = SnapshotVersion(microseconds: try r.zigzag())
        let version = Int(try r.varint())
        let documents = Int(try r.varint())
        let bytes = try r.zigzag()
        let storedID = try r.string()
        try r.finish()
        guard storedID == id else { throw r.fail("the record of bundle \"\(id)\" names \"\(storedID)\"") }
        return BundleMetadata(id: id, createTime: createTime, version: version, totalDocuments: documents, totalBytes: bytes)
    }

    package func save(_ metadata: BundleMetadata, in txn: PersistenceTransaction) {
        var w = ByteWriter(format: Self.bundleFormat)
        w.zigzag(metadata.createTime.microseconds)
        w.varint(UInt64(metadata.version))
        w.varint(UInt64(metadata.totalDocuments))
        w.zigzag(metadata.totalBytes)
        w.string(metadata.id)
        txn.put(KeySchema.bundle(metadata.id), w.bytes)
    }

    /// The named query `name`, or `nil`.
    package func namedQuery(_ name: String, in txn: PersistenceTransaction) throws(DocError) -> BundleNamedQuery? {
        guard let raw = try txn.get(KeySchema.namedQuery(name)) else { return nil }
        guard raw.first == Self.namedQueryFormat else {
            throw DocError(.dataLoss, "corrupt stored named query: unknown format", at: "named query \"\(name)\"")
        }
        do {
            return try BundleNamedQuery(encodedJSON: Array(raw.dropFirst()))
        } catch {
            throw DocError(.dataLoss, "corrupt stored named query: \(error.message)", at: "named query \"\(name)\"")
        }
    }

    package func save(_ query: BundleNamedQuery, in txn: PersistenceTransaction) {
        txn.put(KeySchema.namedQuery(query.name), [Self.namedQueryFormat] + query.encodedJSON)
    }
}

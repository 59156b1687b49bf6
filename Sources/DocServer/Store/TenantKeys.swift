internal import DocModel

/// The LevelDB key layout of ``LevelDBServerStore``, one tenant at a time.
///
/// Every key of a tenant starts with the tenant prefix `0x01 ‖ string(tenant)` (ordered
/// code: the name escaped and terminated, so no tenant's prefix is a prefix of another's),
/// then a space byte:
///
/// | space | key after the prefix                              | value                         |
/// |-------|---------------------------------------------------|-------------------------------|
/// | `m`   | (none)                                            | tenant state (binary `Value`) |
/// | `d`   | path(collection) ‖ string(document id)            | `Document` (binary)           |
/// | `g`   | string(collection id) ‖ path(document)            | empty: collection-group index |
/// | `l`   | int64(version) ‖ path(document)                   | `MaybeDocument` (binary)      |
/// | `o`   | string(client id) ‖ int64(batch id)               | batch outcome (binary `Value`) |
/// | `p`   | int64(recorded at) ‖ string(client id) ‖ int64(batch id) | empty: outcome age index |
///
/// Keys outside every tenant start with `0x00` (the store's format version). A
/// `TenantKeys` can only build keys inside its tenant's prefix: that is what makes tenant
/// isolation structural.
struct TenantKeys: Sendable {
    /// The tenant's prefix.
    let prefix: [UInt8]

    static let tenantMarker: UInt8 = 0x01
    static let globalMarker: UInt8 = 0x00

    init(_ tenant: TenantID) {
        var e = KeyEncoder(prefix: [Self.tenantMarker])
        e.append(string: tenant.rawValue)
        prefix = e.bytes
    }

    private func space(_ tag: Character) -> KeyEncoder {
        KeyEncoder(prefix: prefix + [tag.asciiValue!])
    }

    /// Every key of the tenant.
    var all: [UInt8] { prefix }

    var state: [UInt8] { space("m").bytes }

    // MARK: Documents

    func document(_ key: DocumentKey) -> [UInt8] {
        var e = space("d")
        e.append(path: key.collectionPath)
        e.append(string: key.documentID)
        return e.bytes
    }

    /// The prefix of the documents directly in `collection` (not those of sub-collections).
    func collection(_ collection: ResourcePath) -> [UInt8] {
        var e = space("d")
        e.append(path: collection)
        return e.bytes
    }

    func groupEntry(_ key: DocumentKey) -> [UInt8] {
        var e = space("g")
        e.append(string: key.collectionGroup)
        e.append(key: key)
        return e.bytes
    }

    /// The prefix of the group index entries of documents in collections named `group`.
    func group(_ group: String) -> [UInt8] {
        var e = space("g")
        e.append(string: group)
        return e.bytes
    }

    /// Reads the document key back from a group index entry.
    func documentKey(fromGroupEntry bytes: [UInt8], group: String) throws(DocError) -> DocumentKey {
        var d = KeyDecoder(bytes, offset: self.group(group).count)
        let key = try d.readKey()
        try d.finish()
        return key
    }

    // MARK: Change log

    var changeLogSpace: [UInt8] { space("l").bytes }

    func changeLog(_ version: SnapshotVersion, _ key: DocumentKey) -> [UInt8] {
        var e = space("l")
        e.append(int64: version.microseconds)
        e.append(key: key)
        return e.bytes
    }

    /// The first change log key with a version of at least `version`.
    func changeLogStart(_ version: SnapshotVersion) -> [UInt8] {
        var e = space("l")
        e.append(int64: version.microseconds)
        return e.bytes
    }

    // MARK: Outcomes

    func outcome(_ batch: BatchKey) -> [UInt8] {
        var e = space("o")
        e.append(string: batch.clientID)
        e.append(int64: Int64(batch.batchID))
        return e.bytes
    }

    var outcomeAgeSpace: [UInt8] { space("p").bytes }

    func outcomeAge(_ recordedAt: Int64, _ batch: BatchKey) -> [UInt8] {
        var e = space("p")
        e.append(int64: recordedAt)
        e.append(string: batch.clientID)
        e.append(int64: Int64(batch.batchID))
        return e.bytes
    }

    func outcomeAgeStart(_ recordedAt: Int64) -> [UInt8] {
        var e = space("p")
        e.append(int64: recordedAt)
        return e.bytes
    }

    /// Reads the batch back from an outcome age entry.
    func batch(fromAgeEntry bytes: [UInt8]) throws(DocError) -> BatchKey {
        var d = KeyDecoder(bytes, offset: outcomeAgeSpace.count)
        _ = try d.readInt64()
        let client = try d.readString()
        let batch = try d.readInt64()
        try d.finish()
        return BatchKey(clientID: client, batchID: Int(batch))
    }
}

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
/// | `i`   | path(collection) ‖ string(field) ‖ value encoding ‖ string(document id) | empty: field value index |
/// | `a`   | path(collection) ‖ string(field) ‖ element encoding ‖ string(document id) | empty: array element index |
/// | `c`   | path(collection) ‖ string(index field) ‖ entry value ‖ string(document id) | empty: composite index |
/// | `u`   | path(collection) ‖ string(field) ‖ int64(kind) ‖ string(document id) | empty: value too large to index |
/// | `r`   | string(attachment id) ‖ key(document)             | empty: a live document refers to the attachment |
///
/// The query index spaces (`i`, `a`, `u`; layout 2) hold the rows of ``DocumentIndexEntries``
/// for every stored document: field paths in canonical form, values in their index encoding
/// (raw: it is self-delimiting and orders bytewise as `Value.compare`), so a range of values
/// of one field is one key range, in (value, document id) order. The space `c` holds the rows
/// of the declared composite indexes (``DocModel/CompositeIndex/entry(of:)``, under the
/// index's ``DocModel/CompositeIndex/entryField``), and `u` their unindexed markers (kind
/// ``DocModel/IndexKind/composite``); ``LevelDBCompositeIndexes`` builds and drops them. The
/// space `r` (layout 3) holds one row per attachment a live document (not a tombstone) refers
/// to, so the attachment collector asks whether an attachment is referenced with one seek.
///
/// Keys outside every tenant start with `0x00` (the store's format version and the list of
/// built composite indexes). A
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

    /// The documents of every collection.
    var documentSpace: [UInt8] { space("d").bytes }

    /// The prefix of the group index entries of documents in collections named `group` at or
    /// below `parent`: the parent's path without its end marker (a path's encoding is its
    /// segments, each terminated, then one end byte), so it prefixes exactly the paths that
    /// extend the parent.
    func group(_ group: String, under parent: ResourcePath) -> [UInt8] {
        var e = KeyEncoder(prefix: self.group(group))
        e.append(path: parent)
        return Array(e.bytes.dropLast())
    }

    // MARK: Query indexes

    /// The keys of one kind of field index of `collection`, before the field.
    private func indexSpace(_ collection: ResourcePath, kind: IndexKind) -> KeyEncoder {
        var e = space(Self.indexSpaceName(kind))
        e.append(path: collection)
        return e
    }

    /// The space of one kind of index entry.
    private static func indexSpaceName(_ kind: IndexKind) -> Character {
        switch kind {
        case .value: "i"
        case .arrayElement: "a"
        case .composite: "c"
        }
    }

    /// Every composite index row of the tenant (space `c`).
    var compositeIndexSpace: [UInt8] { space("c").bytes }

    /// Every unindexed marker of the tenant (space `u`).
    var unindexedSpace: [UInt8] { space("u").bytes }

    /// Reads the index field of a row in ``compositeIndexSpace``, and for a marker in
    /// ``unindexedSpace`` its kind too (`nil` for a row of `c`).
    func indexField(ofRow bytes: [UInt8], marker: Bool) throws(DocError) -> (field: String, kind: IndexKind?) {
        var d = KeyDecoder(bytes, offset: prefix.count + 1)
        _ = try d.readPath()
        let field = try d.readString()
        guard marker else { return (field, nil) }
        return (field, IndexKind(rawValue: try d.readInt64()))
    }

    /// The prefix of the entries of one field index of `collection`; an entry appends the
    /// value's encoding and the document id.
    func fieldIndex(_ collection: ResourcePath, field: String, kind: IndexKind) -> [UInt8] {
        var e = indexSpace(collection, kind: kind)
        e.append(string: field)
        return e.bytes
    }

    /// The entry of `documentID` with value encoding `value` in the index at `prefix` (from
    /// ``fieldIndex(_:field:kind:)``).
    func fieldIndexEntry(_ prefix: [UInt8], value: [UInt8], documentID: String) -> [UInt8] {
        var e = KeyEncoder(prefix: prefix)
        e.append(raw: value)
        e.append(string: documentID)
        return e.bytes
    }

    /// Reads the value encoding of an entry of the index at `prefix`, and where its encoded
    /// document id starts (the rest of the key), without decoding the id.
    func indexEntryValue(_ bytes: [UInt8], prefix: [UInt8]) throws(DocError) -> (value: [UInt8], idStart: Int) {
        var d = KeyDecoder(bytes, offset: prefix.count)
        _ = try d.readIndexValue()
        return (Array(bytes[prefix.count..<d.offset]), d.offset)
    }

    /// The prefix of the documents of `collection` whose value (or an array element) at
    /// `field` is too large to index.
    func unindexed(_ collection: ResourcePath, field: String, kind: IndexKind) -> [UInt8] {
        var e = space("u")
        e.append(path: collection)
        e.append(string: field)
        e.append(int64: kind.rawValue)
        return e.bytes
    }

    /// Reads the document id back from an entry under an ``unindexed(_:field:kind:)`` prefix.
    func documentID(fromUnindexedEntry bytes: [UInt8], prefix: [UInt8]) throws(DocError) -> String {
        var d = KeyDecoder(bytes, offset: prefix.count)
        let id = try d.readString()
        try d.finish()
        return id
    }

    /// Every index row of `document`, each once: its query index rows (layout 2), with its
    /// rows in `compositeIndexes`, and its attachment references (layout 3).
    func indexRows(of document: Document, compositeIndexes: [CompositeIndex] = []) -> [[UInt8]] {
        var rows = rows(of: DocumentIndexEntries(document, compositeIndexes: compositeIndexes), key: document.key)
        for id in document.keptAttachments { rows.append(attachmentReference(id, document.key)) }
        return rows
    }

    /// The rows of `document` in `indexes` alone (space `c`, or a marker in `u`): what
    /// building those indexes writes for it.
    func compositeRows(of document: Document, in indexes: [CompositeIndex]) -> [[UInt8]] {
        rows(of: DocumentIndexEntries(compositeRowsOf: document, in: indexes), key: document.key)
    }

    /// The keys of `entries`, the entries of the document `key`.
    private func rows(of entries: DocumentIndexEntries, key: DocumentKey) -> [[UInt8]] {
        let collection = key.collectionPath
        let valueSpace = indexSpace(collection, kind: .value), elementSpace = indexSpace(collection, kind: .arrayElement)
        // Every row ends with the document id: encoded once.
        var encodedID = KeyEncoder()
        encodedID.append(string: key.documentID)
        var rows: [[UInt8]] = []
        rows.reserveCapacity(entries.entries.count + entries.unindexed.count)
        for entry in entries.entries {
            var e = switch entry.kind {
            case .value: valueSpace
            case .arrayElement: elementSpace
            case .composite: indexSpace(collection, kind: .composite)   // few per document
            }
            e.append(string: entry.field)
            e.append(raw: entry.value)
            e.append(raw: encodedID.bytes)
            rows.append(e.bytes)
        }
        for marker in entries.unindexed {
            var e = KeyEncoder(prefix: unindexed(collection, field: marker.field, kind: marker.kind))
            e.append(raw: encodedID.bytes)
            rows.append(e.bytes)
        }
        return rows
    }

    // MARK: Attachment references

    /// The prefix of the reference rows of attachment `id`: one per live document that refers
    /// to it.
    func attachmentReferences(_ id: AttachmentID) -> [UInt8] {
        var e = space("r")
        e.append(string: id.hex)
        return e.bytes
    }

    /// The reference rows of `document`, one per attachment its data refers to; none for a
    /// tombstone (the attachment collector does not count them).
    func attachmentReferenceRows(of document: Document) -> [[UInt8]] {
        document.keptAttachments.map { attachmentReference($0, document.key) }
    }

    /// The row saying that the document `key` refers to attachment `id`.
    private func attachmentReference(_ id: AttachmentID, _ key: DocumentKey) -> [UInt8] {
        var e = KeyEncoder(prefix: attachmentReferences(id))
        e.append(key: key)
        return e.bytes
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

    /// The prefix of every outcome key of `clientID`'s batches.
    func outcomes(of clientID: String) -> [UInt8] {
        var e = space("o")
        e.append(string: clientID)
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

internal import DocModel
internal import DocServer
internal import PostgresNIO

/// The rows of `doccache_field_index` for documents: what ``DocumentIndexEntries`` yields for
/// each (the rule shared with the embedded store and the client), keyed by the document's
/// collection (``DocumentKeyBytes/collectionPrefix(_:)``) and id
/// (``DocumentKeyBytes/documentID(_:)``: `collection ‖ doc_id` is the document's `doc_key`, and
/// bytewise order is key order within a collection).
///
/// `kind` is ``IndexKind``'s raw value for an entry (0 value, 1 array element, 4 composite)
/// and 2 + that for an ``DocumentIndexEntries/Unindexed`` marker (2, 3, 6), whose `value` is
/// empty.
///
/// Kind 8 (schema version 4, ``referenceKind``) is an attachment reference of a live document
/// (not a tombstone), keyed for the collector's question "does any document refer to this
/// attachment?": collection and field empty (no collection's prefix is empty), `value` the
/// attachment id's hex, `doc_id` the document's whole `doc_key`. So one attachment's rows are
/// one range of the primary key, whatever collections refer to it.
struct FieldIndexRows: Sendable {
    /// One row without its tenant, collection and document: (field, kind, value).
    struct Entry: Hashable, Sendable {
        var field: [UInt8]
        var kind: Int16
        var value: [UInt8]
    }

    private(set) var collections: [ByteBuffer] = []
    private(set) var fields: [ByteBuffer] = []
    private(set) var kinds: [Int16] = []
    private(set) var values: [ByteBuffer] = []
    private(set) var documentIDs: [ByteBuffer] = []

    var isEmpty: Bool { kinds.isEmpty }
    var count: Int { kinds.count }

    /// The kind column of an attachment reference.
    static let referenceKind: Int16 = 8

    /// The kind column of an unindexed marker of `kind`.
    static func unindexedKind(_ kind: IndexKind) -> Int16 { 2 + Int16(kind.rawValue) }

    /// The rows of one document, without its key, with its rows in `compositeIndexes`.
    static func entries(of document: Document, compositeIndexes: [CompositeIndex] = []) -> Set<Entry> {
        entries(DocumentIndexEntries(document, compositeIndexes: compositeIndexes))
    }

    /// The rows of one document in `indexes` alone: what building those indexes inserts.
    static func compositeEntries(of document: Document, in indexes: [CompositeIndex]) -> Set<Entry> {
        entries(DocumentIndexEntries(compositeRowsOf: document, in: indexes))
    }

    /// The rows of `index`, entries and markers.
    private static func entries(_ index: DocumentIndexEntries) -> Set<Entry> {
        var entries = Set<Entry>(minimumCapacity: index.entries.count + index.unindexed.count)
        for entry in index.entries {
            entries.insert(Entry(field: Array(entry.field.utf8), kind: Int16(entry.kind.rawValue), value: entry.value))
        }
        for marker in index.unindexed {
            entries.insert(Entry(field: Array(marker.field.utf8), kind: unindexedKind(marker.kind), value: []))
        }
        return entries
    }

    /// Adds `entries` of the document `key`.
    mutating func add(_ entries: some Sequence<Entry>, of key: DocumentKey) {
        let collection = ByteBuffer(bytes: DocumentKeyBytes.collectionPrefix(key.collectionPath))
        let id = ByteBuffer(bytes: DocumentKeyBytes.documentID(key.documentID))
        for entry in entries {
            collections.append(collection)
            fields.append(ByteBuffer(bytes: entry.field))
            kinds.append(entry.kind)
            values.append(ByteBuffer(bytes: entry.value))
            documentIDs.append(id)
        }
    }

    /// Adds the reference rows of the document `key` to `ids`.
    mutating func addReferences(_ ids: some Sequence<AttachmentID>, of key: DocumentKey) {
        let document = ByteBuffer(bytes: DocumentKeyBytes.key(key))
        for id in ids {
            collections.append(ByteBuffer())
            fields.append(ByteBuffer())
            kinds.append(Self.referenceKind)
            values.append(ByteBuffer(string: id.hex))
            documentIDs.append(document)
        }
    }

    /// The rows to delete and to insert when `key` goes from `old` to `new` (`nil`: no
    /// document): only the entries that differ, `compositeIndexes`' and the attachment
    /// references included.
    static func changes(of key: DocumentKey, from old: Document?, to new: Document?, compositeIndexes: [CompositeIndex],
                        deleting: inout FieldIndexRows, inserting: inout FieldIndexRows) {
        let before = old.map { entries(of: $0, compositeIndexes: compositeIndexes) } ?? []
        let after = new.map { entries(of: $0, compositeIndexes: compositeIndexes) } ?? []
        deleting.add(before.subtracting(after), of: key)
        inserting.add(after.subtracting(before), of: key)
        let referencedBefore = old?.keptAttachments ?? [], referencedAfter = new?.keptAttachments ?? []
        deleting.addReferences(referencedBefore.subtracting(referencedAfter), of: key)
        inserting.addReferences(referencedAfter.subtracting(referencedBefore), of: key)
    }
}

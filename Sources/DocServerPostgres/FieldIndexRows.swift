internal import DocModel
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

    /// The rows to delete and to insert when `key` goes from `old` to `new` (`nil`: no
    /// document): only the entries that differ, `compositeIndexes`' included.
    static func changes(of key: DocumentKey, from old: Document?, to new: Document?, compositeIndexes: [CompositeIndex],
                        deleting: inout FieldIndexRows, inserting: inout FieldIndexRows) {
        let before = old.map { entries(of: $0, compositeIndexes: compositeIndexes) } ?? []
        let after = new.map { entries(of: $0, compositeIndexes: compositeIndexes) } ?? []
        deleting.add(before.subtracting(after), of: key)
        inserting.add(after.subtracting(before), of: key)
    }
}

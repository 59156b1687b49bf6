package import DocModel

/// One end of a field-index range: a value and whether documents with exactly that value are
/// in the range.
package struct IndexBound: Sendable, Hashable {
    /// The value at the end of the range (compared in Firestore's cross-type order).
    package var value: Value
    /// Whether documents whose field equals ``value`` are included.
    package var inclusive: Bool

    /// Creates a bound.
    package init(value: Value, inclusive: Bool) {
        self.value = value
        self.inclusive = inclusive
    }
}

/// Computes the local query index rows of a document (the field index, the array index and
/// the unindexed-value markers, see `KeySchema.swift`) from what the document contributes to
/// any query index (``DocumentIndexEntries``, shared with the server's stores): a field-index
/// row per (field, value) entry, an array-index row per (field, element) entry, and an
/// unindexed-value row per (field, kind) whose value is too large to index, so a query engine
/// can detect that the index is incomplete for the field and fetch those documents itself.
enum FieldIndexer {
    /// Every index row key of the found document `document`, each once (a row names its
    /// field and value, and a document has one value per field and each array element once).
    static func entries(for document: Document) -> [[UInt8]] {
        let collection = document.key.collectionPath
        let id = document.key.documentID
        func base(_ table: KeySchema.Table) -> KeyEncoder {
            var k = KeyEncoder(prefix: table.prefix)
            k.append(path: collection)
            return k
        }
        let fieldBase = base(.fieldIndex), arrayBase = base(.arrayIndex)
        // Every row ends with the document id: encoded once.
        var encodedID = KeyEncoder()
        encodedID.append(string: id)
        let index = DocumentIndexEntries(document)
        var rows: [[UInt8]] = []
        rows.reserveCapacity(index.entries.count + index.unindexed.count)
        for entry in index.entries {
            var k = entry.kind == .value ? fieldBase : arrayBase
            k.append(string: entry.field)
            k.append(raw: entry.value)
            k.append(raw: encodedID.bytes)
            rows.append(k.bytes)
        }
        for marker in index.unindexed {
            var k = base(.unindexedValues)
            k.append(string: marker.field)
            k.append(int64: marker.kind.rawValue)
            k.append(raw: encodedID.bytes)
            rows.append(k.bytes)
        }
        return rows
    }
}

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
/// the unindexed-value markers, see `KeySchema.swift`).
///
/// Every field path that holds a value gets a field-index entry keyed by the value's index
/// encoding: top-level fields and, descending into maps (not arrays), nested fields, maps and
/// arrays included as whole values (so `orderBy` on any field finds every document that has
/// it). Every element of an array field also gets an array-index entry (equal elements once).
/// A value whose index encoding is longer than ``maxEncodedValueBytes`` gets no entry; an
/// unindexed-value row records the (collection, field, document) instead, so a query engine
/// can detect that the index is incomplete for the field and fetch those documents itself.
enum FieldIndexer {
    /// The longest index-encoded value that is indexed (Firestore's index-entry value cap).
    static let maxEncodedValueBytes = 1_500

    /// The kind component of an unindexed-value row for a field value.
    static let unindexedFieldKind: Int64 = 0
    /// The kind component of an unindexed-value row for an array element.
    static let unindexedArrayKind: Int64 = 1

    /// Every index row key of the found document `document`.
    static func entries(for document: Document) -> Set<[UInt8]> {
        let collection = document.key.collectionPath
        let id = document.key.documentID
        var builder = Builder(collection: collection, documentID: id)
        builder.walk(document.data.fields, prefix: [])
        return builder.entries
    }

    /// Accumulates the rows of one document.
    private struct Builder {
        let fieldBase: KeyEncoder
        let arrayBase: KeyEncoder
        let unindexedBase: KeyEncoder
        let documentID: String
        var entries: Set<[UInt8]> = []

        init(collection: ResourcePath, documentID: String) {
            func base(_ table: KeySchema.Table) -> KeyEncoder {
                var k = KeyEncoder(prefix: table.prefix)
                k.append(path: collection)
                return k
            }
            fieldBase = base(.fieldIndex)
            arrayBase = base(.arrayIndex)
            unindexedBase = base(.unindexedValues)
            self.documentID = documentID
        }

        mutating func walk(_ fields: [String: Value], prefix: [String]) {
            for (name, value) in fields {
                let segments = prefix + [name]
                let field = FieldPath(unchecked: segments).canonicalString
                let encoded = value.indexEncoded()
                if encoded.count <= maxEncodedValueBytes {
                    var k = fieldBase
                    k.append(string: field)
                    k.append(raw: encoded)
                    k.append(string: documentID)
                    entries.insert(k.bytes)
                } else {
                    insertUnindexed(field: field, kind: unindexedFieldKind)
                }
                switch value {
                case .map(let m) where !value.isServerTimestamp:
                    walk(m, prefix: segments)
                case .array(let elements):
                    for element in elements {
                        let e = element.indexEncoded()
                        if e.count <= maxEncodedValueBytes {
                            var k = arrayBase
                            k.append(string: field)
                            k.append(raw: e)
                            k.append(string: documentID)
                            entries.insert(k.bytes)
                        } else {
                            insertUnindexed(field: field, kind: unindexedArrayKind)
                        }
                    }
                default:
                    break
                }
            }
        }

        private mutating func insertUnindexed(field: String, kind: Int64) {
            var k = unindexedBase
            k.append(string: field)
            k.append(int64: kind)
            k.append(string: documentID)
            entries.insert(k.bytes)
        }
    }
}

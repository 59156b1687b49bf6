/// What one document contributes to the query indexes of its collection — the same entries for
/// the client's local indexes (`FieldIndexer` in DocCache, docs/persistence.md "Local query
/// indexes") and every server store (LevelDB key spaces, PostgreSQL tables), computed from the
/// document alone, so client and server index alike by construction.
///
/// Every field path that holds a value gets a ``IndexKind/value`` entry keyed by the
/// value's index encoding (``Value/indexEncoded(descending:)``, whose bytewise order is
/// `Value.compare` order) — top-level fields and, descending into maps but not arrays, nested
/// fields, with maps and arrays also indexed as whole values, so ordering by any field finds every
/// document that has it. Every element of an array field gets an ``IndexKind/arrayElement``
/// entry (equal elements once).
///
/// A value whose encoding is longer than ``maxEncodedValueBytes`` gets no entry (a btree row
/// has a size limit, and such values are never worth a range scan): an ``Unindexed`` marker
/// records the (field, kind) instead, and a plan that reads a field's index merges in the
/// documents marked for it, so results stay exact.
///
/// Tombstones are indexed like any document (`includeDeleted` queries need them); the document
/// key is not (it is the document's own position in its collection).
package struct DocumentIndexEntries: Sendable, Hashable {
    /// One index entry of the document.
    package struct Entry: Sendable, Hashable {
        /// Which index of the field.
        package var kind: IndexKind
        /// The field path in canonical form (``FieldPath/canonicalString``).
        package var field: String
        /// The index encoding of the value (or array element).
        package var value: [UInt8]

        package init(kind: IndexKind, field: String, value: [UInt8]) {
            self.kind = kind
            self.field = field
            self.value = value
        }
    }

    /// A field of the document whose value (``IndexKind/value``) or one of whose array
    /// elements (``IndexKind/arrayElement``) is too large to index.
    package struct Unindexed: Sendable, Hashable {
        package var kind: IndexKind
        /// The field path in canonical form.
        package var field: String

        package init(kind: IndexKind, field: String) {
            self.kind = kind
            self.field = field
        }
    }

    /// The longest index-encoded value that gets an entry (Firestore's index-entry value cap;
    /// comfortably below PostgreSQL's btree row limit of about 2,700 bytes).
    package static let maxEncodedValueBytes = 1_500

    /// The entries, each (kind, field, value) once.
    package private(set) var entries: [Entry] = []
    /// The unindexed markers, each (kind, field) once.
    package private(set) var unindexed: [Unindexed] = []

    /// The entries of `document` (its data; the key does not matter).
    package init(_ document: Document) {
        walk(document.data.fields, prefix: "")
    }

    /// The entries of `document`, and its rows in those of `compositeIndexes` that cover its
    /// collection (``IndexKind/composite``; see ``CompositeIndex/entry(of:)``): what a server
    /// store keeps for it.
    package init(_ document: Document, compositeIndexes: [CompositeIndex]) {
        self.init(document)
        let composite = DocumentIndexEntries(compositeRowsOf: document, in: compositeIndexes)
        entries += composite.entries
        unindexed += composite.unindexed
    }

    /// The rows of `document` in `indexes` alone (what building those indexes writes for it).
    package init(compositeRowsOf document: Document, in indexes: [CompositeIndex]) {
        for index in indexes {
            switch index.entry(of: document) {
            case .value(let encoded)?:
                entries.append(Entry(kind: .composite, field: index.entryField.canonicalString, value: encoded))
            case .tooLarge?:
                unindexed.append(Unindexed(kind: .composite, field: index.entryField.canonicalString))
            case nil:
                break
            }
        }
    }

    /// `prefix`: the canonical form of the map's field path ("" for the document), which each
    /// field's extends by one segment (the same string as ``FieldPath/canonicalString`` of
    /// the field's path, without building the path).
    private mutating func walk(_ fields: [String: Value], prefix: String) {
        for (name, value) in fields {
            let segment = FieldPath.canonicalSegment(name)
            let field = prefix.isEmpty ? segment : prefix + "." + segment
            add(.value, field, value.indexEncoded())
            switch value {
            case .map(let map) where !value.isServerTimestamp:
                walk(map, prefix: field)
            case .array(let elements):
                var seen = SeenEncodings(count: elements.count)
                for element in elements {
                    let encoded = element.indexEncoded()
                    if seen.insert(encoded) { add(.arrayElement, field, encoded) }
                }
            default:
                break
            }
        }
    }

    private mutating func add(_ kind: IndexKind, _ field: String, _ encoded: [UInt8]) {
        if encoded.count > Self.maxEncodedValueBytes {
            let marker = Unindexed(kind: kind, field: field)
            if !unindexed.contains(marker) { unindexed.append(marker) }
        } else {
            entries.append(Entry(kind: kind, field: field, value: encoded))
        }
    }
}

/// The distinct encodings among an array's elements: a short array's few are compared one by
/// one (no hashing), a longer one's hashed.
private struct SeenEncodings {
    private var list: [[UInt8]] = []
    private var set: Set<HashedBytes>?

    init(count: Int) {
        if count > 8 { set = Set(minimumCapacity: count) }
    }

    /// Whether `encoded` was not seen before (and is now).
    mutating func insert(_ encoded: [UInt8]) -> Bool {
        if set != nil { return set!.insert(HashedBytes(encoded)).inserted }
        if list.contains(encoded) { return false }
        list.append(encoded)
        return true
    }
}

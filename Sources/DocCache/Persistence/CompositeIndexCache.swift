package import DocModel
internal import LevelDB

/// A declared composite index as the store holds it: its definition, and whether every cached
/// document has its row (only a complete index answers queries).
package struct StoredCompositeIndex: Sendable, Hashable {
    /// The definition.
    package var index: CompositeIndex
    /// Whether the backfill has given every cached document its row.
    package var isComplete: Bool
}

/// The declared composite indexes of the cache (`KeySchema` tables 0x16–0x18): their
/// definitions, their rows, and the backfill that gives documents cached before an index was
/// declared their rows.
///
/// Rows of documents written after a declaration are maintained by ``RemoteDocumentCache``
/// with the document (``rows(for:)``), from the moment the index is declared, complete or not.
package final class CompositeIndexCache {
    /// The store state (holds the declared indexes in memory).
    let state: PersistenceState

    init(state: PersistenceState) {
        self.state = state
    }

    /// The record name in decoding errors.
    static let recordName = "composite index definition"
    private static let recordFormat: UInt8 = 1

    /// The declared indexes, complete or not.
    package var declared: [StoredCompositeIndex] { state.compositeIndexes }

    /// The complete indexes over `collectionGroup`, for query planning.
    package func completeIndexes(collectionGroup: String) -> [CompositeIndex] {
        state.compositeIndexes.compactMap { $0.isComplete && $0.index.collectionGroup == collectionGroup ? $0.index : nil }
    }

    // MARK: Rows

    /// The composite-index rows (0x16, or 0x18 for a value too large to index) of the found
    /// document `document` for every declared index over its collection.
    func rows(for document: Document) -> [[UInt8]] {
        guard !state.compositeIndexes.isEmpty else { return [] }
        let group = document.key.collectionGroup
        var out: [[UInt8]] = []
        for stored in state.compositeIndexes where stored.index.collectionGroup == group {
            if let row = Self.row(for: document, in: stored.index) { out.append(row) }
        }
        return out
    }

    /// The row of `document` in `index`: `nil` when the document lacks one of the fields (no
    /// query the index serves can match it), a 0x18 row when a value is too large to index.
    static func row(for document: Document, in index: CompositeIndex) -> [UInt8]? {
        var key = KeyEncoder(prefix: KeySchema.compositePrefix(.compositeIndex, index.id, document.key.collectionPath))
        for field in index.fields {
            guard let value = document.value(at: field.path) else { return nil }
            let encoded = value.indexEncoded(descending: field.direction == .descending)
            guard encoded.count <= DocumentIndexEntries.maxEncodedValueBytes else {
                var marker = KeyEncoder(prefix: KeySchema.compositePrefix(.compositeUnindexed, index.id, document.key.collectionPath))
                marker.append(string: document.key.documentID)
                return marker.bytes
            }
            key.append(raw: encoded)
        }
        key.append(string: document.key.documentID, descending: index.documentIDDirection == .descending)
        return key.bytes
    }

    // MARK: Reading

    /// The rows of the documents directly in `collection` whose row in `index` starts with
    /// `leading` (values of the index's first fields, in order) and whose value of the next
    /// field is within `lower`...`upper` (in value order; none: unbounded), in index order —
    /// or the reverse with `reverse` — from the row of `seed` on when given (that row and
    /// those after it in the direction read).
    /// Lazy: stopping early is cheap. Documents with a value too large to index are not
    /// included (see ``unindexedDocuments(_:collection:space:in:)``). `space` is put in front
    /// of every row key: empty for the remote documents' rows, ``OverlayIndex/space(_:)`` for
    /// a user's overlays'.
    func scan(
        _ index: CompositeIndex, collection: ResourcePath, leading: [Value], lower: IndexBound?, upper: IndexBound?,
        from seed: CompositeIndexMatch.CursorRow? = nil,
        reverse: Bool, space: [UInt8] = [], in txn: PersistenceTransaction
    ) -> DecodingScan<IndexRow> {
        let prefix = space + KeySchema.compositePrefix(.compositeIndex, index.id, collection)
        var from = KeyEncoder(prefix: prefix)
        for (value, field) in zip(leading, index.fields) {
            from.append(indexValue: value, descending: field.direction == .descending)
        }
        // Rows are read from after the leading values, which every row of the scan shares.
        let knownCount = from.bytes.count
        var to = from
        let descending = leading.count < index.fields.count && index.fields[leading.count].direction == .descending
        // A descending field's rows run from its highest value to its lowest.
        let (start, end) = descending ? (upper, lower) : (lower, upper)
        if let start {
            from.append(indexValue: start.value, descending: descending)
            if !start.inclusive { from.appendInfinity() }
        }
        if let end {
            to.append(indexValue: end.value, descending: descending)
            if end.inclusive { to.appendInfinity() }
        } else {
            to.appendInfinity()
        }
        var (first, last) = (from.bytes, to.bytes)
        if let seed {
            var row = KeyEncoder(prefix: prefix)
            for (value, field) in zip(seed.values, index.fields) {
                row.append(indexValue: value, descending: field.direction == .descending)
            }
            row.append(string: seed.key.documentID, descending: index.documentIDDirection == .descending)
            (first, last) = IndexRow.bounds(startingAt: row.bytes, from: first, upTo: last, reverse: reverse)
        }
        return DecodingScan(txn.scan(KeyRange(from: first, upTo: last), reverse: reverse), txn) { entry throws(DocError) -> IndexRow? in
            let (id, idOffset) = try KeySchema.decodeCompositeEntryDocumentID(
                entry.key, prefixCount: knownCount, knownFields: leading.count, index: index)
            return IndexRow(key: DocumentKey(unchecked: collection, id: id), row: entry.key, positionStart: knownCount, idStart: idOffset)
        }
    }

    /// The documents directly in `collection` with a value too large for `index` (usually
    /// none: one seek tells), in `space` as for ``scan(_:collection:leading:lower:upper:reverse:space:in:)``.
    func unindexedDocuments(
        _ index: CompositeIndex, collection: ResourcePath, space: [UInt8] = [], in txn: PersistenceTransaction
    ) throws(DocError) -> [DocumentKey] {
        let prefix = space + KeySchema.compositePrefix(.compositeUnindexed, index.id, collection)
        var out: [DocumentKey] = []
        for entry in txn.scan(prefix: prefix) {
            let id = try KeySchema.decodeTrailingDocumentID(entry.key, prefixCount: prefix.count)
            out.append(DocumentKey(unchecked: collection, id: id))
        }
        if let failure = txn.failure { throw failure }
        return out
    }

    // MARK: Declaring

    /// The declared indexes as stored (read at open).
    static func load(from database: Database, directory: String) throws(DocError) -> [StoredCompositeIndex] {
        let range = KeyRange.prefix(KeySchema.Table.compositeIndexDefinitions.prefix)
        let entries = try withLevelDB(directory, "open") { () throws(LevelDBError) in
            try database.entries(in: range).collect()
        }
        var out: [StoredCompositeIndex] = []
        for entry in entries { out.append(try decode(entry.value)) }
        return out
    }

    /// Makes `indexes` the declared indexes: rows and definitions of indexes no longer
    /// declared are removed, new ones are stored as incomplete (``backfill(maxDocuments:from:in:)``
    /// completes them). Call ``commitDeclared(_:cursor:)`` with the result once the transaction has
    /// committed. `changed`: whether an index was added or removed.
    func declare(_ indexes: [CompositeIndex], in txn: PersistenceTransaction) throws(DocError)
        -> (declared: [StoredCompositeIndex], changed: Bool) {
        var wanted: [String: CompositeIndex] = [:]
        for index in indexes { wanted[index.id] = index }
        var result: [StoredCompositeIndex] = []
        var changed = false
        for stored in state.compositeIndexes {
            if wanted.removeValue(forKey: stored.index.id) != nil {
                result.append(stored)
            } else {
                for table in [KeySchema.Table.compositeIndex, .compositeUnindexed] {
                    for entry in txn.scan(prefix: KeySchema.compositeIndexPrefix(table, stored.index.id)) { txn.delete(entry.key) }
                }
                txn.delete(KeySchema.compositeIndexDefinition(stored.index.id))
                changed = true
            }
        }
        for index in indexes where wanted[index.id] != nil {
            wanted[index.id] = nil
            changed = true
            let stored = StoredCompositeIndex(index: index, isComplete: false)
            txn.put(KeySchema.compositeIndexDefinition(index.id), Self.encode(stored))
            result.append(stored)
        }
        if let failure = txn.failure { throw failure }
        return (result, changed)
    }

    /// Where a backfill step leaves an index: the last document it gave a row (nil: none left).
    struct BackfillCursor {
        var indexID: String
        var position: [UInt8]?
    }

    /// Makes `indexes` (from ``declare(_:in:)`` or ``backfill(maxDocuments:from:in:)``) the
    /// ones the store maintains and plans with, and moves a backfill's cursor; call after their
    /// transaction committed (a step that did not commit leaves the cursor where it was).
    func commitDeclared(_ indexes: [StoredCompositeIndex], cursor: BackfillCursor? = nil) {
        state.compositeIndexes = indexes
        if let cursor { state.backfillCursors[cursor.indexID] = cursor.position }
        state.backfillCursors = state.backfillCursors.filter { id, _ in indexes.contains { $0.index.id == id } }
    }

    /// Gives up to `maxDocuments` cached documents their rows in the first incomplete index,
    /// continuing where the previous call stopped; marks the index complete when every
    /// document has its row. Returns the indexes and the index's cursor as they are once the
    /// transaction commits (pass them to ``commitDeclared(_:cursor:)``) and whether an
    /// incomplete index remains.
    ///
    /// Rows are written from each document as stored now, so documents written between two
    /// calls are right either way (their writes maintained the row already).
    func backfill(
        maxDocuments: Int, from remoteDocuments: RemoteDocumentCache, in txn: PersistenceTransaction
    ) throws(DocError) -> (indexes: [StoredCompositeIndex], cursor: BackfillCursor?, remaining: Bool) {
        var indexes = state.compositeIndexes
        guard let position = indexes.firstIndex(where: { !$0.isComplete }) else { return (indexes, nil, false) }
        let index = indexes[position].index
        let groupPrefix = KeySchema.collectionGroupPrefix(index.collectionGroup)
        let start = state.backfillCursors[index.id].map { $0 + [0x00] } ?? groupPrefix
        var processed = 0
        var last: [UInt8]?
        var documents: [DocumentKey] = []
        for entry in txn.scan(KeyRange(from: start, upTo: KeySchema.prefixEnd(groupPrefix))) {
            guard processed < maxDocuments else { break }
            documents.append(try KeySchema.decodeCollectionGroup(entry.key))
            last = entry.key
            processed += 1
        }
        if let failure = txn.failure { throw failure }
        for key in documents {
            if let found = try remoteDocuments.get(key, in: txn)?.document, let row = Self.row(for: found, in: index) {
                txn.put(row, [])
            }
        }
        var cursor = BackfillCursor(indexID: index.id, position: last)
        if processed < maxDocuments {
            indexes[position].isComplete = true
            txn.put(KeySchema.compositeIndexDefinition(index.id), Self.encode(indexes[position]))
            cursor.position = nil
        }
        return (indexes, cursor, indexes.contains { !$0.isComplete })
    }

    // MARK: Records

    static func encode(_ stored: StoredCompositeIndex) -> [UInt8] {
        var w = ByteWriter(format: recordFormat)
        w.flag(stored.isComplete)
        w.string(stored.index.collectionGroup)
        w.varint(UInt64(stored.index.fields.count))
        for field in stored.index.fields {
            w.fieldPath(field.path)
            w.flag(field.direction == .descending)
        }
        return w.bytes
    }

    static func decode(_ raw: [UInt8]) throws(DocError) -> StoredCompositeIndex {
        var r = ByteReader(raw, record: recordName)
        let format = try r.byte()
        guard format == recordFormat else { throw r.fail("unknown format \(format)", at: 0) }
        let complete = try r.flag()
        let group = try r.string()
        let count = try r.count("fields")
        var fields: [CompositeIndex.Field] = []
        for _ in 0..<count {
            let path = try r.fieldPath()
            fields.append(CompositeIndex.Field(path: path, try r.flag() ? .descending : .ascending))
        }
        try r.finish()
        do {
            return StoredCompositeIndex(index: try CompositeIndex(collectionGroup: group, fields: fields), isComplete: complete)
        } catch {
            throw r.fail("invalid index: \(error.message)")
        }
    }
}

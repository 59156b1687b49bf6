package import DocModel
internal import LevelDB

/// The server's view of documents: every document the client has received (found, deleted,
/// or committed with unknown contents), with the read time it was received at.
///
/// Writing a document maintains, in the same transaction: the read-time index (collection,
/// read time, id), the collection-group index (collection id, path), the local query indexes
/// of found documents (see ``FieldIndexer``) and the document's LRU sentinel.
package final class RemoteDocumentCache {
    /// The store state.
    let state: PersistenceState
    /// The declared composite indexes, maintained with the documents.
    let compositeIndexes: CompositeIndexCache

    /// Creates the cache (the store owns one).
    init(state: PersistenceState, compositeIndexes: CompositeIndexCache) {
        self.state = state
        self.compositeIndexes = compositeIndexes
    }

    /// Every local query index row of the found document `document`: its field, array and
    /// unindexed-value rows, and its rows in the declared composite indexes (also the rows of
    /// an overlay's local view, under its user's prefix: ``OverlayIndex``). Each row once:
    /// the composite rows are under their index's id, apart from the others and each other.
    func indexRows(for document: Document) -> [[UInt8]] {
        var rows = FieldIndexer.entries(for: document)
        rows.append(contentsOf: compositeIndexes.rows(for: document))
        assert(Set(rows.map(HashedBytes.init)).count == rows.count, "an index row twice for \(document.key)")
        return rows
    }

    /// The record name in decoding errors.
    static let recordName = "remote document"

    // MARK: Writing

    /// Stores `document` with the read time it was received at, replacing `old`: what is
    /// stored for its key, as the caller read it in this transaction after its last write of
    /// the key (``entries(for:in:)``, ``entry(for:in:)``; `nil` when nothing is stored). Updates
    /// the indexes: the old index entries that no longer apply are removed, new ones added.
    /// Stamps the document's LRU sentinel.
    package func add(_ document: MaybeDocument, readTime: SnapshotVersion, replacing old: Entry?, in txn: PersistenceTransaction) {
        let key = document.key
        let rowKey = KeySchema.remoteDocument(key)
        txn.put(rowKey, DocumentRecord.encode(document, extra: readTime.microseconds))

        let collection = key.collectionPath
        let id = key.documentID
        if let old, old.readTime != readTime {
            txn.delete(KeySchema.readTime(collection, old.readTime, id))
        }
        if old?.readTime != readTime {
            txn.put(KeySchema.readTime(collection, readTime, id), [])
        }
        if old == nil {
            txn.put(KeySchema.collectionGroup(key), [])
        }

        let newRows = document.document.map(indexRows(for:)) ?? []
        if let oldDocument = old?.document.document {
            let oldRows = Set(indexRows(for: oldDocument).map(HashedBytes.init))
            let newSet = Set(newRows.map(HashedBytes.init))
            for row in oldRows where !newSet.contains(row) { txn.delete(row.bytes) }
            for row in newSet where !oldRows.contains(row) { txn.put(row.bytes, []) }
        } else {
            // Nothing to compare with (a document new to the cache, each synced write's):
            // every row is new, and none is hashed.
            for row in newRows { txn.put(row, []) }
        }

        txn.stampSentinel(key)
    }

    /// Removes the document stored for `key` with its index entries and its LRU sentinel.
    /// Removing a missing key does nothing. Returns whether a document was stored.
    @discardableResult
    package func remove(_ key: DocumentKey, in txn: PersistenceTransaction) throws(DocError) -> Bool {
        remove(key, replacing: try entry(for: key, in: txn), in: txn)
    }

    /// ``remove(_:in:)`` when the caller has just read what is stored for `key` (`old`).
    @discardableResult
    package func remove(_ key: DocumentKey, replacing old: Entry?, in txn: PersistenceTransaction) -> Bool {
        guard let old else { return false }
        txn.delete(KeySchema.remoteDocument(key))
        txn.delete(KeySchema.readTime(key.collectionPath, old.readTime, key.documentID))
        txn.delete(KeySchema.collectionGroup(key))
        if let document = old.document.document {
            for row in indexRows(for: document) { txn.delete(row) }
        }
        txn.delete(KeySchema.sentinel(key))
        return true
    }

    // MARK: Point reads

    /// The document stored for `key`, or `nil`.
    package func get(_ key: DocumentKey, in txn: PersistenceTransaction) throws(DocError) -> MaybeDocument? {
        try stored(KeySchema.remoteDocument(key), in: txn)?.document
    }

    /// The document stored for `key` and the read time it was received at, or `nil`.
    package func entry(for key: DocumentKey, in txn: PersistenceTransaction) throws(DocError) -> Entry? {
        try stored(KeySchema.remoteDocument(key), in: txn)
    }

    /// The documents stored for `keys` (keys with nothing stored are absent).
    package func getAll(_ keys: some Collection<DocumentKey>, in txn: PersistenceTransaction) throws(DocError) -> [DocumentKey: MaybeDocument] {
        var out: [DocumentKey: MaybeDocument] = [:]
        out.reserveCapacity(keys.count)
        try forEachStored(keys, in: txn) { key, entry in out[key] = entry.document }
        return out
    }

    /// A stored document and the read time it was received at.
    package typealias Entry = (document: MaybeDocument, readTime: SnapshotVersion)

    /// The documents stored for `keys` with their read times (keys with nothing stored are
    /// absent).
    package func entries(for keys: some Collection<DocumentKey>, in txn: PersistenceTransaction) throws(DocError) -> [DocumentKey: Entry] {
        var out: [DocumentKey: Entry] = [:]
        out.reserveCapacity(keys.count)
        try forEachStored(keys, in: txn) { key, entry in out[key] = entry }
        return out
    }

    /// Calls `body` with each of `keys` that has a stored document, in key order (LevelDB's
    /// order: neighbouring reads share blocks).
    private func forEachStored(
        _ keys: some Collection<DocumentKey>, in txn: PersistenceTransaction, _ body: (DocumentKey, Entry) -> Void
    ) throws(DocError) {
        for key in keys.sorted() {
            if let entry = try stored(KeySchema.remoteDocument(key), in: txn) { body(key, entry) }
        }
    }

    private func stored(_ rowKey: [UInt8], in txn: PersistenceTransaction) throws(DocError) -> Entry? {
        guard let raw = try txn.get(rowKey) else { return nil }
        let (document, time) = try DocumentRecord.decode(raw, record: Self.recordName)
        return (document, SnapshotVersion(microseconds: time))
    }

    // MARK: Collections

    /// The documents directly in the collection `path` (not those of its sub-collections).
    package func documents(inCollection path: ResourcePath, in txn: PersistenceTransaction) throws(DocError) -> [DocumentKey: MaybeDocument] {
        var out: [DocumentKey: MaybeDocument] = [:]
        for document in scanDocuments(inCollection: path, in: txn) { out[document.key] = document }
        if let failure = txn.failure { throw failure }
        return out
    }

    /// The documents directly in the collection `path`, lazily, in document-key order
    /// (descending with `reverse`), starting after `start` when given (a `start` outside the
    /// collection is ignored). Documents of sub-collections are skipped. Lazy: stopping early
    /// is cheap. A read error ends the sequence and fails the transaction.
    package func scanDocuments(
        inCollection path: ResourcePath, after start: DocumentKey? = nil, reverse: Bool = false,
        in txn: PersistenceTransaction
    ) -> DecodingScan<MaybeDocument> {
        let prefix = KeySchema.remoteDocumentsPrefix(inCollection: path)
        var range = KeyRange(from: prefix, upTo: KeySchema.prefixEnd(prefix))
        if let start, start.isIn(collection: path) {
            // Keys of `start` and of its sub-collections' documents share this prefix.
            let own = KeySchema.remoteDocument(start)
            let subtree = KeySchema.prefixEnd(Array(own.dropLast()))
            if reverse {
                range = KeyRange(from: prefix, upTo: own)
            } else {
                range = KeyRange(from: subtree, upTo: KeySchema.prefixEnd(prefix))
            }
        }
        let prefixCount = prefix.count
        return DecodingScan(txn.scan(range, reverse: reverse), txn) { entry throws(DocError) -> MaybeDocument? in
            // A direct child's key is the prefix, the document id, and the path end marker.
            var d = KeyDecoder(entry.key, offset: prefixCount)
            _ = try d.readString()
            guard d.offset == entry.key.count - 1, entry.key.last == 0x01 else { return nil }
            return try DocumentRecord.decode(entry.value, record: Self.recordName).0
        }
    }

    /// The number of documents directly in the collection `path`.
    package func count(inCollection path: ResourcePath, in txn: PersistenceTransaction) throws(DocError) -> Int {
        var n = 0
        for _ in scanDocuments(inCollection: path, in: txn) { n += 1 }
        if let failure = txn.failure { throw failure }
        return n
    }

    /// The documents directly in the collection `path` received after `readTime` (strictly),
    /// found through the read-time index.
    package func documents(
        inCollection path: ResourcePath, changedSince readTime: SnapshotVersion, in txn: PersistenceTransaction
    ) throws(DocError) -> [DocumentKey: MaybeDocument] {
        let prefix = KeySchema.readTimePrefix(path)
        var lower = KeyEncoder(prefix: prefix)
        lower.append(int64: readTime.microseconds)
        lower.appendInfinity()
        var keys: [DocumentKey] = []
        for entry in txn.scan(KeyRange(from: lower.bytes, upTo: KeySchema.prefixEnd(prefix))) {
            let (_, _, id) = try KeySchema.decodeReadTime(entry.key)
            keys.append(DocumentKey(unchecked: path, id: id))
        }
        if let failure = txn.failure { throw failure }
        return try getAll(keys, in: txn)
    }

    /// The documents of every collection with id `collectionID`, at any depth, found through
    /// the collection-group index.
    package func documents(inCollectionGroup collectionID: String, in txn: PersistenceTransaction) throws(DocError) -> [DocumentKey: MaybeDocument] {
        var keys: [DocumentKey] = []
        for entry in txn.scan(prefix: KeySchema.collectionGroupPrefix(collectionID)) {
            keys.append(try KeySchema.decodeCollectionGroup(entry.key))
        }
        if let failure = txn.failure { throw failure }
        return try getAll(keys, in: txn)
    }

    // MARK: Local query indexes

    /// The index rows of the documents directly in `collection` whose value at `field` lies
    /// between `lower` and `upper` (each optional, inclusive or not), in (value, key) order —
    /// or the reverse with `descending`. Values compare in Firestore's cross-type order, so
    /// an open end includes values of every type on that side (a query engine post-filters
    /// by type). Lazy: stopping early is cheap. Documents whose value at `field` is too large
    /// to index are not included (see ``unindexedDocuments(collection:field:arrayElements:space:in:)``).
    ///
    /// - Parameters:
    ///   - seed: a row (the value and the document id) to start at, included: the rows before
    ///     it in the direction read are skipped.
    ///   - space: put in front of every row key: empty for the remote documents' rows,
    ///     ``OverlayIndex/space(_:)`` for a user's overlays'.
    package func scanIndex(
        collection: ResourcePath, field: FieldPath, lower: IndexBound?, upper: IndexBound?,
        from seed: (value: Value, documentID: String)? = nil, descending: Bool,
        space: [UInt8] = [], in txn: PersistenceTransaction
    ) -> DecodingScan<IndexRow> {
        let prefix = space + KeySchema.fieldPrefix(.fieldIndex, collection, field)
        var from = prefix
        if let lower {
            from += lower.value.indexEncoded()
            if !lower.inclusive { from += OrderedCode.infinity }
        }
        var to = prefix
        if let upper {
            to += upper.value.indexEncoded()
            if upper.inclusive { to += OrderedCode.infinity }
        } else {
            to += OrderedCode.infinity
        }
        if let seed {
            // The seed's row and those after it in the direction read.
            var row = KeyEncoder(prefix: prefix + seed.value.indexEncoded())
            row.append(string: seed.documentID)
            (from, to) = IndexRow.bounds(startingAt: row.bytes, from: from, upTo: to, reverse: descending)
        }
        return indexScan(KeyRange(from: from, upTo: to), prefixCount: prefix.count, collection: collection, descending: descending, in: txn)
    }

    /// The rows of the found documents directly in `collection` whose array at `field`
    /// contains an element equal to `value` (Firestore equality: `1 == 1.0`), in key order (the
    /// reverse with `descending`), each document once. `space` as in
    /// ``scanIndex(collection:field:lower:upper:from:descending:space:in:)``.
    package func scanArrayIndex(
        collection: ResourcePath, field: FieldPath, contains value: Value, descending: Bool = false, space: [UInt8] = [],
        in txn: PersistenceTransaction
    ) -> DecodingScan<IndexRow> {
        let prefix = space + KeySchema.fieldPrefix(.arrayIndex, collection, field)
        let valuePrefix = prefix + value.indexEncoded()
        return indexScan(
            KeyRange(from: valuePrefix, upTo: KeySchema.prefixEnd(valuePrefix)), prefixCount: prefix.count,
            collection: collection, descending: descending, in: txn)
    }

    /// The keys of the documents directly in `collection` whose value at `field` (or one of
    /// whose array elements, with `arrayElements`) was too large to index. A query engine
    /// that uses ``scanIndex(collection:field:lower:upper:from:descending:space:in:)`` or
    /// ``scanArrayIndex(collection:field:contains:descending:space:in:)`` must also consider these (usually
    /// none: one seek tells). `space` as in ``scanIndex(collection:field:lower:upper:from:descending:space:in:)``.
    package func unindexedDocuments(
        collection: ResourcePath, field: FieldPath, arrayElements: Bool = false, space: [UInt8] = [],
        in txn: PersistenceTransaction
    ) throws(DocError) -> [DocumentKey] {
        let prefix = space + KeySchema.fieldPrefix(.unindexedValues, collection, field)
        let wanted = (arrayElements ? IndexKind.arrayElement : IndexKind.value).rawValue
        var out: [DocumentKey] = []
        for entry in txn.scan(prefix: prefix) {
            let (kind, id) = try KeySchema.decodeUnindexedEntry(entry.key, prefixCount: prefix.count)
            if kind == wanted { out.append(DocumentKey(unchecked: collection, id: id)) }
        }
        if let failure = txn.failure { throw failure }
        return out
    }

    private func indexScan(
        _ range: KeyRange, prefixCount: Int, collection: ResourcePath, descending: Bool, in txn: PersistenceTransaction
    ) -> DecodingScan<IndexRow> {
        DecodingScan(txn.scan(range, reverse: descending), txn) { entry throws(DocError) -> IndexRow? in
            let (id, idOffset) = try KeySchema.decodeIndexEntry(entry.key, prefixCount: prefixCount)
            return IndexRow(key: DocumentKey(unchecked: collection, id: id), row: entry.key, positionStart: prefixCount, idStart: idOffset)
        }
    }
}

/// A row of a local index scan: its document, and where the row sits in the index. Rows of
/// the same scan over the remote documents' rows and over a user's overlays' rows
/// (``OverlayIndex``) compare alike: by ``position``, bytewise.
package struct IndexRow {
    /// The document of the row.
    package var key: DocumentKey
    /// The row after the prefix every row of the scan shares: its values, then the document id.
    package var position: ArraySlice<UInt8>
    /// The values of ``position`` without the document id: rows with equal values are tied
    /// in the index's order (the query may order them by other fields).
    package var values: ArraySlice<UInt8> { position[..<idStart] }
    private let idStart: Int

    /// The scan range `from`..<`upTo` narrowed to the rows from `row` on, `row` included, in
    /// the direction read (`reverse`: `row` and the rows before it). The smallest key after a
    /// row is the row and a zero byte. Where a walk starts at a cursor's row.
    static func bounds(startingAt row: [UInt8], from: [UInt8], upTo: [UInt8], reverse: Bool) -> (from: [UInt8], upTo: [UInt8]) {
        if reverse {
            let end = row + [0]
            return (from, OrderedCode.compare(end, upTo) < 0 ? end : upTo)
        }
        return (OrderedCode.compare(row, from) > 0 ? row : from, upTo)
    }

    /// The row `row` of `key`, whose shared prefix ends at `positionStart` and whose document
    /// id starts at `idStart`.
    init(key: DocumentKey, row: [UInt8], positionStart: Int, idStart: Int) {
        self.key = key
        self.position = row[positionStart...]
        self.idStart = idStart
    }
}

/// A lazy sequence of values decoded from a transaction scan: entries the decoder maps to
/// `nil` are skipped; a decoding error ends the sequence and fails the transaction (as read
/// errors of the scan itself do).
package struct DecodingScan<Element>: Sequence {
    /// The scan decoded.
    let base: TransactionScan
    /// The transaction failed by a decoding error.
    let transaction: PersistenceTransaction
    /// Maps an entry to an element, or `nil` to skip it.
    let decode: (Entry) throws(DocError) -> Element?

    /// Decodes the entries of `base` with `decode`.
    init(_ base: TransactionScan, _ transaction: PersistenceTransaction, decode: @escaping (Entry) throws(DocError) -> Element?) {
        self.base = base
        self.transaction = transaction
        self.decode = decode
    }

    /// An iterator over the decoded elements.
    package func makeIterator() -> Iterator {
        Iterator(base: base.makeIterator(), transaction: transaction, decode: decode)
    }

    /// Walks a ``DecodingScan``.
    package struct Iterator: IteratorProtocol {
        var base: TransactionScan.Iterator
        let transaction: PersistenceTransaction
        let decode: (Entry) throws(DocError) -> Element?
        var done = false

        /// The next decoded element, or `nil` at the end or after an error.
        package mutating func next() -> Element? {
            while !done, let entry = base.next() {
                do {
                    if let element = try decode(entry) { return element }
                } catch {
                    transaction.record(error)
                    done = true
                }
            }
            done = true
            return nil
        }
    }
}

internal import DocModel
internal import LevelDB

/// ``QueryIndexReader`` over one LevelDB snapshot of a tenant (``TenantKeys`` layout 2): every
/// page is one seek and a scan of at most `limit` entries of ordered-code keys (documents in
/// key order, index entries as `prefix ‖ value encoding ‖ document id` in index order, within
/// ``IndexRange/encodedBounds()``); documents are point reads, and a
/// ``walkPage(_:requiring:after:descending:limit:maxMatches:)`` also does point reads for each
/// entry it reads (a probe per ``IndexProbe``, then the document of a match).
struct LevelDBQueryReader: QueryIndexReader {
    let database: Database
    let keys: TenantKeys
    /// Reads through the snapshot.
    let options: ReadOptions

    /// Releases the snapshot (later reads throw `unavailable`).
    func release() { options.snapshot?.release() }

    func collectionPage(
        _ collection: ResourcePath, after position: DocumentKey?, descending: Bool, limit: Int
    ) async throws(DocError) -> [Document] {
        let range = Self.range(KeyRange.prefix(keys.collection(collection)), after: position.map(keys.document), descending: descending)
        return try LevelDBServerStore.run {
            var documents: [Document] = []
            var entries = try database.entries(in: range, reverse: descending, options: options).makeIterator()
            while documents.count < limit, let entry = try entries.nextEntry() {
                documents.append(try Document(binary: entry.value))
            }
            return documents
        }
    }

    func documentCount(in collection: ResourcePath) async throws(DocError) -> Int {
        let prefix = keys.collection(collection)
        return try LevelDBServerStore.run {
            let cursor = try database.cursor(options: options)
            try cursor.seek(to: prefix)
            return try cursor.countKeys(before: KeyRange.prefixUpperBound(prefix))
        }
    }

    func collectionGroupPage(
        _ group: String, under parent: ResourcePath, after position: DocumentKey?, descending: Bool, limit: Int
    ) async throws(DocError) -> [Document] {
        let range = Self.range(KeyRange.prefix(keys.group(group, under: parent)),
                               after: position.map(keys.groupEntry), descending: descending)
        return try LevelDBServerStore.run {
            var documents: [Document] = []
            var entries = try database.entries(in: range, reverse: descending, options: options).makeIterator()
            while documents.count < limit, let entry = try entries.nextEntry() {
                let key = try keys.documentKey(fromGroupEntry: entry.key, group: group)
                if let bytes = try database.get(keys.document(key), options: options) {
                    documents.append(try Document(binary: bytes))
                }
            }
            return documents
        }
    }

    func indexPage(
        _ range: IndexRange, after position: IndexPosition?, descending: Bool, limit: Int
    ) async throws(DocError) -> [IndexPosition] {
        var page: [IndexPosition] = []
        try forEachEntry(of: range, after: position, descending: descending, limit: limit) { value, id throws(DocError) in
            page.append(try Self.position(range, value, id))
            return true
        }
        return page
    }

    func indexEntryCount(_ range: IndexRange) async throws(DocError) -> Int {
        let (lower, upper) = bounds(of: range)
        return try LevelDBServerStore.run {
            let cursor = try database.cursor(options: options)
            try cursor.seek(to: lower)
            return try cursor.countKeys(before: upper)
        }
    }

    func indexEntryCount(_ range: IndexRange, requiring probes: [IndexProbe]) async throws(DocError) -> Int {
        guard !probes.isEmpty else { return try await indexEntryCount(range) }
        let probed = probes.map { probe in
            keys.fieldIndex(range.collection, field: probe.field.canonicalString, kind: probe.kind) + probe.value
        }
        var count = 0
        try forEachEntry(of: range, after: nil, descending: false, limit: Int.max) { _, id throws(DocError) in
            // A probe's key ends like the entry's: the probed value, then the same encoded id.
            for prefix in probed where try LevelDBServerStore.run({ try database.get(prefix + id, options: options) }) == nil {
                return true
            }
            count += 1
            return true
        }
        return count
    }

    /// The keys of `range`'s entries, `[lower, upper)`: its value bounds under the index's
    /// prefix, an open upper end being the end of the prefix.
    private func bounds(of range: IndexRange) -> (lower: [UInt8], upper: [UInt8]) {
        let prefix = keys.fieldIndex(range.collection, field: range.field.canonicalString, kind: range.kind)
        let bounds = range.encodedBounds()
        return (prefix + (bounds.lower ?? []), prefix + (bounds.upper ?? OrderedCode.infinity))
    }

    func walkPage(
        _ range: IndexRange, requiring probes: [IndexProbe], after position: IndexPosition?, descending: Bool,
        limit: Int, maxMatches: Int
    ) async throws(DocError) -> IndexWalkPage {
        let probed = probes.map { probe in
            (prefix: keys.fieldIndex(range.collection, field: probe.field.canonicalString, kind: probe.kind), value: probe.value)
        }
        var page = IndexWalkPage(matches: [], examined: 0, last: nil)
        var last: (value: [UInt8], id: ArraySlice<UInt8>)?
        try forEachEntry(of: range, after: position, descending: descending, limit: limit) { value, id throws(DocError) in
            guard page.matches.count < maxMatches else { return false }
            page.examined += 1
            last = (value, id)
            // A probe's key ends like the entry's: the probed value, then the same encoded id.
            for probe in probed where try LevelDBServerStore.run({ try database.get(probe.prefix + probe.value + id, options: options) }) == nil {
                return true
            }
            let entry = try Self.position(range, value, id)
            if let bytes = try LevelDBServerStore.run({ try database.get(keys.document(entry.key), options: options) }) {
                page.matches.append((entry, try Document(binary: bytes)))
            }
            return true
        }
        page.last = try last.map { last throws(DocError) in try Self.position(range, last.value, last.id) }
        return page
    }

    /// The entry of the index `range` with value encoding `value` and encoded document id `id`.
    private static func position(_ range: IndexRange, _ value: [UInt8], _ id: ArraySlice<UInt8>) throws(DocError) -> IndexPosition {
        var d = KeyDecoder(Array(id))
        let documentID = try d.readString()
        try d.finish()
        return IndexPosition(value: value, key: DocumentKey(unchecked: range.collection, id: documentID))
    }

    /// Reads up to `limit` entries of the index `range` in order (`descending`: reverse),
    /// strictly after `position`, and passes each — its value encoding and its document id
    /// still encoded (decoding is left to the entries that need it) — to `visit`, until it
    /// returns `false`.
    private func forEachEntry(
        of range: IndexRange, after position: IndexPosition?, descending: Bool, limit: Int,
        _ visit: ([UInt8], ArraySlice<UInt8>) throws(DocError) -> Bool
    ) throws(DocError) {
        let prefix = keys.fieldIndex(range.collection, field: range.field.canonicalString, kind: range.kind)
        let (lower, upper) = bounds(of: range)
        let after = position.map { keys.fieldIndexEntry(prefix, value: $0.value, documentID: $0.key.documentID) }
        let keyRange = Self.range(KeyRange(from: lower, upTo: upper), after: after, descending: descending)
        var entries = try LevelDBServerStore.run { try database.entries(in: keyRange, reverse: descending, options: options).makeIterator() }
        var count = 0
        while count < limit, let entry = try LevelDBServerStore.run({ try entries.nextEntry() }) {
            count += 1
            let (value, idStart) = try keys.indexEntryValue(entry.key, prefix: prefix)
            guard try visit(value, entry.key[idStart...]) else { return }
        }
    }

    func documents(_ keys: [DocumentKey]) async throws(DocError) -> [DocumentKey: Document] {
        try LevelDBServerStore.run {
            var found: [DocumentKey: Document] = [:]
            for key in keys {
                if let bytes = try database.get(self.keys.document(key), options: options) {
                    found[key] = try Document(binary: bytes)
                }
            }
            return found
        }
    }

    func unindexedDocuments(
        in collection: ResourcePath, field: FieldPath, kind: IndexKind
    ) async throws(DocError) -> [DocumentKey] {
        let prefix = keys.unindexed(collection, field: field.canonicalString, kind: kind)
        return try LevelDBServerStore.run {
            var found: [DocumentKey] = []
            var entries = try database.entries(withPrefix: prefix, options: options).makeIterator()
            while let entry = try entries.nextEntry() {
                let id = try keys.documentID(fromUnindexedEntry: entry.key, prefix: prefix)
                found.append(DocumentKey(unchecked: collection, id: id))
            }
            return found
        }
    }

    /// `range` cut to the keys strictly after `after` in the direction read.
    static func range(_ range: KeyRange, after: [UInt8]?, descending: Bool) -> KeyRange {
        guard let after else { return range }
        var cut = range
        if descending {
            // Keys below `after`, unless the range already ends there.
            switch range.upperBound {
            case .excluding(let upper)? where OrderedCode.compare(upper, after) <= 0: return range
            case .including(let upper)? where OrderedCode.compare(upper, after) < 0: return range
            default: cut.upperBound = .excluding(after)
            }
        } else {
            // Keys from `after` ‖ 0x00, the smallest key above `after`, unless the range starts later.
            let start = after + [0x00]
            if let lower = range.lowerBound, OrderedCode.compare(lower, start) >= 0 { return range }
            cut.lowerBound = start
        }
        return cut
    }
}

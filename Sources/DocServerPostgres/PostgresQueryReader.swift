internal import DocModel
internal import DocServer
internal import Logging
internal import PostgresNIO

/// ``QueryIndexReader`` on one connection inside a `REPEATABLE READ, READ ONLY` transaction
/// (every page of one query from one snapshot): each call is one statement, a range of a
/// primary key or index read in order with keyset pagination and a `LIMIT`.
struct PostgresQueryReader: QueryIndexReader {
    let connection: PostgresConnection
    let logger: Logger
    let tenant: String
    let database: String

    private func rows(_ what: @autoclosure () -> String, _ statement: SQLStatement) async throws(DocError) -> [PostgresRow] {
        do {
            return try await connection.rows(statement.query, logger)
        } catch {
            throw PostgresErrorMapping.map(error, doing: what(), database: database)
        }
    }

    private func bodies(_ rows: [PostgresRow]) throws(DocError) -> [Document] {
        try Self.documents(rows, database: database)
    }

    /// The documents of rows whose only column is a document body.
    static func documents(_ rows: [PostgresRow], database: String) throws(DocError) -> [Document] {
        var documents: [Document] = []
        documents.reserveCapacity(rows.count)
        for row in rows {
            let body = try PostgresErrorMapping.decode("a document", in: database) { try row.decode(ByteBuffer.self) }
            documents.append(try Document(binary: body.bytes))
        }
        return documents
    }

    /// Appends `column >= lower AND column < upper` for the keys with `prefix` (every key when
    /// it is empty), cut to those strictly after `after` in the direction read.
    private static func addKeyRange(
        _ statement: inout SQLStatement, column: KeyColumn, prefix: [UInt8], after: [UInt8]?, descending: Bool
    ) {
        var lower = prefix
        var upper = DocumentKeyBytes.prefixEnd(prefix)
        if let after {
            if descending {
                if upper.map({ OrderedCode.compare(after, $0) < 0 }) ?? true { upper = after }
            } else {
                let start = after + [0x00]
                if OrderedCode.compare(start, lower) > 0 { lower = start }
            }
        }
        switch column {
        case .docKey:
            statement.add(" AND doc_key >= ", ByteBuffer(bytes: lower))
            if let upper { statement.add(" AND doc_key < ", ByteBuffer(bytes: upper)) }
        case .pathKey:
            statement.add(" AND path_key >= ", ByteBuffer(bytes: lower))
            if let upper { statement.add(" AND path_key < ", ByteBuffer(bytes: upper)) }
        }
    }

    private enum KeyColumn { case docKey, pathKey }

    func collectionPage(
        _ collection: ResourcePath, after position: DocumentKey?, descending: Bool, limit: Int
    ) async throws(DocError) -> [Document] {
        var statement = SQLStatement("SELECT body FROM doccache_documents WHERE tenant = ")
        statement.bind(tenant)
        Self.addKeyRange(&statement, column: .docKey, prefix: DocumentKeyBytes.collectionPrefix(collection),
                         after: position.map(DocumentKeyBytes.key), descending: descending)
        statement.add(descending ? " ORDER BY doc_key DESC LIMIT " : " ORDER BY doc_key LIMIT ", Int64(limit))
        return try bodies(try await rows("read a page of \(collection)", statement))
    }

    func documentCount(in collection: ResourcePath) async throws(DocError) -> Int {
        var statement = SQLStatement("SELECT count(*) FROM doccache_documents WHERE tenant = ")
        statement.bind(tenant)
        Self.addKeyRange(&statement, column: .docKey, prefix: DocumentKeyBytes.collectionPrefix(collection), after: nil, descending: false)
        let rows = try await rows("count the documents of \(collection)", statement)
        let count = try PostgresErrorMapping.decode("a document count", in: database) { try rows.first?.decode(Int64.self) ?? 0 }
        return Int(count)
    }

    func collectionGroupPage(
        _ group: String, under parent: ResourcePath, after position: DocumentKey?, descending: Bool, limit: Int
    ) async throws(DocError) -> [Document] {
        var statement = SQLStatement("SELECT body FROM doccache_documents WHERE tenant = ")
        statement.bind(tenant)
        statement.add(" AND group_id = ", ByteBuffer(bytes: DocumentKeyBytes.group(group)))
        Self.addKeyRange(&statement, column: .pathKey, prefix: DocumentKeyBytes.descendantsPrefix(parent),
                         after: position.map(DocumentKeyBytes.path), descending: descending)
        statement.add(descending ? " ORDER BY path_key DESC LIMIT " : " ORDER BY path_key LIMIT ", Int64(limit))
        return try bodies(try await rows("read a page of collection group \(group)", statement))
    }

    /// Appends the conditions selecting the entries of `range` from `doccache_field_index i`.
    private func addIndexBounds(_ statement: inout SQLStatement, _ range: IndexRange) {
        statement.add(" WHERE i.tenant = ", tenant)
        statement.add(" AND i.collection = ", ByteBuffer(bytes: DocumentKeyBytes.collectionPrefix(range.collection)))
        statement.add(" AND i.field = ", ByteBuffer(bytes: Array(range.field.canonicalString.utf8)))
        statement.add(" AND i.kind = ", Int16(range.kind.rawValue))
        // The same half-open bounds as the embedded store's key ranges.
        let bounds = range.encodedBounds()
        if let lower = bounds.lower { statement.add(" AND i.value >= ", ByteBuffer(bytes: lower)) }
        if let upper = bounds.upper { statement.add(" AND i.value < ", ByteBuffer(bytes: upper)) }
    }

    /// Appends the conditions selecting the entries of `range` from `doccache_field_index i`,
    /// strictly after `position`, then the order and the limit.
    private func addIndexRange(
        _ statement: inout SQLStatement, _ range: IndexRange, after position: IndexPosition?, descending: Bool, limit: Int
    ) {
        addIndexBounds(&statement, range)
        if let position {
            statement.add(descending ? " AND (i.value, i.doc_id) < (" : " AND (i.value, i.doc_id) > (", ByteBuffer(bytes: position.value))
            statement.add(", ", ByteBuffer(bytes: DocumentKeyBytes.documentID(position.key.documentID)))
            statement.add(")")
        }
        statement.add(descending ? " ORDER BY i.value DESC, i.doc_id DESC LIMIT " : " ORDER BY i.value, i.doc_id LIMIT ", Int64(limit))
    }

    /// The entry of a row whose first two columns are `value` and `doc_id`.
    private func entry(_ value: ByteBuffer, _ id: ByteBuffer, in collection: ResourcePath) throws(DocError) -> IndexPosition {
        let documentID = try DocumentKeyBytes.documentID(decoding: id.bytes)
        return IndexPosition(value: value.bytes, key: DocumentKey(unchecked: collection, id: documentID))
    }

    func indexEntryCount(_ range: IndexRange) async throws(DocError) -> Int {
        var statement = SQLStatement("SELECT count(*) FROM doccache_field_index i")
        addIndexBounds(&statement, range)
        let rows = try await rows("count the entries of the index \(range)", statement)
        let count = try PostgresErrorMapping.decode("an index entry count", in: database) { try rows.first?.decode(Int64.self) ?? 0 }
        return Int(count)
    }

    /// One statement: the range's entries (`s`), each with the probes of
    /// ``walkPage(_:requiring:after:descending:limit:maxMatches:)``, those with every probe's
    /// entry counted.
    func indexEntryCount(_ range: IndexRange, requiring probes: [IndexProbe]) async throws(DocError) -> Int {
        guard !probes.isEmpty else { return try await indexEntryCount(range) }
        var statement = SQLStatement("SELECT count(*) FROM (SELECT i.doc_id FROM doccache_field_index i")
        addIndexBounds(&statement, range)
        statement.add(") s")
        addProbes(&statement, probes, collection: range.collection)
        statement.add(" WHERE ")
        addProbeHits(&statement, probes)
        let rows = try await rows("count the entries of the index \(range) with \(probes.count) probes", statement)
        let count = try PostgresErrorMapping.decode("an index entry count", in: database) { try rows.first?.decode(Int64.self) ?? 0 }
        return Int(count)
    }

    /// Appends, for entries `s` of `collection`'s index, a `LATERAL` primary-key lookup `pN`
    /// of each probe's entry for the same document (`pN.hit` is null when it has none) — not
    /// `EXISTS`, which the planner may turn into a hash of every row of the probed value.
    private func addProbes(_ statement: inout SQLStatement, _ probes: [IndexProbe], collection: ResourcePath) {
        let collection = ByteBuffer(bytes: DocumentKeyBytes.collectionPrefix(collection))
        for (n, probe) in probes.enumerated() {
            statement.add(" LEFT JOIN LATERAL (SELECT TRUE AS hit FROM doccache_field_index e WHERE e.tenant = ", tenant)
            statement.add(" AND e.collection = ", collection)
            statement.add(" AND e.field = ", ByteBuffer(bytes: Array(probe.field.canonicalString.utf8)))
            statement.add(" AND e.kind = ", Int16(probe.kind.rawValue))
            statement.add(" AND e.value = ", ByteBuffer(bytes: probe.value))
            statement.add(" AND e.doc_id = s.doc_id LIMIT 1) p", number: n)
            statement.add(" ON TRUE")
        }
    }

    /// Appends the condition that every probe of ``addProbes(_:_:collection:)`` found its entry
    /// (`TRUE` without probes).
    private func addProbeHits(_ statement: inout SQLStatement, _ probes: [IndexProbe]) {
        if probes.isEmpty { statement.add("TRUE") }
        for n in probes.indices {
            statement.add(n == 0 ? "p" : " AND p", number: n)
            statement.add(".hit IS NOT NULL")
        }
    }

    func indexPage(
        _ range: IndexRange, after position: IndexPosition?, descending: Bool, limit: Int
    ) async throws(DocError) -> [IndexPosition] {
        var statement = SQLStatement("SELECT i.value, i.doc_id FROM doccache_field_index i")
        addIndexRange(&statement, range, after: position, descending: descending, limit: limit)
        let rows = try await rows("read the index \(range)", statement)
        var page: [IndexPosition] = []
        page.reserveCapacity(rows.count)
        for row in rows {
            let (value, id) = try PostgresErrorMapping.decode("index entries", in: database) { try row.decode((ByteBuffer, ByteBuffer).self) }
            page.append(try entry(value, id, in: range.collection))
        }
        return page
    }

    /// One statement, which PostgreSQL runs as a pipeline that stops at the `maxMatches`-th
    /// match: the page of entries (`s`, in index order with its limit), a probe per entry and
    /// probed entry (``addProbes(_:_:collection:)``), the entry's number in the page, then
    /// only the matches and the page's last entry, and the documents of the matches (a scalar
    /// subquery, evaluated for the rows returned).
    func walkPage(
        _ range: IndexRange, requiring probes: [IndexProbe], after position: IndexPosition?, descending: Bool,
        limit: Int, maxMatches: Int
    ) async throws(DocError) -> IndexWalkPage {
        let collection = ByteBuffer(bytes: DocumentKeyBytes.collectionPrefix(range.collection))
        var statement = SQLStatement("SELECT w.value, w.doc_id, w.n, CASE WHEN w.matches THEN ")
        statement.add("(SELECT d.body FROM doccache_documents d WHERE d.tenant = ", tenant)
        statement.add(" AND d.doc_key = ", collection)
        statement.add(" || w.doc_id) END FROM (SELECT s.value, s.doc_id, row_number() OVER (")
        statement.add(descending ? "ORDER BY s.value DESC, s.doc_id DESC" : "ORDER BY s.value, s.doc_id")
        statement.add(") AS n, ")
        addProbeHits(&statement, probes)
        statement.add(" AS matches FROM (SELECT i.value, i.doc_id FROM doccache_field_index i")
        addIndexRange(&statement, range, after: position, descending: descending, limit: limit)
        statement.add(") s")
        addProbes(&statement, probes, collection: range.collection)
        statement.add(") w WHERE w.matches OR w.n = ", Int64(limit))
        statement.add(descending ? " ORDER BY w.value DESC, w.doc_id DESC LIMIT " : " ORDER BY w.value, w.doc_id LIMIT ",
                      Int64(max(1, min(maxMatches, Int(Int32.max)))))
        let rows = try await rows("walk the index \(range)", statement)
        var page = IndexWalkPage(matches: [], examined: 0, last: nil)
        for row in rows {
            let (value, id, number, body) = try PostgresErrorMapping.decode("index entries", in: database) { try row.decode((ByteBuffer, ByteBuffer, Int64, ByteBuffer?).self) }
            let position = try entry(value, id, in: range.collection)
            // Rows come in page order, numbered from 1: the last is how far the page read.
            page.examined = Int(number)
            page.last = position
            if let body { page.matches.append((position, try Document(binary: body.bytes))) }
        }
        return page
    }

    func documents(_ keys: [DocumentKey]) async throws(DocError) -> [DocumentKey: Document] {
        guard !keys.isEmpty else { return [:] }
        var statement = SQLStatement("SELECT body FROM doccache_documents WHERE tenant = ")
        statement.bind(tenant)
        statement.add(" AND doc_key = ANY(", keys.map { ByteBuffer(bytes: DocumentKeyBytes.key($0)) })
        statement.add(")")
        var found: [DocumentKey: Document] = [:]
        for document in try bodies(try await rows("read documents", statement)) { found[document.key] = document }
        return found
    }

    func unindexedDocuments(
        in collection: ResourcePath, field: FieldPath, kind: IndexKind
    ) async throws(DocError) -> [DocumentKey] {
        var statement = SQLStatement("SELECT doc_id FROM doccache_field_index WHERE tenant = ")
        statement.bind(tenant)
        statement.add(" AND collection = ", ByteBuffer(bytes: DocumentKeyBytes.collectionPrefix(collection)))
        statement.add(" AND field = ", ByteBuffer(bytes: Array(field.canonicalString.utf8)))
        statement.add(" AND kind = ", FieldIndexRows.unindexedKind(kind))
        let rows = try await rows("read the unindexed documents of \(collection)", statement)
        var keys: [DocumentKey] = []
        for row in rows {
            let id = try PostgresErrorMapping.decode("index entries", in: database) { try row.decode(ByteBuffer.self) }
            let documentID = try DocumentKeyBytes.documentID(decoding: id.bytes)
            keys.append(DocumentKey(unchecked: collection, id: documentID))
        }
        return keys
    }
}

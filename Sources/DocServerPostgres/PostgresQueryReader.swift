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

    private func decode<T>(_ what: String, _ body: () throws -> T) throws(DocError) -> T {
        do {
            return try body()
        } catch {
            throw PostgresErrorMapping.map(error, doing: "read \(what)", database: database)
        }
    }

    private func bodies(_ rows: [PostgresRow]) throws(DocError) -> [Document] {
        var documents: [Document] = []
        documents.reserveCapacity(rows.count)
        for row in rows {
            let body = try decode("a document") { try row.decode(ByteBuffer.self) }
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
        var upper = DocumentKeyBytes.range(prefix)?.upper
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

    func indexPage(
        _ range: IndexRange, after position: IndexPosition?, descending: Bool, limit: Int
    ) async throws(DocError) -> [IndexPosition] {
        var statement = SQLStatement("SELECT value, doc_id FROM doccache_field_index WHERE tenant = ")
        statement.bind(tenant)
        statement.add(" AND collection = ", ByteBuffer(bytes: DocumentKeyBytes.collectionPrefix(range.collection)))
        statement.add(" AND field = ", ByteBuffer(bytes: Array(range.field.canonicalString.utf8)))
        statement.add(" AND kind = ", Int16(range.kind.rawValue))
        // The bounds as the embedded store's key ranges: an exclusive lower end and an
        // inclusive upper end reach past every encoding that starts with the bound (a type
        // tag brackets its whole type), with `infinity`, which sorts after any continuation.
        if let lower = range.lower {
            statement.add(" AND value >= ", ByteBuffer(bytes: lower.inclusive ? lower.encoded : lower.encoded + OrderedCode.infinity))
        }
        if let upper = range.upper {
            statement.add(" AND value < ", ByteBuffer(bytes: upper.inclusive ? upper.encoded + OrderedCode.infinity : upper.encoded))
        }
        if let position {
            statement.add(descending ? " AND (value, doc_id) < (" : " AND (value, doc_id) > (", ByteBuffer(bytes: position.value))
            statement.add(", ", ByteBuffer(bytes: Array(position.key.documentID.utf8)))
            statement.add(")")
        }
        statement.add(descending ? " ORDER BY value DESC, doc_id DESC LIMIT " : " ORDER BY value, doc_id LIMIT ", Int64(limit))
        let rows = try await rows("read the index \(range)", statement)
        return try decode("index entries") {
            try rows.map { row in
                let (value, id) = try row.decode((ByteBuffer, ByteBuffer).self)
                let documentID = String(decoding: id.readableBytesView, as: UTF8.self)
                return IndexPosition(value: value.bytes,
                                     key: DocumentKey(unchecked: range.collection.appending(ResourcePath(unchecked: [documentID]))))
            }
        }
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
        return try decode("index entries") {
            try rows.map { row in
                let id = try row.decode(ByteBuffer.self)
                let documentID = String(decoding: id.readableBytesView, as: UTF8.self)
                return DocumentKey(unchecked: collection.appending(ResourcePath(unchecked: [documentID])))
            }
        }
    }
}

package import DocModel

/// What ``ServerQueryPlanner`` reads a tenant's documents and query indexes through. Every
/// store implements it; every call of one reader sees the tenant at one version (a LevelDB
/// snapshot; one `REPEATABLE READ` transaction in PostgreSQL).
///
/// Every page is a range of ordered-code keys read in order with a limit: one seek and a
/// scan of at most `limit` entries in LevelDB (``LevelDBQueryReader``); one SQL statement with
/// keyset pagination and a `LIMIT` in PostgreSQL (`PostgresQueryReader`), over `bytea` keys in
/// ordered code (`DocumentKeyBytes`) — documents by `doc_key` or `path_key`, index entries in
/// the table `doccache_field_index` by `(tenant, collection, field, kind, value, doc_id)`.
/// ``walkPage(_:requiring:after:descending:limit:maxMatches:)`` also does point reads for each
/// entry it reads: a probe per ``IndexProbe``, and the document of each match.
///
/// Orders: **key order** is `DocumentKey` order — within a collection, document ids compared
/// by the bytes of their ordered-code encoding, which is their UTF-8 byte order; across a
/// collection group, paths compared segment by segment (the ordered code of the whole path,
/// `KeyEncoder.append(key:)`). **Index order** is (value encoding bytewise, then key order).
/// Value encodings and keys are compared as raw bytes (`memcmp`; PostgreSQL `bytea`, whatever
/// the collation). "Descending" is the exact reverse; "after" a position is strictly beyond it
/// in the direction read. Value bounds are ``IndexRange/encodedBounds()``.
///
/// Index rows are what ``DocumentIndexEntries`` yields for each stored document (tombstones
/// included), written in the same transaction as the document.
package protocol QueryIndexReader: Sendable {
    /// How many documents are directly in `collection` (tombstones included), counted by key
    /// without reading them.
    func documentCount(in collection: ResourcePath) async throws(DocError) -> Int

    /// Up to `limit` documents directly in `collection` (not in its sub-collections), in key
    /// order (`descending`: reverse), strictly after `position` when given.
    func collectionPage(
        _ collection: ResourcePath, after position: DocumentKey?, descending: Bool, limit: Int
    ) async throws(DocError) -> [Document]

    /// Up to `limit` documents in collections named `group` at or below `parent` (the root, or
    /// a document path), in key order (`descending`: reverse), strictly after `position` when
    /// given.
    func collectionGroupPage(
        _ group: String, under parent: ResourcePath, after position: DocumentKey?, descending: Bool, limit: Int
    ) async throws(DocError) -> [Document]

    /// How many entries the index `range` names holds within its bounds, counted without
    /// decoding them (a LevelDB cursor counting keys; `SELECT count(*)` on PostgreSQL).
    func indexEntryCount(_ range: IndexRange) async throws(DocError) -> Int

    /// How many entries of the index `range` names have every entry of `probes` (in the same
    /// collection) as well: ``walkPage(_:requiring:after:descending:limit:maxMatches:)`` over
    /// the whole range, counting its matches without reading their documents (in PostgreSQL
    /// one statement).
    func indexEntryCount(_ range: IndexRange, requiring probes: [IndexProbe]) async throws(DocError) -> Int

    /// Up to `limit` entries of the index `range` names, within its bounds, in index order
    /// (`descending`: reverse), strictly after `position` when given. `position` is always an
    /// entry of the same collection (its key is directly in ``IndexRange/collection``), though
    /// not necessarily one within the bounds.
    func indexPage(
        _ range: IndexRange, after position: IndexPosition?, descending: Bool, limit: Int
    ) async throws(DocError) -> [IndexPosition]

    /// The entries of the index `range` names, as ``indexPage(_:after:descending:limit:)``
    /// reads them, until `limit` are read or `maxMatches` of them have every entry of
    /// `probes` (in the same collection) — and the documents of those: the page of an index
    /// walk, which reads documents only for entries that can match, and stops once it has as
    /// many as it needs (in PostgreSQL one statement, evaluated lazily: the page, a probe per
    /// entry, the documents of the matches).
    func walkPage(
        _ range: IndexRange, requiring probes: [IndexProbe], after position: IndexPosition?, descending: Bool,
        limit: Int, maxMatches: Int
    ) async throws(DocError) -> IndexWalkPage

    /// The documents with the given keys that exist (tombstones included).
    func documents(_ keys: [DocumentKey]) async throws(DocError) -> [DocumentKey: Document]

    /// The keys of the documents directly in `collection` that have an
    /// ``DocumentIndexEntries/Unindexed`` marker for (`field`, `kind`): a value (or an array
    /// element) too large for the index. Usually none.
    func unindexedDocuments(
        in collection: ResourcePath, field: FieldPath, kind: IndexKind
    ) async throws(DocError) -> [DocumentKey]
}

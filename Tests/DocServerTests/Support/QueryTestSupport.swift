import DocModel
import LevelDB
import Synchronization
@testable import DocServer

/// A ``QueryIndexReader`` that counts what the wrapped reader returns: documents (pages and
/// point reads) and index entries. How a test proves that a plan did not read a collection.
final class CountingReader: QueryIndexReader {
    struct Counts: Sendable {
        var documents = 0
        var indexEntries = 0
        var calls = 0
        /// The most documents or entries one call returned.
        var largestRead = 0
    }

    let base: any QueryIndexReader
    private let state = Mutex(Counts())

    init(_ base: any QueryIndexReader) { self.base = base }

    var counts: Counts { state.withLock { $0 } }

    private func count(documents: Int = 0, entries: Int = 0) {
        state.withLock {
            $0.documents += documents
            $0.indexEntries += entries
            $0.calls += 1
            $0.largestRead = max($0.largestRead, documents, entries)
        }
    }

    func collectionPage(_ collection: ResourcePath, after position: DocumentKey?, descending: Bool, limit: Int) async throws(DocError) -> [Document] {
        let page = try await base.collectionPage(collection, after: position, descending: descending, limit: limit)
        count(documents: page.count)
        return page
    }

    func documentCount(in collection: ResourcePath) async throws(DocError) -> Int {
        count()
        return try await base.documentCount(in: collection)
    }

    func collectionGroupPage(_ group: String, under parent: ResourcePath, after position: DocumentKey?, descending: Bool, limit: Int) async throws(DocError) -> [Document] {
        let page = try await base.collectionGroupPage(group, under: parent, after: position, descending: descending, limit: limit)
        count(documents: page.count)
        return page
    }

    /// Counted as a call: no entry is returned.
    func indexEntryCount(_ range: IndexRange) async throws(DocError) -> Int {
        count()
        return try await base.indexEntryCount(range)
    }

    /// Counted as a call: no entry or document is returned.
    func indexEntryCount(_ range: IndexRange, requiring probes: [IndexProbe]) async throws(DocError) -> Int {
        count()
        return try await base.indexEntryCount(range, requiring: probes)
    }

    func indexPage(_ range: IndexRange, after position: IndexPosition?, descending: Bool, limit: Int) async throws(DocError) -> [IndexPosition] {
        let page = try await base.indexPage(range, after: position, descending: descending, limit: limit)
        count(entries: page.count)
        return page
    }

    /// Counts the entries read and the documents returned (the probes are point reads of
    /// the index, counted as one entry per probe and entry read).
    func walkPage(_ range: IndexRange, requiring probes: [IndexProbe], after position: IndexPosition?, descending: Bool,
                  limit: Int, maxMatches: Int) async throws(DocError) -> IndexWalkPage {
        let page = try await base.walkPage(range, requiring: probes, after: position, descending: descending, limit: limit,
                                           maxMatches: maxMatches)
        count(documents: page.matches.count, entries: page.examined * (1 + probes.count))
        return page
    }

    func documents(_ keys: [DocumentKey]) async throws(DocError) -> [DocumentKey: Document] {
        let found = try await base.documents(keys)
        count(documents: found.count)
        return found
    }

    func unindexedDocuments(in collection: ResourcePath, field: FieldPath, kind: IndexKind) async throws(DocError) -> [DocumentKey] {
        let keys = try await base.unindexedDocuments(in: collection, field: field, kind: kind)
        count(entries: keys.count)
        return keys
    }
}

extension LevelDBTenantStore {
    /// Commits `writes` as one batch at the next version (their documents stamped with it) and
    /// applies them to `model`; the batch carries the model's versions of the written documents
    /// as read versions when `checked` (the commit processor's way), none otherwise.
    func commitNext(_ writes: [DocumentWrite], batch: Int, checked: Bool = true,
                    model: inout [DocumentKey: Document]) async throws {
        let version = SnapshotVersion(microseconds: try await state().lastVersion.microseconds + 1)
        var readVersions: [DocumentKey: SnapshotVersion] = [:]
        if checked {
            for write in writes { readVersions[write.key] = model[write.key]?.version ?? SnapshotVersion.none }
        }
        let outcome = BatchOutcome(batch: BatchKey(clientID: "test", batchID: batch), uid: "u", digest: 0, recordedAt: 1,
                                   result: .committed(version: version, results: []))
        let stamped = writes.map { write in
            DocumentWrite(key: write.key, document: write.document.map {
                Document(key: $0.key, data: $0.data, version: version, createTime: $0.createTime)
            })
        }
        _ = try await commit(CommitRequest(outcome: outcome, writes: stamped, readVersions: readVersions))
        for write in stamped { model[write.key] = write.document }
    }

    /// Every key in the tenant's index spaces: query indexes (`i`, `a`, `c`, `u`) and attachment
    /// references (`r`).
    func storedIndexRows() throws -> Set<[UInt8]> {
        var rows = Set<[UInt8]>()
        for space in ["i", "a", "c", "u", "r"] {
            for entry in try database.entries(withPrefix: keys.prefix + Array(space.utf8)).collect() {
                rows.insert(entry.key)
            }
        }
        return rows
    }

    /// The index rows the stored documents should have.
    func expectedIndexRows(_ documents: some Sequence<Document>, compositeIndexes: [CompositeIndex] = []) -> Set<[UInt8]> {
        Set(documents.flatMap { keys.indexRows(of: $0, compositeIndexes: compositeIndexes) })
    }
}

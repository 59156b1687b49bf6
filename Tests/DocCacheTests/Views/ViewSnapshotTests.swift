import Testing
@testable import DocCache
import DocModel
import DocTestTraits

@Suite("ViewSnapshot and user-facing changes", .cpuBound)
struct ViewSnapshotTests {
    typealias F = ViewFixtures

    let query = try! Query(collection: "rooms").order(by: "n")

    func doc(_ id: String, _ n: Double, version: Int64 = 1, local: Bool = false) -> Document {
        F.doc("rooms/\(id)", version, ["n": .double(n)], local: local)
    }

    @Test func initialDocumentsAreAllAddedInOrder() throws {
        let documents = DocumentSet(query: query, documents: [doc("b", 2), doc("a", 1), doc("c", 3, local: true)])
        let snapshot = ViewSnapshot.fromInitialDocuments(
            query: query, documents: documents, mutatedKeys: [F.key("rooms/c")], isFromCache: true,
            excludesMetadataChanges: true, hasCachedResults: true)
        #expect(snapshot.oldDocuments.isEmpty)
        #expect(F.describe(snapshot.documentChanges) == ["added:rooms/a", "added:rooms/b", "added:rooms/c"])
        #expect(snapshot.syncStateChanged)
        #expect(snapshot.isFromCache && snapshot.excludesMetadataChanges && snapshot.hasCachedResults)
        #expect(snapshot.hasPendingWrites)

        let changes = try snapshot.documentChanges(includeMetadataChanges: false)
        #expect(changes.map(\.type) == [.added, .added, .added])
        #expect(changes.map(\.oldIndex) == [-1, -1, -1])
        #expect(changes.map(\.newIndex) == [0, 1, 2])
        #expect(changes.map(\.hasPendingWrites) == [false, false, true])
    }

    /// Old: a(1) b(2) c(3) d(4). Then: b removed, e(2.5) added, d moved to the front (0),
    /// c's pending write state changed only.
    func mixedSnapshot() throws -> ViewSnapshot {
        let view = View(query: query, remoteDocuments: [])
        F.apply(view, [doc("a", 1), doc("b", 2), doc("c", 3, local: true), doc("d", 4)])
        var changes = F.changes(doc("e", 2.5), doc("d", 0, version: 2), doc("c", 3, version: 2))
        changes[F.key("rooms/b")] = F.deleted("rooms/b", 2)
        return try #require(view.applyChanges(view.computeDocumentChanges(changes)).snapshot)
    }

    @Test func laterSnapshotsReportOldAndNewIndexes() throws {
        let snapshot = try mixedSnapshot()
        #expect(F.describe(snapshot.documentChanges) == ["removed:rooms/b", "added:rooms/e", "modified:rooms/d", "metadata:rooms/c"])

        let changes = try snapshot.documentChanges(includeMetadataChanges: false)
        #expect(changes == [
            IndexedDocumentChange(type: .removed, document: doc("b", 2), oldIndex: 1, newIndex: -1),
            IndexedDocumentChange(type: .added, document: doc("e", 2.5), oldIndex: -1, newIndex: 1),
            IndexedDocumentChange(type: .modified, document: doc("d", 0, version: 2), oldIndex: 3, newIndex: 0),
        ])
    }

    @Test func metadataChangesAreModificationsOnlyWhenAskedFor() throws {
        let snapshot = try mixedSnapshot()
        let changes = try snapshot.documentChanges(includeMetadataChanges: true)
        #expect(changes.count == 4)
        #expect(changes.last == IndexedDocumentChange(type: .modified, document: doc("c", 3, version: 2), oldIndex: 3, newIndex: 3))

        // A snapshot delivered without metadata changes cannot produce them.
        let stripped = snapshot.excludingMetadataChanges()
        #expect(stripped.documentChanges.count == 3)
        #expect(stripped.excludesMetadataChanges)
        #expect(throws: DocError.self) { try stripped.documentChanges(includeMetadataChanges: true) }
        #expect(try stripped.documentChanges(includeMetadataChanges: false).count == 3)
    }

    @Test func replayingIndexedChangesReproducesTheResults() throws {
        // Random batches through a limited view; replaying the user-facing changes on the old
        // list of keys must give the new list, batch after batch.
        var rng = SplitMixGenerator(seed: 42)
        let limited = try query.limit(to: 12)
        let view = View(query: limited, remoteDocuments: [])
        var cache: [DocumentKey: Document] = [:]
        var shown: [DocumentKey] = []
        var version: Int64 = 1
        for _ in 0..<200 {
            version += 1
            var batch: [DocumentKey: MaybeDocument] = [:]
            for _ in 0..<Int.random(in: 1...5, using: &rng) {
                let key = F.key("rooms/d\(Int.random(in: 0..<30, using: &rng))")
                if Int.random(in: 0..<4, using: &rng) == 0 {
                    batch[key] = .noDocument(NoDocument(key: key, version: SnapshotVersion(microseconds: version)))
                    cache[key] = nil
                } else {
                    let document = F.doc(
                        key.description, version, ["n": .integer(Int64.random(in: 0..<20, using: &rng))],
                        local: Bool.random(using: &rng))
                    batch[key] = .document(document)
                    cache[key] = document
                }
            }
            var changes = view.computeDocumentChanges(batch)
            if changes.needsRefill {
                changes = view.computeDocumentChanges(Array(cache.values), previousChanges: changes)
            }
            guard let snapshot = view.applyChanges(changes).snapshot else { continue }
            for change in try snapshot.documentChanges(includeMetadataChanges: true) {
                switch change.type {
                case .added:
                    shown.insert(change.document.key, at: change.newIndex)
                case .removed:
                    #expect(shown[change.oldIndex] == change.document.key)
                    shown.remove(at: change.oldIndex)
                case .modified:
                    #expect(shown[change.oldIndex] == change.document.key)
                    shown.remove(at: change.oldIndex)
                    shown.insert(change.document.key, at: change.newIndex)
                }
            }
            #expect(shown == snapshot.documents.map(\.key))
            // The view holds exactly the query's results over the cache.
            #expect(snapshot.documents.map(\.key) == limited.results(from: cache.values).map(\.key))
        }
    }
}

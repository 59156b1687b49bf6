import Testing
@testable import DocCache
import DocModel
import DocTestTraits

@Suite("View", .cpuBound)
struct ViewTests {
    typealias F = ViewFixtures

    let messages = F.query("rooms/eros/messages")

    func ordered(_ field: String, descending: Bool = false) -> Query {
        try! messages.order(by: field, descending: descending)
    }

    // MARK: - Added, modified, removed

    @Test func addsDocumentsMatchingTheQuery() throws {
        let view = View(query: messages, remoteDocuments: [])
        let doc1 = F.doc("rooms/eros/messages/1", 1, ["text": "msg1"])
        let doc2 = F.doc("rooms/eros/messages/2", 1, ["text": "msg2"])
        let other = F.doc("rooms/other/messages/1", 1, ["text": "msg3"])
        let snapshot = try #require(F.apply(view, [doc1, doc2, other]))
        #expect(snapshot.query == messages)
        #expect(Array(snapshot.documents) == [doc1, doc2])
        #expect(snapshot.oldDocuments.isEmpty)
        #expect(snapshot.documentChanges == [DocumentViewChange(.added, doc1), DocumentViewChange(.added, doc2)])
        #expect(snapshot.isFromCache)
        #expect(snapshot.syncStateChanged)
        #expect(!snapshot.hasPendingWrites)
        #expect(!snapshot.excludesMetadataChanges)
        #expect(view.syncState == .local)
    }

    @Test func removesDeletedDocumentsAndReportsRemovalsFirst() throws {
        let view = View(query: messages, remoteDocuments: [])
        let doc1 = F.doc("rooms/eros/messages/1", 1)
        let doc2 = F.doc("rooms/eros/messages/2", 1)
        let doc3 = F.doc("rooms/eros/messages/3", 2)
        F.apply(view, [doc1, doc2])

        var changes = F.changes(doc3)
        changes[doc2.key] = F.deleted("rooms/eros/messages/2", 2)
        let snapshot = try #require(view.applyChanges(view.computeDocumentChanges(changes)).snapshot)
        #expect(Array(snapshot.documents) == [doc1, doc3])
        #expect(Array(snapshot.oldDocuments) == [doc1, doc2])
        #expect(snapshot.documentChanges == [DocumentViewChange(.removed, doc2), DocumentViewChange(.added, doc3)])
        #expect(snapshot.isFromCache)
        #expect(!snapshot.syncStateChanged)
    }

    @Test func unknownDocumentsLeaveTheView() throws {
        let view = View(query: messages, remoteDocuments: [])
        let doc1 = F.doc("rooms/eros/messages/1", 1)
        F.apply(view, [doc1])
        let unknown = MaybeDocument.unknown(UnknownDocument(key: doc1.key, version: SnapshotVersion(microseconds: 5)))
        let snapshot = try #require(view.applyChanges(view.computeDocumentChanges([doc1.key: unknown])).snapshot)
        #expect(snapshot.documents.isEmpty)
        #expect(snapshot.documentChanges == [DocumentViewChange(.removed, doc1)])
    }

    @Test func returnsNoSnapshotWhenNothingChanged() {
        let view = View(query: messages, remoteDocuments: [])
        let doc1 = F.doc("rooms/eros/messages/1", 1, ["n": 1])
        F.apply(view, [doc1])
        // The same document again (even at a new version, same contents): no change.
        #expect(F.apply(view, [doc1]) == nil)
        #expect(F.apply(view, [F.doc("rooms/eros/messages/1", 2, ["n": 1])]) == nil)
        // A document outside the query: no change.
        #expect(F.apply(view, [F.doc("rooms/other/messages/1", 1)]) == nil)
    }

    @Test func firstChangesAlwaysYieldASnapshotEvenWhenEmpty() throws {
        let view = View(query: messages, remoteDocuments: [])
        let snapshot = try #require(F.apply(view, []))
        #expect(snapshot.documents.isEmpty)
        #expect(snapshot.documentChanges.isEmpty)
        #expect(snapshot.syncStateChanged)
        #expect(snapshot.isFromCache)
    }

    @Test func filtersDocumentsByTheQueryFilter() throws {
        let query = try messages.filter("sort", .lessThanOrEqual, 2)
        let view = View(query: query, remoteDocuments: [])
        let doc1 = F.doc("rooms/eros/messages/1", 1, ["sort": 1])
        let doc2 = F.doc("rooms/eros/messages/2", 1, ["sort": 2])
        let doc3 = F.doc("rooms/eros/messages/3", 1, ["sort": 3])
        let doc4 = F.doc("rooms/eros/messages/4", 1)  // no `sort` field
        let doc5 = F.doc("rooms/eros/messages/5", 1, ["sort": 1])
        let snapshot = try #require(F.apply(view, [doc1, doc2, doc3, doc4, doc5]))
        #expect(F.paths(snapshot.documents) == ["rooms/eros/messages/1", "rooms/eros/messages/5", "rooms/eros/messages/2"])
    }

    @Test func documentsMovingInAndOutOfAFilterAreAddedAndRemoved() throws {
        let query = try messages.filter("sort", .lessThanOrEqual, 2)
        let view = View(query: query, remoteDocuments: [])
        let doc1 = F.doc("rooms/eros/messages/1", 1, ["sort": 1])
        let doc2 = F.doc("rooms/eros/messages/2", 1, ["sort": 3])
        let doc3 = F.doc("rooms/eros/messages/3", 1, ["sort": 2])
        let doc4 = F.doc("rooms/eros/messages/4", 1)
        let first = try #require(F.apply(view, [doc1, doc2, doc3, doc4]))
        #expect(Array(first.documents) == [doc1, doc3])

        let newDoc1 = F.doc("rooms/eros/messages/1", 2, ["sort": 2])
        let newDoc2 = F.doc("rooms/eros/messages/2", 2, ["sort": 2])
        let newDoc3 = F.doc("rooms/eros/messages/3", 2, ["sort": 3])
        let newDoc4 = F.doc("rooms/eros/messages/4", 2, ["sort": 0])
        let snapshot = try #require(F.apply(view, [newDoc1, newDoc2, newDoc3, newDoc4]))
        #expect(Array(snapshot.documents) == [newDoc4, newDoc1, newDoc2])
        #expect(F.describe(snapshot.documentChanges) == [
            "removed:rooms/eros/messages/3", "added:rooms/eros/messages/4", "added:rooms/eros/messages/2",
            "modified:rooms/eros/messages/1",
        ])
    }

    @Test func aDocumentBecomingATombstoneIsRemoved() throws {
        let view = View(query: messages, remoteDocuments: [])
        let doc1 = F.doc("rooms/eros/messages/1", 1, ["n": 1])
        let doc2 = F.doc("rooms/eros/messages/2", 1, ["n": 2])
        F.apply(view, [doc1, doc2])
        let tombstone = F.tombstoned(doc1, version: 2)
        let snapshot = try #require(F.apply(view, [tombstone]))
        #expect(Array(snapshot.documents) == [doc2])
        #expect(snapshot.documentChanges == [DocumentViewChange(.removed, doc1)])
        let userChanges = try snapshot.documentChanges(includeMetadataChanges: false)
        #expect(userChanges == [IndexedDocumentChange(type: .removed, document: doc1, oldIndex: 0, newIndex: -1)])

        // A pending (local) tombstone delete hides the document just the same.
        var pending = F.tombstoned(doc2, version: 2)
        pending.hasLocalMutations = true
        let second = try #require(F.apply(view, [pending]))
        #expect(second.documents.isEmpty)
        #expect(second.documentChanges == [DocumentViewChange(.removed, doc2)])
        #expect(!second.hasPendingWrites)
    }

    @Test func aTombstoneIsModifiedWhenTheQueryIncludesDeleted() throws {
        let query = messages.includingDeleted()
        let view = View(query: query, remoteDocuments: [])
        let doc1 = F.doc("rooms/eros/messages/1", 1, ["n": 1])
        F.apply(view, [doc1])
        let tombstone = F.tombstoned(doc1, version: 2)
        let snapshot = try #require(F.apply(view, [tombstone]))
        #expect(snapshot.documentChanges == [DocumentViewChange(.modified, tombstone)])
        #expect(snapshot.documents.first?.isTombstone == true)
    }

    // MARK: - Limits

    @Test func aPendingWriteEnteringAFullLimitPushesTheLastDocumentOut() throws {
        let query = try ordered("n").limit(to: 2)
        let view = View(query: query, remoteDocuments: [])
        let doc1 = F.doc("rooms/eros/messages/1", 1, ["n": 1])
        let doc3 = F.doc("rooms/eros/messages/3", 1, ["n": 3])
        let first = try #require(F.apply(view, [doc1, doc3]))
        #expect(Array(first.documents) == [doc1, doc3])

        let written = F.doc("rooms/eros/messages/2", 0, ["n": 2], local: true)
        let snapshot = try #require(F.apply(view, [written]))
        #expect(Array(snapshot.documents) == [doc1, written])
        #expect(snapshot.documentChanges == [DocumentViewChange(.removed, doc3), DocumentViewChange(.added, written)])
        #expect(snapshot.mutatedKeys == [written.key])
        #expect(snapshot.hasPendingWrites)
    }

    @Test func changesBeyondTheLimitAreNotReported() throws {
        let query = try ordered("num").limit(to: 2)
        let view = View(query: query, remoteDocuments: [])
        let doc1 = F.doc("rooms/eros/messages/1", 1, ["num": 1])
        var doc2 = F.doc("rooms/eros/messages/2", 1, ["num": 2])
        let doc3 = F.doc("rooms/eros/messages/3", 1, ["num": 3])
        let doc4 = F.doc("rooms/eros/messages/4", 1, ["num": 4])
        F.apply(view, [doc1, doc2])

        // doc2 moves past the window (modified + removed = removed), doc3 enters, doc4 is
        // added and cut again (nothing).
        doc2 = F.doc("rooms/eros/messages/2", 2, ["num": 5])
        var changes = view.computeDocumentChanges([doc2, doc3, doc4])
        #expect(changes.needsRefill)
        changes = view.computeDocumentChanges([doc1, doc2, doc3, doc4], previousChanges: changes)
        #expect(!changes.needsRefill)
        let snapshot = try #require(view.applyChanges(changes, targetChange: F.ackTarget(doc1, doc2, doc3, doc4)).snapshot)
        #expect(Array(snapshot.documents) == [doc1, doc3])
        #expect(snapshot.documentChanges == [DocumentViewChange(.removed, doc2), DocumentViewChange(.added, doc3)])
        #expect(!snapshot.isFromCache)
        #expect(snapshot.syncStateChanged)
    }

    @Test func deletingFromAFullLimitNeedsARefill() throws {
        let query = try messages.limit(to: 2)
        let view = View(query: query, remoteDocuments: [])
        let doc1 = F.doc("rooms/eros/messages/0", 1)
        let doc2 = F.doc("rooms/eros/messages/1", 1)
        let doc3 = F.doc("rooms/eros/messages/2", 1)
        var changes = view.computeDocumentChanges([doc1, doc2])
        #expect(!changes.needsRefill && changes.changeSet.count == 2)
        _ = view.applyChanges(changes)

        changes = view.computeDocumentChanges([doc1.key: F.deleted("rooms/eros/messages/0", 2)])
        #expect(Array(changes.documentSet) == [doc2])
        #expect(changes.needsRefill)
        #expect(changes.changeSet.count == 1)

        // The refill finds doc3 in the local cache.
        changes = view.computeDocumentChanges([doc2, doc3], previousChanges: changes)
        #expect(Array(changes.documentSet) == [doc2, doc3])
        #expect(!changes.needsRefill)
        let snapshot = try #require(view.applyChanges(changes).snapshot)
        #expect(snapshot.documentChanges == [DocumentViewChange(.removed, doc1), DocumentViewChange(.added, doc3)])
    }

    @Test func movingADocumentPastTheLimitNeedsARefill() throws {
        let query = try ordered("order").limit(to: 2)
        let view = View(query: query, remoteDocuments: [])
        let doc1 = F.doc("rooms/eros/messages/0", 1, ["order": 1])
        var doc2 = F.doc("rooms/eros/messages/1", 1, ["order": 2])
        let doc3 = F.doc("rooms/eros/messages/2", 1, ["order": 3])
        var changes = view.computeDocumentChanges([doc1, doc2, doc3])
        #expect(Array(changes.documentSet) == [doc1, doc2])
        #expect(!changes.needsRefill)
        #expect(changes.changeSet.count == 2)
        _ = view.applyChanges(changes)

        doc2 = F.doc("rooms/eros/messages/1", 2, ["order": 2000])
        changes = view.computeDocumentChanges([doc2])
        #expect(Array(changes.documentSet) == [doc1, doc2])
        #expect(changes.needsRefill)
        #expect(changes.changeSet.count == 1)

        changes = view.computeDocumentChanges([doc1, doc2, doc3], previousChanges: changes)
        #expect(Array(changes.documentSet) == [doc1, doc3])
        #expect(!changes.needsRefill)
        #expect(changes.changeSet.count == 2)
    }

    @Test func reorderingWithinOrAfterTheLimitNeedsNoRefill() {
        let query = try! ordered("order").limit(to: 3)
        let docs = (0..<5).map { F.doc("rooms/eros/messages/\($0)", 1, ["order": .integer(Int64($0 + 1))]) }

        let within = View(query: query, remoteDocuments: [])
        _ = within.applyChanges(within.computeDocumentChanges(docs))
        let moved = F.doc("rooms/eros/messages/0", 2, ["order": 3])
        let inside = within.computeDocumentChanges([moved])
        #expect(F.paths(inside.documentSet) == ["rooms/eros/messages/1", "rooms/eros/messages/0", "rooms/eros/messages/2"])
        #expect(!inside.needsRefill)
        #expect(inside.changeSet.count == 1)

        let after = View(query: query, remoteDocuments: [])
        _ = after.applyChanges(after.computeDocumentChanges(docs))
        let beyond = after.computeDocumentChanges([F.doc("rooms/eros/messages/3", 2, ["order": 6])])
        #expect(F.paths(beyond.documentSet) == ["rooms/eros/messages/0", "rooms/eros/messages/1", "rooms/eros/messages/2"])
        #expect(!beyond.needsRefill)
        #expect(beyond.changeSet.isEmpty)
    }

    @Test func additionsPastTheLimitAndDeletionsFarFromItNeedNoRefill() {
        let full = View(query: try! messages.limit(to: 2), remoteDocuments: [])
        _ = full.applyChanges(full.computeDocumentChanges([F.doc("rooms/eros/messages/0", 1), F.doc("rooms/eros/messages/1", 1)]))
        let pastLimit = full.computeDocumentChanges([F.doc("rooms/eros/messages/2", 2)])
        #expect(!pastLimit.needsRefill && pastLimit.changeSet.isEmpty && pastLimit.documentSet.count == 2)
        // Deleting a document that is not in the results changes nothing.
        let irrelevant = full.computeDocumentChanges([F.key("rooms/eros/messages/9"): F.deleted("rooms/eros/messages/9", 2)])
        #expect(!irrelevant.needsRefill && irrelevant.changeSet.isEmpty)

        let roomy = View(query: try! messages.limit(to: 20), remoteDocuments: [])
        _ = roomy.applyChanges(roomy.computeDocumentChanges([F.doc("rooms/eros/messages/0", 1), F.doc("rooms/eros/messages/1", 1)]))
        let deletion = roomy.computeDocumentChanges([F.key("rooms/eros/messages/1"): F.deleted("rooms/eros/messages/1", 2)])
        #expect(!deletion.needsRefill)
        #expect(F.paths(deletion.documentSet) == ["rooms/eros/messages/0"])
    }

    @Test func limitToLastKeepsTheEndOfTheOrder() throws {
        let query = try ordered("n").limit(toLast: 2)
        let view = View(query: query, remoteDocuments: [])
        let docs = (1...4).map { F.doc("rooms/eros/messages/\($0)", 1, ["n": .integer(Int64($0))]) }
        let first = try #require(F.apply(view, docs))
        // The last two, still in ascending query order.
        #expect(F.paths(first.documents) == ["rooms/eros/messages/3", "rooms/eros/messages/4"])

        // A new document at the end pushes the *first* one out.
        let doc5 = F.doc("rooms/eros/messages/5", 1, ["n": 5])
        let second = try #require(F.apply(view, [doc5]))
        #expect(F.paths(second.documents) == ["rooms/eros/messages/4", "rooms/eros/messages/5"])
        #expect(F.describe(second.documentChanges) == ["removed:rooms/eros/messages/3", "added:rooms/eros/messages/5"])

        // A new document before the window changes nothing.
        #expect(view.computeDocumentChanges([F.doc("rooms/eros/messages/0", 1, ["n": 0])]).changeSet.isEmpty)

        // Moving the window's first document further down needs a refill from the cache.
        let moved = F.doc("rooms/eros/messages/4", 2, ["n": -1])
        let changes = view.computeDocumentChanges([moved])
        #expect(changes.needsRefill)
        let cache = [docs[0], docs[1], docs[2], moved, doc5]
        let third = try #require(F.apply(view, [moved], cache: cache))
        #expect(F.paths(third.documents) == ["rooms/eros/messages/3", "rooms/eros/messages/5"])
        #expect(F.describe(third.documentChanges) == ["removed:rooms/eros/messages/4", "added:rooms/eros/messages/3"])

        // Deleting from the full window needs a refill too.
        let deletion = view.computeDocumentChanges([doc5.key: F.deleted("rooms/eros/messages/5", 3)])
        #expect(deletion.needsRefill)
    }

    // MARK: - Pending writes

    @Test func tracksMutatedKeys() {
        let view = View(query: messages, remoteDocuments: [])
        let doc1 = F.doc("rooms/eros/messages/0", 1)
        let doc2 = F.doc("rooms/eros/messages/1", 1, local: true)
        var changes = view.computeDocumentChanges([doc1, doc2])
        #expect(changes.mutatedKeys == [doc2.key])
        // Remembered across a refill pass…
        let doc3 = F.doc("rooms/eros/messages/2", 1)
        #expect(view.computeDocumentChanges([doc3], previousChanges: changes).mutatedKeys == [doc2.key])
        _ = view.applyChanges(changes)
        #expect(view.mutatedKeys == [doc2.key])
        // …and across snapshots.
        changes = view.computeDocumentChanges([doc3])
        #expect(changes.mutatedKeys == [doc2.key])
        _ = view.applyChanges(changes)
        // A new local write adds its key; the acknowledged version removes it.
        let doc4 = F.doc("rooms/eros/messages/3", 0, local: true)
        #expect(view.computeDocumentChanges([doc4]).mutatedKeys == [doc2.key, doc4.key])
        changes = view.computeDocumentChanges([F.doc("rooms/eros/messages/1", 2)])
        #expect(changes.mutatedKeys.isEmpty)
    }

    @Test func committedMutationsAreNotPendingInTheFirstSnapshot() throws {
        let local = View(query: messages, remoteDocuments: [])
        let pending = try #require(F.apply(local, [F.doc("rooms/eros/messages/1", 0, local: true)]))
        #expect(pending.hasPendingWrites)

        let committed = View(query: messages, remoteDocuments: [])
        let acked = try #require(F.apply(committed, [F.doc("rooms/eros/messages/1", 1, committed: true)]))
        #expect(!acked.hasPendingWrites)
    }

    @Test func clearingPendingWritesIsAMetadataChange() throws {
        let view = View(query: messages, remoteDocuments: [])
        let written = F.doc("rooms/eros/messages/1", 0, ["n": 1], local: true)
        F.apply(view, [written])
        let synced = F.doc("rooms/eros/messages/1", 3, ["n": 1])
        let snapshot = try #require(F.apply(view, [synced]))
        #expect(snapshot.documentChanges == [DocumentViewChange(.metadata, synced)])
        #expect(!snapshot.hasPendingWrites)
        #expect(Array(snapshot.documents) == [synced])
    }

    @Test func suppressesTheWriteAcknowledgementUntilWatchCatchesUp() throws {
        let view = View(query: messages, remoteDocuments: [])
        let doc1 = F.doc("rooms/eros/messages/1", 1, ["time": 1], local: true)
        let doc1Committed = F.doc("rooms/eros/messages/1", 2, ["time": 2], committed: true)
        let doc1Acknowledged = F.doc("rooms/eros/messages/1", 2, ["time": 2])
        let doc2 = F.doc("rooms/eros/messages/2", 1, ["time": 1], local: true)
        let doc2Modified = F.doc("rooms/eros/messages/2", 2, ["time": 3], local: true)
        let doc2Acknowledged = F.doc("rooms/eros/messages/2", 2, ["time": 3])

        let first = try #require(F.apply(view, [doc1, doc2]))
        #expect(first.documentChanges == [DocumentViewChange(.added, doc1), DocumentViewChange(.added, doc2)])

        // doc1's acknowledged version (with the server's value) is held back.
        let second = try #require(F.apply(view, [doc1Committed, doc2Modified]))
        #expect(second.documentChanges == [DocumentViewChange(.modified, doc2Modified)])
        #expect(second.documents.document(for: doc1.key) == doc1)

        let third = try #require(F.apply(view, [doc1Acknowledged, doc2Acknowledged]))
        #expect(third.documentChanges == [
            DocumentViewChange(.modified, doc1Acknowledged), DocumentViewChange(.metadata, doc2Acknowledged),
        ])
        #expect(!third.hasPendingWrites)
    }

    // MARK: - Sync state and limbo

    @Test func becomesSyncedWhenTheTargetIsCurrent() throws {
        let view = View(query: messages, remoteDocuments: [])
        let doc1 = F.doc("rooms/eros/messages/1", 1)
        let first = try #require(F.apply(view, [doc1]))
        #expect(first.isFromCache && view.syncState == .local)

        // Current, and the server has doc1: synced, with only a sync-state change.
        let synced = try #require(F.apply(view, [], F.ackTarget(doc1, resumeToken: [7])))
        #expect(!synced.isFromCache)
        #expect(synced.syncStateChanged)
        #expect(synced.documentChanges.isEmpty)
        #expect(synced.hasCachedResults)
        #expect(view.syncState == .synced && view.isCurrent)
        #expect(view.synchronizedKeys == [doc1.key])
        #expect(view.computeRemoteKeys() == [doc1.key])

        // Still current, nothing new: no snapshot.
        #expect(F.apply(view, [], F.markCurrent()) == nil)

        // The server drops doc1 from the target (without deleting it): it goes into limbo
        // and the view is from cache again.
        let dropped = TargetChange(current: true, removedDocuments: [doc1.key])
        let change = view.applyChanges(view.computeDocumentChanges([Document]()), targetChange: dropped)
        #expect(change.limboChanges == [.added(doc1.key)])
        let snapshot = try #require(change.snapshot)
        #expect(snapshot.isFromCache && snapshot.syncStateChanged && !snapshot.hasCachedResults)
    }

    @Test func keepsTrackOfLimboDocuments() {
        let view = View(query: messages, remoteDocuments: [])
        let doc1 = F.doc("rooms/eros/messages/0", 1)
        let doc2 = F.doc("rooms/eros/messages/1", 1)
        let doc3 = F.doc("rooms/eros/messages/2", 1)

        var change = view.applyChanges(view.computeDocumentChanges([doc1]))
        #expect(change.limboChanges.isEmpty)  // not current: limbo is unknown

        change = view.applyChanges(view.computeDocumentChanges([Document]()), targetChange: F.markCurrent())
        #expect(change.limboChanges == [.added(doc1.key)])
        #expect(view.limboDocuments == [doc1.key])
        #expect(change.snapshot == nil)  // still from cache: nothing to report

        change = view.applyChanges(view.computeDocumentChanges([Document]()), targetChange: F.ackTarget(doc1))
        #expect(change.limboChanges == [.removed(doc1.key)])
        #expect(change.snapshot?.isFromCache == false)

        change = view.applyChanges(view.computeDocumentChanges([doc2]), targetChange: F.ackTarget(doc2))
        #expect(change.limboChanges.isEmpty)

        change = view.applyChanges(view.computeDocumentChanges([doc3]))
        #expect(change.limboChanges == [.added(doc3.key)])
        #expect(change.snapshot?.isFromCache == true)
        #expect(change.snapshot?.syncStateChanged == true)

        change = view.applyChanges(view.computeDocumentChanges([doc3.key: F.deleted("rooms/eros/messages/2", 2)]))
        #expect(change.limboChanges == [.removed(doc3.key)])
        #expect(view.limboDocuments.isEmpty)
        #expect(change.snapshot?.isFromCache == false)
    }

    @Test func documentsWithLocalWritesAreNotInLimbo() {
        let view = View(query: messages, remoteDocuments: [])
        let written = F.doc("rooms/eros/messages/1", 0, local: true)
        let change = view.applyChanges(view.computeDocumentChanges([written]), targetChange: F.markCurrent())
        #expect(change.limboChanges.isEmpty)
        #expect(view.limboDocuments.isEmpty)
        #expect(change.snapshot?.isFromCache == false)
        #expect(change.snapshot?.hasPendingWrites == true)
    }

    /// An acknowledged write whose document the server's target never includes (the server's
    /// document does not match: a merge into a soft-deleted document) gets no watch change:
    /// the view would show it as pending for ever. Once watch is past the commit without it,
    /// it is in limbo; before that, the acknowledgement alone changes nothing.
    @Test func anAcknowledgedWriteWatchDoesNotConfirmGoesIntoLimboOnceWatchIsPastIt() {
        let view = View(query: messages, remoteDocuments: [])
        let written = F.doc("rooms/eros/messages/1", 0, ["text": "hi"], local: true)
        _ = view.applyChanges(view.computeDocumentChanges([written]), targetChange: F.markCurrent(),
                              watchSnapshotVersion: SnapshotVersion(microseconds: 5))
        // Acknowledged at version 10, the same data: no change to show, and watch is at 5.
        let acknowledged = F.doc("rooms/eros/messages/1", 10, ["text": "hi"], committed: true)
        var change = view.applyChanges(view.computeDocumentChanges([acknowledged]),
                                       watchSnapshotVersion: SnapshotVersion(microseconds: 5))
        #expect(change.snapshot == nil)
        #expect(change.limboChanges.isEmpty)
        #expect(view.acknowledgedWrites == [written.key: SnapshotVersion(microseconds: 10)])
        // Watch at 9: not yet.
        change = view.applyChanges(view.computeDocumentChanges([Document]()), targetChange: F.markCurrent(),
                                   watchSnapshotVersion: SnapshotVersion(microseconds: 9))
        #expect(change.limboChanges.isEmpty)
        // Watch at 10, the target still without it: in limbo, and the view is from cache.
        change = view.applyChanges(view.computeDocumentChanges([Document]()), targetChange: F.markCurrent(),
                                   watchSnapshotVersion: SnapshotVersion(microseconds: 10))
        #expect(change.limboChanges == [.added(written.key)])
        #expect(change.snapshot?.isFromCache == true)
        // The resolution finds it soft-deleted: it leaves the view and limbo.
        change = view.applyChanges(view.computeDocumentChanges(F.changes(F.tombstoned(F.doc("rooms/eros/messages/1", 10, ["text": "hi"]), version: 10))),
                                   watchSnapshotVersion: SnapshotVersion(microseconds: 10))
        #expect(change.limboChanges == [.removed(written.key)])
        #expect(change.snapshot?.documents.isEmpty == true)
        #expect(change.snapshot?.hasPendingWrites == false)
        #expect(change.snapshot?.isFromCache == false)
        #expect(view.acknowledgedWrites.isEmpty)
    }

    /// The usual order: watch sends the document with the commit, and it never enters limbo.
    @Test func anAcknowledgedWriteWatchConfirmsNeverEntersLimbo() {
        let view = View(query: messages, remoteDocuments: [])
        let written = F.doc("rooms/eros/messages/1", 0, ["text": "hi"], local: true)
        _ = view.applyChanges(view.computeDocumentChanges([written]), targetChange: F.markCurrent())
        let acknowledged = F.doc("rooms/eros/messages/1", 10, ["text": "hi"], committed: true)
        _ = view.applyChanges(view.computeDocumentChanges([acknowledged]))
        let fromWatch = F.doc("rooms/eros/messages/1", 10, ["text": "hi"])
        let change = view.applyChanges(view.computeDocumentChanges([fromWatch]), targetChange: F.ackTarget(fromWatch),
                                       watchSnapshotVersion: SnapshotVersion(microseconds: 10))
        #expect(change.limboChanges.isEmpty)
        #expect(view.acknowledgedWrites.isEmpty)
        #expect(change.snapshot?.hasPendingWrites == false)
        #expect(change.snapshot?.isFromCache == false)
    }

    @Test func resumingAQueryWithItsRemoteKeysCreatesNoLimbo() {
        let doc1 = F.doc("rooms/eros/messages/0", 1)
        let doc2 = F.doc("rooms/eros/messages/1", 1)
        let view = View(query: messages, remoteDocuments: [doc1.key, doc2.key])
        let change = view.applyChanges(view.computeDocumentChanges([doc1, doc2]), targetChange: F.markCurrent())
        #expect(change.limboChanges.isEmpty)
        #expect(change.snapshot?.isFromCache == false)
    }

    @Test func limboResolutionCanBeDisabled() {
        let view = View(query: messages, remoteDocuments: [])
        let doc1 = F.doc("rooms/eros/messages/0", 1)
        let change = view.applyChanges(
            view.computeDocumentChanges([doc1]), limboResolutionEnabled: false, targetChange: F.markCurrent())
        #expect(change.limboChanges.isEmpty)
        #expect(view.limboDocuments.isEmpty)
        #expect(change.snapshot?.isFromCache == false)
    }

    @Test func aTargetPendingResetStaysFromCache() {
        let view = View(query: messages, remoteDocuments: [])
        let doc1 = F.doc("rooms/eros/messages/0", 1)
        let change = view.applyChanges(
            view.computeDocumentChanges([doc1]), targetChange: F.markCurrent(), targetIsPendingReset: true)
        #expect(change.limboChanges.isEmpty)
        #expect(change.snapshot?.isFromCache == true)
        #expect(view.syncState == .local)
    }

    @Test func goingOfflineMakesACurrentViewFromCache() throws {
        let view = View(query: messages, remoteDocuments: [])
        let doc1 = F.doc("rooms/eros/messages/0", 1)
        F.apply(view, [doc1], F.ackTarget(doc1))
        #expect(view.syncState == .synced)

        #expect(view.applyOnlineStateChange(.online).snapshot == nil)
        let offline = try #require(view.applyOnlineStateChange(.offline).snapshot)
        #expect(offline.isFromCache)
        #expect(offline.syncStateChanged)
        #expect(offline.documentChanges.isEmpty)
        #expect(Array(offline.documents) == [doc1])
        #expect(!view.isCurrent && view.syncState == .local)
        // Already not current: no further snapshot.
        #expect(view.applyOnlineStateChange(.offline).snapshot == nil)

        // Back online, the server marks the target current again.
        let back = try #require(F.apply(view, [], F.markCurrent()))
        #expect(!back.isFromCache)
    }
}

package import DocModel

/// The results of one query as the client shows them, and how they change (Firestore's
/// `View`).
///
/// A view holds the documents that match its query (cut to the query's limit), which of
/// them have pending local writes, which ones the server says are in the target
/// (``synchronizedKeys``), whether the target is current, and the documents in limbo. The sync
/// engine feeds it in two steps:
///
/// 1. ``computeDocumentChanges(_:previousChanges:)`` with changed documents (from a local
///    write or a remote event) computes the would-be results without changing the view. When
///    the result ``ViewDocumentChanges/needsRefill``, the sync engine re-runs the query on the
///    local store and calls it again with all results and the first outcome as
///    `previousChanges`.
/// 2. ``applyChanges(_:limboResolutionEnabled:targetChange:targetIsPendingReset:)`` adopts the
///    outcome, applies the target change (server membership, current flag), recomputes limbo
///    documents and returns a snapshot when something changed.
///
/// A non-`Sendable` reference type owned by the sync engine and used from its executor only.
package final class View {
    /// The query the view computes.
    package let query: Query
    /// The documents of the view, in query order.
    package private(set) var documents: DocumentSet
    /// The keys of ``documents`` with pending local writes.
    package private(set) var mutatedKeys: Set<DocumentKey> = []
    /// Documents of the view that still show a local write the server has acknowledged, with
    /// the acknowledging commit's version. The view keeps showing the local version (marked
    /// pending) until watch sends the document, so that an acknowledgement does not make the
    /// results flicker; but if watch reaches that version without the document in the target
    /// (the server's document does not match, e.g. a merge into a soft-deleted document), no
    /// watch change will ever come for it: it is then in limbo, and resolved from the server.
    package private(set) var acknowledgedWrites: [DocumentKey: SnapshotVersion] = [:]
    /// The newest global snapshot version of watch the view was told of (``applyChanges``).
    package private(set) var watchSnapshotVersion: SnapshotVersion = .none
    /// Documents the server says are in the target (Firestore's synced documents).
    package private(set) var synchronizedKeys: Set<DocumentKey>
    /// Documents of the view the server does not have in the target and that have no local
    /// writes to explain them. Only computed while the view is current.
    package private(set) var limboDocuments: Set<DocumentKey> = []
    /// The sync state of the last applied changes.
    package private(set) var syncState: SyncState = .none
    /// Whether the server said the target is current and the view has not lost consistency
    /// since (going offline resets it).
    package private(set) var isCurrent = false

    /// A view of `query` with no documents yet, whose target the server has already said
    /// contains `remoteDocuments` (the target's keys from the local store when re-listening).
    package init(query: Query, remoteDocuments: Set<DocumentKey>) {
        self.query = query
        self.documents = DocumentSet(query: query)
        self.synchronizedKeys = remoteDocuments
    }

    /// The keys the server says match the target: what the sync engine reports as the
    /// target's remote keys.
    package func computeRemoteKeys() -> Set<DocumentKey> { synchronizedKeys }

    // MARK: - Computing changes

    /// Computes the view's results after `changes` (documents that changed, deletions as
    /// `NoDocument`s, unknown documents), without changing the view.
    ///
    /// - Parameters:
    ///   - changes: the new state of every changed document, by key.
    ///   - previousChanges: when refilling, the outcome of the first pass, to start from
    ///     instead of the view's documents.
    package func computeDocumentChanges(
        _ changes: [DocumentKey: MaybeDocument], previousChanges: ViewDocumentChanges? = nil
    ) -> ViewDocumentChanges {
        compute(changes.lazy.map { ($0.key, $0.value.document) }, previousChanges: previousChanges)
    }

    /// Computes the view's results with `documents` as the new state of their keys (e.g. the
    /// query's results from the local store when refilling), without changing the view.
    /// Keys not among `documents` keep their state.
    package func computeDocumentChanges(
        _ documents: some Sequence<Document>, previousChanges: ViewDocumentChanges? = nil
    ) -> ViewDocumentChanges {
        compute(documents.lazy.map { ($0.key, $0) }, previousChanges: previousChanges)
    }

    private func compute(
        _ changes: some Sequence<(DocumentKey, Document?)>, previousChanges: ViewDocumentChanges?
    ) -> ViewDocumentChanges {
        if previousChanges == nil, documents.isEmpty, mutatedKeys.isEmpty {
            let candidates = Array(changes)
            return firstResults(candidates) ?? computeOneByOne(candidates, previousChanges: nil)
        }
        return computeOneByOne(changes, previousChanges: previousChanges)
    }

    /// The first results of an empty view, in bulk: the matching documents sorted once and
    /// cut to the limit, every one of them added (what the general computation gives for an
    /// empty view, without placing and recording the documents one at a time). Callers pass
    /// each key once; should a key still come twice among the results, this gives `nil` and
    /// the general computation (a later document replaces an earlier one) decides.
    private func firstResults(_ candidates: [(DocumentKey, Document?)]) -> ViewDocumentChanges? {
        let results = query.results(from: candidates.lazy.compactMap(\.1))
        guard let documentSet = DocumentSet(query: query, sortedDocuments: results) else { return nil }
        var mutated = Set<DocumentKey>()
        for document in results where document.hasLocalMutations { mutated.insert(document.key) }
        return ViewDocumentChanges(
            documentSet: documentSet, changeSet: .additions(of: documentSet), mutatedKeys: mutated, needsRefill: false)
    }

    /// The general computation: each changed document placed and its change recorded in turn.
    private func computeOneByOne(
        _ changes: some Sequence<(DocumentKey, Document?)>, previousChanges: ViewDocumentChanges?
    ) -> ViewDocumentChanges {
        var changeSet = previousChanges?.changeSet ?? DocumentViewChangeSet()
        let oldDocuments = previousChanges?.documentSet ?? documents
        let oldMutatedKeys = mutatedKeys
        var newMutatedKeys = previousChanges?.mutatedKeys ?? mutatedKeys
        var newAcknowledged = previousChanges?.acknowledgedWrites ?? acknowledgedWrites
        var newDocuments = oldDocuments
        var needsRefill = false

        // The edge of a full limit window: a document moving beyond it, or leaving, may let
        // in a document the view has not seen.
        let windowIsFull = query.limit.map { oldDocuments.count == $0 } ?? false
        let lastInLimit = windowIsFull && query.limitType == .first ? oldDocuments.last : nil
        let firstInLimitToLast = windowIsFull && query.limitType == .last ? oldDocuments.first : nil

        for (key, candidate) in changes {
            let oldDocument = oldDocuments.document(for: key)
            let newDocument = candidate.flatMap { query.matches($0) ? $0 : nil }

            let oldHadPendingWrites = oldDocument != nil && oldMutatedKeys.contains(key)
            // Committed (acknowledged, not yet seen on watch) writes count only for documents
            // written while this view existed.
            let newHasPendingWrites = newDocument.map {
                $0.hasLocalMutations || (oldMutatedKeys.contains(key) && $0.hasCommittedMutations)
            } ?? false

            var changeApplied = false
            switch (oldDocument, newDocument) {
            case let (old?, new?):
                if old.data != new.data {
                    if !Self.shouldWaitForSyncedDocument(new, old: old) {
                        changeSet.add(DocumentViewChange(.modified, new))
                        changeApplied = true
                        let pastLimit = lastInLimit.map { oldDocuments.sortsBefore($0, new) } ?? false
                        let beforeLimitToLast = firstInLimitToLast.map { oldDocuments.sortsBefore(new, $0) } ?? false
                        if pastLimit || beforeLimitToLast {
                            // The document moved out of the window: a document the view has not
                            // seen may now belong in it.
                            needsRefill = true
                        }
                    }
                } else if oldHadPendingWrites != newHasPendingWrites {
                    changeSet.add(DocumentViewChange(.metadata, new))
                    changeApplied = true
                }
            case let (nil, new?):
                changeSet.add(DocumentViewChange(.added, new))
                changeApplied = true
            case let (old?, nil):
                changeSet.add(DocumentViewChange(.removed, old))
                changeApplied = true
                if lastInLimit != nil || firstInLimitToLast != nil {
                    // A full window lost a document: the local cache may hold the next one.
                    needsRefill = true
                }
            case (nil, nil):
                break
            }

            // A local document whose acknowledged version is held back (or equal): remember the
            // acknowledging commit.
            if !changeApplied, let oldDocument, oldDocument.hasLocalMutations, let newDocument,
               newDocument.hasCommittedMutations, !newDocument.hasLocalMutations {
                newAcknowledged[key] = newDocument.version
            } else {
                newAcknowledged[key] = nil
            }

            if changeApplied {
                if let newDocument {
                    newDocuments.insert(newDocument)
                    if newDocument.hasLocalMutations {
                        newMutatedKeys.insert(key)
                    } else {
                        newMutatedKeys.remove(key)
                    }
                } else {
                    newDocuments.remove(key)
                    newMutatedKeys.remove(key)
                }
            }
        }

        // Cut the results to the limit, dropping from the end the limit does not keep.
        if let limit = query.limit, newDocuments.count > limit {
            for _ in 0..<(newDocuments.count - limit) {
                let dropped = query.limitType == .first ? newDocuments.last! : newDocuments.first!
                newDocuments.remove(dropped.key)
                newMutatedKeys.remove(dropped.key)
                newAcknowledged[dropped.key] = nil
                changeSet.add(DocumentViewChange(.removed, dropped))
            }
        }

        assert(!needsRefill || previousChanges == nil, "View: a refill pass itself needs a refill")
        return ViewDocumentChanges(
            documentSet: newDocuments, changeSet: changeSet, mutatedKeys: newMutatedKeys, needsRefill: needsRefill,
            acknowledgedWrites: newAcknowledged)
    }

    /// Whether to hold back the change of a document whose local write was just acknowledged
    /// (e.g. a server timestamp got its value): watch will send the final document, so the
    /// user sees one event with pending writes and one with the final state, not three.
    private static func shouldWaitForSyncedDocument(_ new: Document, old: Document) -> Bool {
        old.hasLocalMutations && new.hasCommittedMutations && !new.hasLocalMutations
    }

    // MARK: - Applying changes

    /// Adopts `changes` (which must not need a refill), applies `targetChange` and returns a
    /// snapshot when the documents or the sync state changed, plus the limbo changes.
    ///
    /// - Parameters:
    ///   - changes: the outcome of ``computeDocumentChanges(_:previousChanges:)``.
    ///   - limboResolutionEnabled: whether to recompute limbo documents (when `false` they are
    ///     left as they are and no limbo changes are reported).
    ///   - targetChange: what the server said about the view's target in this event: added
    ///     and removed documents update ``synchronizedKeys``, `current` sets ``isCurrent``, and
    ///     a non-empty resume token marks the snapshot as having cached results.
    ///   - targetIsPendingReset: the target's existence filter mismatched and it is being
    ///     re-listened: the view stays from cache and limbo documents are not recomputed.
    ///   - watchSnapshotVersion: the newest global snapshot version watch has sent (kept when
    ///     older than one given before): how far the server's membership of the target is
    ///     known (see ``acknowledgedWrites``).
    package func applyChanges(
        _ changes: ViewDocumentChanges, limboResolutionEnabled: Bool = true, targetChange: TargetChange? = nil,
        targetIsPendingReset: Bool = false, watchSnapshotVersion: SnapshotVersion = .none
    ) -> ViewChange {
        assert(!changes.needsRefill, "View: cannot apply changes that need a refill")
        let oldDocuments = documents
        documents = changes.documentSet
        mutatedKeys = changes.mutatedKeys
        acknowledgedWrites = changes.acknowledgedWrites
        self.watchSnapshotVersion = max(self.watchSnapshotVersion, watchSnapshotVersion)

        let sortedChanges = changes.changeSet.changes(sortedBy: documents)
        apply(targetChange)
        let limboChanges = limboResolutionEnabled && !targetIsPendingReset ? updateLimboDocuments() : []

        let synced = limboDocuments.isEmpty && isCurrent && !targetIsPendingReset
        let newSyncState: SyncState = synced ? .synced : .local
        let syncStateChanged = newSyncState != syncState
        syncState = newSyncState

        guard !sortedChanges.isEmpty || syncStateChanged else {
            return ViewChange(snapshot: nil, limboChanges: limboChanges)
        }
        let snapshot = ViewSnapshot(
            query: query, documents: documents, oldDocuments: oldDocuments, documentChanges: sortedChanges,
            mutatedKeys: mutatedKeys, isFromCache: newSyncState == .local, syncStateChanged: syncStateChanged,
            excludesMetadataChanges: false, hasCachedResults: targetChange.map { !$0.resumeToken.isEmpty } ?? false)
        return ViewChange(snapshot: snapshot, limboChanges: limboChanges)
    }

    /// Applies a change of the network state. Going offline while current makes the view not
    /// current (the server will send `current` again once back online), which yields a
    /// snapshot marked from cache; any other change has no effect.
    package func applyOnlineStateChange(_ state: OnlineState) -> ViewChange {
        guard isCurrent && state == .offline else { return ViewChange(snapshot: nil) }
        isCurrent = false
        return applyChanges(
            ViewDocumentChanges(
                documentSet: documents, changeSet: DocumentViewChangeSet(), mutatedKeys: mutatedKeys,
                needsRefill: false, acknowledgedWrites: acknowledgedWrites),
            limboResolutionEnabled: false)
    }

    // MARK: - Target and limbo state

    private func apply(_ targetChange: TargetChange?) {
        guard let targetChange else { return }
        synchronizedKeys.formUnion(targetChange.addedDocuments)
        synchronizedKeys.subtract(targetChange.removedDocuments)
        isCurrent = targetChange.current
    }

    /// Whether the view's document `key` should be in limbo: it is in the view, the server
    /// does not list it in the target, and no local write explains the difference.
    private func shouldBeInLimbo(_ key: DocumentKey) -> Bool {
        if synchronizedKeys.contains(key) { return false }
        guard let document = documents.document(for: key) else { return false }
        // Shown with a local write the server acknowledged: in limbo once watch is past that
        // commit without the document in the target.
        if let acknowledged = acknowledgedWrites[key] { return acknowledged <= watchSnapshotVersion }
        return !document.hasLocalMutations
    }

    /// Recomputes ``limboDocuments`` (only while current: otherwise the server's membership
    /// is not known to be complete) and returns what changed: resolved keys, then new ones,
    /// each in key order.
    private func updateLimboDocuments() -> [LimboDocumentChange] {
        guard isCurrent else { return [] }
        let old = limboDocuments
        limboDocuments = Set(documents.lazy.map(\.key).filter(shouldBeInLimbo))
        let removed = old.subtracting(limboDocuments).sorted().map(LimboDocumentChange.removed)
        let added = limboDocuments.subtracting(old).sorted().map(LimboDocumentChange.added)
        return removed + added
    }
}

package import DocModel

/// A user-facing document change: what happened to a document and where it was and is in the
/// results, so a UI list can be updated by applying the changes in order.
///
/// Indexes are positions in the results: ``oldIndex`` in the results after every earlier
/// change of the same snapshot was applied, ``newIndex`` after this one is applied. `-1`
/// stands for "none" (``oldIndex`` of an addition, ``newIndex`` of a removal).
package struct IndexedDocumentChange: Sendable, Hashable, CustomStringConvertible {
    /// The user-facing kinds of change (a metadata-only change is reported as `modified`).
    package enum Kind: Sendable, Hashable, CaseIterable {
        case added
        case modified
        case removed
    }

    /// The index meaning "not in the results".
    package static let noIndex = -1

    package var type: Kind
    /// The document after the change (for a removal, as it was when it left).
    package var document: Document
    /// The document's position before the change, or ``noIndex`` for an addition.
    package var oldIndex: Int
    /// The document's position after the change, or ``noIndex`` for a removal.
    package var newIndex: Int
    /// Whether the document has pending local writes in the snapshot (its key is one of the
    /// snapshot's ``ViewSnapshot/mutatedKeys``).
    package var hasPendingWrites: Bool

    package init(type: Kind, document: Document, oldIndex: Int, newIndex: Int, hasPendingWrites: Bool = false) {
        self.type = type
        self.document = document
        self.oldIndex = oldIndex
        self.newIndex = newIndex
        self.hasPendingWrites = hasPendingWrites
    }

    package var description: String { "\(type)(\(document.key), \(oldIndex) → \(newIndex))" }
}

extension ViewSnapshot {
    /// The snapshot's changes as a user sees them, with old and new indexes (Firestore's
    /// `QuerySnapshot.documentChanges`).
    ///
    /// For a first snapshot (no old documents) every change is an addition at increasing
    /// indexes 0, 1, 2, …. Otherwise the changes are replayed on the old results in order:
    /// a removal reports its old index, an addition its new index, a modification both.
    /// Metadata-only changes are reported as `modified` when `includeMetadataChanges` is set
    /// and skipped otherwise.
    ///
    /// Throws `invalidArgument` when metadata changes are asked for but this snapshot was
    /// delivered to a listener that excluded them (they are no longer known).
    package func documentChanges(includeMetadataChanges: Bool) throws(DocError) -> [IndexedDocumentChange] {
        if includeMetadataChanges && excludesMetadataChanges {
            throw DocError(
                .invalidArgument,
                "To include metadata changes with your document changes, you must also listen with includeMetadataChanges: true.")
        }
        if oldDocuments.isEmpty {
            return documentChanges.enumerated().map { index, change in
                IndexedDocumentChange(
                    type: .added, document: change.document, oldIndex: IndexedDocumentChange.noIndex,
                    newIndex: index, hasPendingWrites: mutatedKeys.contains(change.document.key))
            }
        }
        var tracker = oldDocuments
        var result: [IndexedDocumentChange] = []
        result.reserveCapacity(documentChanges.count)
        for change in documentChanges {
            if change.kind == .metadata && !includeMetadataChanges { continue }
            let key = change.document.key
            var oldIndex = IndexedDocumentChange.noIndex
            var newIndex = IndexedDocumentChange.noIndex
            if change.kind != .added {
                oldIndex = tracker.index(of: key) ?? IndexedDocumentChange.noIndex
                tracker.remove(key)
            }
            if change.kind != .removed {
                tracker.insert(change.document)
                newIndex = tracker.index(of: key) ?? IndexedDocumentChange.noIndex
            }
            let type: IndexedDocumentChange.Kind
            switch change.kind {
            case .added: type = .added
            case .removed: type = .removed
            case .modified, .metadata: type = .modified
            }
            result.append(
                IndexedDocumentChange(
                    type: type, document: change.document, oldIndex: oldIndex, newIndex: newIndex,
                    hasPendingWrites: mutatedKeys.contains(key)))
        }
        return result
    }
}

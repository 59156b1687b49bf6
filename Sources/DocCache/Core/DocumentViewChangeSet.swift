package import DocModel

/// The changes to a view's documents while a batch of updates is applied, at most one per
/// document: a new change for a document already changed is merged with the earlier one
/// (Firestore's rules).
///
/// | earlier  | then      | result                                   |
/// |----------|-----------|------------------------------------------|
/// | added    | modified  | added (with the new document)            |
/// | added    | metadata  | added (with the new document)            |
/// | added    | removed   | nothing                                  |
/// | modified | modified  | modified (with the new document)         |
/// | modified | metadata  | modified (with the new document)         |
/// | modified | removed   | removed (with the *earlier* document)    |
/// | metadata | modified  | modified                                 |
/// | metadata | metadata  | metadata (with the new document)         |
/// | metadata | removed   | removed                                  |
/// | removed  | added     | modified (with the new document)         |
///
/// The other combinations (added after added, modified or metadata; anything but added after
/// removed) cannot come from a consistent view; they trip an assertion in debug builds and
/// keep the later change in release builds.
package struct DocumentViewChangeSet: Sendable, Equatable {
    private var byKey: [DocumentKey: DocumentViewChange] = [:]
    /// The changes in snapshot order, when known without sorting (``additions(of:)``);
    /// dropped by any later ``add(_:)``.
    private var ordered: [DocumentViewChange]?

    package init() {}

    /// Every document of `documents` as added: the changes of a view's first results.
    package static func additions(of documents: DocumentSet) -> DocumentViewChangeSet {
        var set = DocumentViewChangeSet()
        let changes = documents.documents.map { DocumentViewChange(.added, $0) }
        set.byKey.reserveCapacity(changes.count)
        for change in changes { set.byKey[change.document.key] = change }
        set.ordered = changes
        return set
    }

    package static func == (a: DocumentViewChangeSet, b: DocumentViewChangeSet) -> Bool { a.byKey == b.byKey }

    /// Whether no change is recorded.
    package var isEmpty: Bool { byKey.isEmpty }

    /// The number of documents with a change.
    package var count: Int { byKey.count }

    /// The change recorded for `key`, if any.
    package func change(for key: DocumentKey) -> DocumentViewChange? { byKey[key] }

    /// Records `change`, merging it with an earlier change to the same document.
    package mutating func add(_ change: DocumentViewChange) {
        ordered = nil
        let key = change.document.key
        guard let old = byKey[key] else {
            byKey[key] = change
            return
        }
        switch (old.kind, change.kind) {
        case (.metadata, .modified), (.metadata, .removed), (.metadata, .metadata):
            byKey[key] = change
        case (.added, .metadata), (.modified, .metadata):
            byKey[key] = DocumentViewChange(old.kind, change.document)
        case (.modified, .modified), (.added, .modified):
            byKey[key] = DocumentViewChange(old.kind, change.document)
        case (.added, .removed):
            byKey[key] = nil
        case (.modified, .removed):
            byKey[key] = DocumentViewChange(.removed, old.document)
        case (.removed, .added):
            byKey[key] = DocumentViewChange(.modified, change.document)
        default:
            assertionFailure("DocumentViewChangeSet: \(change.kind) after \(old.kind) for \(key)")
            byKey[key] = change
        }
    }

    /// The recorded changes, by document key.
    package var changes: [DocumentViewChange] {
        byKey.values.sorted { $0.document.key < $1.document.key }
    }

    /// The recorded changes in the order a snapshot reports them: removals, then additions,
    /// then modifications (metadata changes counted as modifications), each group in `order`.
    package func changes(sortedBy order: DocumentSet) -> [DocumentViewChange] {
        // Additions only, already in the order of the set they were made from (which holds
        // every one of them, so any set of the same query orders them alike).
        if let ordered { return ordered }
        let present = byKey.values.reduce(0) { $0 + ($1.kind == .removed ? 0 : 1) }
        // When the changes are a good part of the set (a first snapshot, a large update), the
        // documents still in the set sort by their position in it: one pass over the set, where
        // comparing them would read their order-by fields again and again. Removed documents
        // are not in the set and compare by its order.
        guard present > 1, order.count <= present * 4 else {
            return byKey.values.sorted { a, b in
                if a.kind.sortRank != b.kind.sortRank { return a.kind.sortRank < b.kind.sortRank }
                return order.sortsBefore(a.document, b.document)
            }
        }
        var positions: [DocumentKey: Int] = [:]
        positions.reserveCapacity(order.count)
        for (i, document) in order.documents.enumerated() { positions[document.key] = i }
        // Each change's position is looked up once, not at every comparison.
        let ranked = byKey.values.map { change in (change, change.kind == .removed ? nil : positions[change.document.key]) }
        return ranked.sorted { a, b in
            if a.0.kind.sortRank != b.0.kind.sortRank { return a.0.kind.sortRank < b.0.kind.sortRank }
            if let x = a.1, let y = b.1 { return x < y }
            return order.sortsBefore(a.0.document, b.0.document)
        }.map(\.0)
    }
}

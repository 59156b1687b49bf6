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
    /// The changes by key; empty while ``ordered`` holds them instead.
    private var byKey: [DocumentKey: DocumentViewChange] = [:]
    /// The changes in snapshot order, when they are known in it without sorting
    /// (``additions(of:)``: a first snapshot, which needs no lookup by key); moved into
    /// ``byKey`` by any later ``add(_:)``.
    private var ordered: [DocumentViewChange]?

    package init() {}

    /// Every document of `documents` as added: the changes of a view's first results.
    package static func additions(of documents: DocumentSet) -> DocumentViewChangeSet {
        var set = DocumentViewChangeSet()
        set.ordered = documents.documents.map { DocumentViewChange(.added, $0) }
        return set
    }

    /// The changes by key, wherever they are held.
    private var entries: [DocumentKey: DocumentViewChange] {
        guard let ordered else { return byKey }
        return Dictionary(ordered.map { ($0.document.key, $0) }, uniquingKeysWith: { _, later in later })
    }

    package static func == (a: DocumentViewChangeSet, b: DocumentViewChangeSet) -> Bool { a.entries == b.entries }

    /// Whether no change is recorded.
    package var isEmpty: Bool { ordered?.isEmpty ?? byKey.isEmpty }

    /// The number of documents with a change.
    package var count: Int { ordered?.count ?? byKey.count }

    /// The change recorded for `key`, if any.
    package func change(for key: DocumentKey) -> DocumentViewChange? {
        guard let ordered else { return byKey[key] }
        return ordered.first { $0.document.key == key }
    }

    /// Records `change`, merging it with an earlier change to the same document.
    package mutating func add(_ change: DocumentViewChange) {
        if ordered != nil {
            byKey = entries
            ordered = nil
        }
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
        entries.values.sorted { $0.document.key < $1.document.key }
    }

    /// The recorded changes in the order a snapshot reports them: removals, then additions,
    /// then modifications (metadata changes counted as modifications), each group in `order`.
    package func changes(sortedBy order: DocumentSet) -> [DocumentViewChange] {
        // Additions only, already in the order of the set they were made from (which holds
        // every one of them, so any set of the same query orders them alike).
        if let ordered { return ordered }
        let present = byKey.values.reduce(0) { $0 + ($1.kind == .removed ? 0 : 1) }
        // When the changes are a good part of the set (a large update; a first snapshot's come
        // in order and return above), the documents still in the set sort by their position in
        // it: one pass over the set, where comparing them would read their order-by fields
        // again and again. Removed documents are not in the set and compare by its order.
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

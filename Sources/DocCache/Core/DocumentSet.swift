package import DocModel

/// The documents of a view, at most one per key, kept sorted by a query's order.
///
/// A value type: a sorted array (ordered iteration, positions, binary search) next to a
/// key → document dictionary (lookup by key). Inserting or removing is O(n) for the array
/// shift plus O(log n) comparisons, which is plenty for bounded views (≤ 1,000 documents by
/// default).
///
/// The order is the given "are in increasing order" predicate with the document key as a
/// final tie-breaker, so two distinct documents never compare equal. Query orders already end
/// with `__name__`; the tie-breaker only matters for custom predicates.
///
/// Two sets are equal when they hold equal documents (key, contents, versions and pending
/// write flags) in the same order; the predicates are not compared.
package struct DocumentSet: Sendable {
    /// The "are in increasing order" predicate the set was created with.
    package let areInIncreasingOrder: @Sendable (Document, Document) -> Bool

    /// The documents in order.
    private var sorted: [Document] = []
    /// The same documents by key.
    private var byKey: [DocumentKey: Document] = [:]

    /// An empty set ordered by `areInIncreasingOrder`, then by key.
    package init(areInIncreasingOrder: @escaping @Sendable (Document, Document) -> Bool) {
        self.areInIncreasingOrder = areInIncreasingOrder
    }

    /// An empty set in the order of `query` (``Query/comparator``).
    package init(query: Query) {
        self.init(areInIncreasingOrder: query.comparator)
    }

    /// An empty set ordered by document key only.
    package static func orderedByKey() -> DocumentSet {
        DocumentSet(areInIncreasingOrder: { $0.key < $1.key })
    }

    /// A set in the order of `query` holding `documents` (a later document replaces an earlier
    /// one with the same key).
    package init(query: Query, documents: some Sequence<Document>) {
        self.init(query: query)
        for document in documents { insert(document) }
    }

    /// A set in the order of `query` holding `documents`, which are already in that order
    /// (``Query/results(from:)``); `nil` when two of them have the same key.
    package init?(query: Query, sortedDocuments documents: [Document]) {
        self.init(query: query)
        byKey.reserveCapacity(documents.count)
        for document in documents where byKey.updateValue(document, forKey: document.key) != nil { return nil }
        sorted = documents
        assert(zip(documents, documents.dropFirst()).allSatisfy { sortsBefore($0, $1) }, "DocumentSet: documents out of order")
    }

    // MARK: - Lookup

    /// Whether a document with `key` is in the set.
    package func contains(_ key: DocumentKey) -> Bool { byKey[key] != nil }

    /// The document with `key`, if present.
    package func document(for key: DocumentKey) -> Document? { byKey[key] }

    /// The position of the document with `key` in the set's order, if present.
    package func index(of key: DocumentKey) -> Int? {
        guard let document = byKey[key] else { return nil }
        return position(of: document)
    }

    /// The keys of the documents, as a set.
    package var keys: Set<DocumentKey> { Set(byKey.keys) }

    /// The documents in order, as an array.
    package var documents: [Document] { sorted }

    // MARK: - Changes

    /// Inserts `document`, replacing the document with the same key if there is one (which
    /// may move: its position follows its new contents).
    package mutating func insert(_ document: Document) {
        remove(document.key)
        let index = insertionPoint(for: document)
        sorted.insert(document, at: index)
        byKey[document.key] = document
    }

    /// Removes the document with `key`; returns it, or `nil` when it was not in the set.
    @discardableResult
    package mutating func remove(_ key: DocumentKey) -> Document? {
        guard let existing = byKey.removeValue(forKey: key) else { return nil }
        sorted.remove(at: position(of: existing))
        return existing
    }

    /// A copy with `document` inserted.
    package func inserting(_ document: Document) -> DocumentSet {
        var copy = self
        copy.insert(document)
        return copy
    }

    /// A copy without the document with `key`.
    package func removing(_ key: DocumentKey) -> DocumentSet {
        var copy = self
        copy.remove(key)
        return copy
    }

    // MARK: - Order

    /// Whether `a` sorts before `b` in this set: the predicate, then the key.
    package func sortsBefore(_ a: Document, _ b: Document) -> Bool {
        if areInIncreasingOrder(a, b) { return true }
        if areInIncreasingOrder(b, a) { return false }
        return a.key < b.key
    }

    /// The first position whose document does not sort before `document`.
    private func insertionPoint(for document: Document) -> Int {
        var low = 0
        var high = sorted.count
        while low < high {
            let mid = (low + high) / 2
            if sortsBefore(sorted[mid], document) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// The position of `document`, which is in the set (found by its stored contents).
    private func position(of document: Document) -> Int {
        let index = insertionPoint(for: document)
        if index < sorted.count, sorted[index].key == document.key { return index }
        // Only reachable with a predicate that is not a strict weak order.
        guard let found = sorted.firstIndex(where: { $0.key == document.key }) else {
            preconditionFailure("DocumentSet: \(document.key) is indexed but not in the sorted documents")
        }
        return found
    }
}

extension DocumentSet: RandomAccessCollection {
    package typealias Index = Int
    package typealias Element = Document

    package var startIndex: Int { 0 }
    package var endIndex: Int { sorted.count }
    package subscript(position: Int) -> Document { sorted[position] }

    /// The number of documents (O(1)).
    package var count: Int { sorted.count }
    package var isEmpty: Bool { sorted.isEmpty }
}

extension DocumentSet: Equatable {
    package static func == (a: DocumentSet, b: DocumentSet) -> Bool { a.sorted == b.sorted }
}

extension DocumentSet: CustomStringConvertible {
    package var description: String {
        "DocumentSet(" + sorted.map(\.key.description).joined(separator: ", ") + ")"
    }
}

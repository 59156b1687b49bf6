/// The document-matching and ordering rules shared by ``Query`` and ``Target``. Pure functions.
enum QueryEvaluation {
    /// Whether `path` names a document (an even, non-zero number of segments).
    static func isDocumentPath(_ path: ResourcePath) -> Bool { path.count > 0 && path.count % 2 == 0 }

    /// Path membership: for a collection group, any document in a collection with that id at or
    /// below `path`; for a document path, that document; for a collection path, the documents
    /// directly in it (not those of its sub-collections).
    static func matchesPath(_ key: DocumentKey, path: ResourcePath, collectionGroup: String?) -> Bool {
        if let collectionGroup {
            return equalUTF8(key.collectionGroup, collectionGroup) && path.isPrefix(of: key.path)
        }
        if isDocumentPath(path) { return key.path == path }
        return key.isIn(collection: path)
    }

    /// Whether `document` has every field `orderBys` sorts on (`__name__` always exists).
    static func hasOrderByFields(_ document: Document, _ orderBys: [OrderBy]) -> Bool {
        orderBys.allSatisfy { $0.field.isDocumentID || document.value(at: $0.field) != nil }
    }

    /// The full match: path, tombstone filter, order-by fields, filters, bounds.
    static func matches(
        _ document: Document, path: ResourcePath, collectionGroup: String?, filters: [Filter],
        orderBys: [OrderBy], startAt: Bound?, endAt: Bound?, includeDeleted: Bool
    ) -> Bool {
        guard matchesPath(document.key, path: path, collectionGroup: collectionGroup) else { return false }
        if !includeDeleted && document.isTombstone { return false }
        guard hasOrderByFields(document, orderBys) else { return false }
        guard filters.allSatisfy({ $0.matches(document) }) else { return false }
        if let startAt, !startAt.sortsBeforeDocument(document, orderBys: orderBys) { return false }
        if let endAt, !endAt.sortsAfterDocument(document, orderBys: orderBys) { return false }
        return true
    }

    /// Compares two documents by `orderBys` in turn: -1, 0 or 1.
    static func compare(_ a: Document, _ b: Document, orderBys: [OrderBy]) -> Int {
        for orderBy in orderBys {
            let c = orderBy.compare(a, b)
            if c != 0 { return c }
        }
        return 0
    }

    /// `documents` in the order of `orderBys` (stable for documents that compare equal). Each
    /// document's order-by values are read once, not at every comparison; documents already
    /// in order (or in strictly reverse order) are not sorted again.
    static func sorted(_ documents: [Document], orderBys: [OrderBy]) -> [Document] {
        guard documents.count > 1 else { return documents }
        let values = documents.map { document in
            orderBys.map { $0.field.isDocumentID ? nil : document.value(at: $0.field) }
        }
        func inOrder(_ i: Int, _ j: Int) -> Bool {
            for (n, orderBy) in orderBys.enumerated() {
                let c = orderBy.field.isDocumentID
                    ? orderBy.compare(documents[i], documents[j]) : orderBy.compare(values[i][n], values[j][n])
                if c != 0 { return c < 0 }
            }
            return false
        }
        // Documents from an index walk already come in order, or in the reverse order (a
        // limit-to-last query walks its flipped target's order).
        let indices = documents.indices.dropFirst()
        if indices.allSatisfy({ !inOrder($0, $0 - 1) }) { return documents }
        if indices.allSatisfy({ inOrder($0, $0 - 1) }) { return documents.reversed() }
        return documents.indices.sorted(by: inOrder).map { documents[$0] }
    }

    /// The canonical id of a target made of these parts.
    static func canonicalID(
        path: ResourcePath, collectionGroup: String?, filters: [Filter], orderBys: [OrderBy],
        limit: Int?, startAt: Bound?, endAt: Bound?, includeDeleted: Bool
    ) -> String {
        var id = path.canonicalString
        if let collectionGroup { id += "|cg:" + collectionGroup }
        // The filter list is a conjunction: normalized like an `and` composite.
        id += "|f:" + CompositeFilter.canonicalMembers(of: filters, under: .and).joined(separator: ",")
        id += "|ob:" + orderBys.map(\.canonicalID).joined(separator: ",")
        if let limit { id += "|l:\(limit)" }
        if let startAt { id += "|lb:" + startAt.canonicalID }
        if let endAt { id += "|ub:" + endAt.canonicalID }
        if includeDeleted { id += "|deleted" }
        return id
    }
}

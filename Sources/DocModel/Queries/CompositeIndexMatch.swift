/// Which declared composite index serves a query, and how: the index's leading fields are
/// the query's equality filters, its remaining fields exactly the query's order-bys, each in
/// the index's direction (a forward walk) or each in the opposite one (a reverse walk), the
/// document id last in the direction of the query's last order-by. The same rule for the
/// client's cache and the server's stores.
package struct CompositeIndexMatch: Sendable {
    /// The index.
    package var index: CompositeIndex
    /// The values of the index's leading fields, from the equality filters, in index order.
    package var leading: [Value]
    /// Whether the query's order is the reverse of the index's.
    package var reverse: Bool

    /// The match with the most leading equality fields among `indexes`, or `nil` when none
    /// serves `target`. `conjunction` holds the field filters every result satisfies (the
    /// target's top-level filters and the members of its `and`s), whose `==` filters may
    /// supply the leading values; every filter is for the caller to check on each document.
    package init?(target: Target, conjunction: [FieldFilter], indexes: [CompositeIndex]) {
        guard !indexes.isEmpty, target.collectionGroup == nil,
              let last = target.orderBys.last, last.field.isDocumentID
        else { return nil }
        var equalities: [FieldPath: Value] = [:]
        for filter in conjunction where filter.op == .equal { equalities[filter.field] = filter.value }
        let orders = target.orderBys.dropLast()
        guard !orders.contains(where: { $0.field.isDocumentID }) else { return nil }
        let group = target.path.lastSegment ?? ""
        var best: CompositeIndexMatch?
        for index in indexes where index.collectionGroup == group {
            // Only an index with more leading equalities than the best so far can replace it.
            let leadingCount = index.fields.count - orders.count
            guard leadingCount >= 0, leadingCount > (best?.leading.count ?? -1) else { continue }
            var leading: [Value] = []
            for field in index.fields.prefix(leadingCount) {
                guard let value = equalities[field.path] else { break }
                leading.append(value)
            }
            guard leading.count == leadingCount else { continue }
            // The document id ends every row in the last field's direction.
            let reverse = index.documentIDDirection != last.direction
            let trailing = index.fields.dropFirst(leadingCount)
            guard zip(trailing, orders).allSatisfy({ field, order in
                field.path == order.field && (field.direction != order.direction) == reverse
            }) else { continue }
            best = CompositeIndexMatch(index: index, leading: leading, reverse: reverse)
        }
        guard let best else { return nil }
        self = best
    }

    private init(index: CompositeIndex, leading: [Value], reverse: Bool) {
        self.index = index
        self.leading = leading
        self.reverse = reverse
    }

    /// The row a start cursor names when it holds a value for every sort key and the
    /// document last (what `start(afterDocument:)` makes): the values of the index's fields
    /// (the leading ones, then the cursor's), the document, and whether the cursor includes
    /// it. A walk can start at that row instead of at the cursor's first value, so a page deep
    /// into a run of equal values does not read the run's earlier rows again. `nil` for any
    /// other cursor. The same rule for the client's cache and the server's stores.
    package func cursorRow(of target: Target) -> CursorRow? {
        guard let start = target.startAt, start.position.count == target.orderBys.count,
              case .reference(let key)? = start.position.last, key.isIn(collection: target.path)
        else { return nil }
        return CursorRow(values: leading + start.position.dropLast(), key: key, inclusive: start.inclusive)
    }

    /// See ``cursorRow(of:)``.
    package struct CursorRow: Sendable {
        /// One value per field of the index, in index order.
        package var values: [Value]
        /// The cursor's document.
        package var key: DocumentKey
        /// Whether the cursor includes the document.
        package var inclusive: Bool
    }
}

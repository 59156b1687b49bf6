package import DocModel

/// Visits every document a target matches without keeping them: how an aggregation reads
/// (``TenantStore/aggregate(_:_:)``), in memory of one page however many documents match,
/// where ``ServerQueryPlanner`` keeps its candidates to sort them.
///
/// A target with a limit is answered by the planner (its results are the first `limit` in
/// target order, which only a sort finds) and its results visited. Without a limit, order
/// does not matter and one plan is read to its end, in pages of ``pageSize``, each document
/// once:
/// - a document target, or `__name__ ==` / `in` filters: those documents;
/// - a collection with a point filter (`==`, `in` or `array-contains` on a field other than
///   `__name__`): the filter's index ranges, one per value, each document's entry read once
///   (a document has one value per field and each array element once, and values with equal
///   encodings share a range), with the other `==` / `array-contains` filters probed on the
///   index before a document is read; then the documents whose value is too large for the
///   index (no entry, a marker instead);
/// - otherwise the collection, or the collection group, in key order.
///
/// Every document visited matches the target (`Target.matches`). `count()` alone over a
/// whole collection, or over a collection with point filters only, visits none (or only the
/// tombstones that match): ``aggregate(_:with:)`` counts keys and index entries.
package struct QueryFold: Sendable {
    package let target: Target
    /// The declared composite indexes the planner may read for a limited target.
    package let compositeIndexes: [CompositeIndex]

    /// The most documents (or index entries) one read returns.
    static let pageSize = 1_024

    package init(target: Target, compositeIndexes: [CompositeIndex] = []) {
        self.target = target
        self.compositeIndexes = compositeIndexes
    }

    /// Visits the matching documents (in no particular order without a limit); returns the
    /// plan that found them (for logs and tests).
    @discardableResult
    package func run(with reader: any QueryIndexReader, visit: (Document) -> Void) async throws(DocError) -> String {
        if let limit = target.limit {
            let execution = try await ServerQueryPlanner(target: target, limit: limit, compositeIndexes: compositeIndexes)
                .execute(with: reader)
            execution.documents.forEach(visit)
            return execution.plan
        }
        if let group = target.collectionGroup {
            try await scan(reader, visit: visit) { position, limit throws(DocError) in
                try await reader.collectionGroupPage(group, under: target.path, after: position, descending: false, limit: limit)
            }
            return "key-order scan of collection group \(group)"
        }
        if target.path.count % 2 == 0 {
            try await visitDocuments(target.path.isEmpty ? [] : [DocumentKey(unchecked: target.path)], reader, visit: visit)
            return "key lookup"
        }
        let constraints = TargetConstraints(target)
        if let keys = constraints.keyLookups {
            try await visitDocuments(keys.filter { $0.isIn(collection: target.path) }, reader, visit: visit)
            return "key lookup"
        }
        // The first point filter whose ranges hold each document once (not `array-contains-any`,
        // whose elements' ranges may each hold the same document).
        for filter in constraints.conjunction where TargetConstraints.isPointFilter(filter) && filter.op != .arrayContainsAny {
            guard let ranges = constraints.pointRanges(of: filter.field),
                  constraints.conjunction.first(where: { $0.field == filter.field && TargetConstraints.isPointFilter($0) }) == filter
            else { continue }
            try await readRanges(ranges, field: filter.field, probes: constraints.probes(except: filter.field), reader, visit: visit)
            return "index range read of \(ranges.count) ranges of \(filter.field.canonicalString)"
        }
        let path = target.path
        try await scan(reader, visit: visit) { position, limit throws(DocError) in
            try await reader.collectionPage(path, after: position, descending: false, limit: limit)
        }
        return "key-order scan of collection \(path.canonicalString)"
    }

    /// The aggregations `fields` over the matching documents (``AggregateAccumulator/result``).
    /// `count()` alone over a whole collection reads no document (``countByKey(_:_:)``); over
    /// a collection with point filters only, only the tombstones that match, when it has fewer
    /// tombstones than entries match (``countByIndex(_:_:)``).
    package func aggregate(_ fields: [AggregateField], with reader: any QueryIndexReader) async throws(DocError) -> [String: Value] {
        var count = try await countByKey(fields, reader)
        if count == nil { count = try await countByIndex(fields, reader) }
        if count == nil { count = try await countByRange(fields, reader) }
        if let count {
            return Dictionary(uniqueKeysWithValues: fields.map { ($0.alias, Value.integer(Int64(count))) })
        }
        var accumulator = AggregateAccumulator(fields)
        try await run(with: reader) { accumulator.add($0.data) }
        return accumulator.result
    }

    /// Whether `fields` are all `count()` over a collection's target with no cursor or limit,
    /// ordered by key only (or by `field` first): what can be counted without reading the
    /// documents.
    private func countsACollection(_ fields: [AggregateField], orderedBy field: FieldPath? = nil) -> Bool {
        !fields.isEmpty && fields.allSatisfy({ $0.operation == .count }) && target.limit == nil
            && target.collectionGroup == nil && target.path.count % 2 == 1 && target.startAt == nil && target.endAt == nil
            && target.orderBys.allSatisfy({ $0.field.isDocumentID || $0.field == field })
    }

    /// The keys of the collection's tombstones whose `deletedAt` is too large to index, when
    /// the collection has at most `entries` tombstones in all; `nil` when it has more (then
    /// reading the matching documents costs less than reading or probing the tombstones).
    private func markedTombstones(ifAtMost entries: Int, _ reader: any QueryIndexReader) async throws(DocError) -> [DocumentKey]? {
        let marked = try await reader.unindexedDocuments(in: target.path, field: Self.deletedAt, kind: .value)
        guard try await reader.indexEntryCount(tombstoneRange) + marked.count <= entries else { return nil }
        return marked
    }

    /// The tombstones' entries in a collection's `deletedAt` value index: a tombstone is a
    /// document whose `deletedAt` is not null, so it has an entry above `null` there, or an
    /// unindexed marker for a value too large.
    private var tombstoneRange: IndexRange {
        IndexRange(collection: target.path, field: Self.deletedAt, kind: .value, lower: IndexValueBound(.null, inclusive: false))
    }

    private static let deletedAt = FieldPath(unchecked: [tombstoneField])

    /// For aggregations that are all `count()` over a whole collection
    /// (``countsACollection(_:)``, no filter): the documents counted by key, less the
    /// tombstones' `deletedAt` entries and markers unless tombstones are included. No document
    /// is read. `nil` for any other target.
    private func countByKey(_ fields: [AggregateField], _ reader: any QueryIndexReader) async throws(DocError) -> Int? {
        guard countsACollection(fields), target.filters.isEmpty else { return nil }
        let documents = try await reader.documentCount(in: target.path)
        if target.includeDeleted { return documents }
        let tombstones = try await reader.indexEntryCount(tombstoneRange)
            + reader.unindexedDocuments(in: target.path, field: Self.deletedAt, kind: .value).count
        return documents - tombstones
    }

    /// For aggregations that are all `count()` over a collection (``countsACollection(_:)``)
    /// whose filters are point filters (`==`, `in`, `array-contains`), each on its own field,
    /// at most one `in`, the others with a value small enough to index: the entries of the
    /// ranges of one of them (the `in`, else the first) that have the other filters' entries too
    /// (``IndexProbe``), counted without reading a document (a document has one entry per
    /// value, so it is in at most one range); plus the documents too large for the first
    /// filter's index that match (usually none; one that has an entry in a range as well, an
    /// array with a small and a large element, is counted there); less the tombstones among
    /// the entries unless they are included: `deletedAt`'s index (as in ``countByKey(_:_:)``)
    /// walked with the probes of a range's entry and the other filters', so only the
    /// tombstones to subtract are read (and those whose `deletedAt` is too large to index).
    /// `nil` for any other target, and when the collection has more tombstones than entries
    /// match: then reading the matching documents is less work.
    private func countByIndex(_ fields: [AggregateField], _ reader: any QueryIndexReader) async throws(DocError) -> Int? {
        guard countsACollection(fields), !target.filters.isEmpty else { return nil }
        var filters: [FieldFilter] = []
        for case .field(let filter) in target.filters
        where TargetConstraints.isPointFilter(filter) && filter.op != .arrayContainsAny
            && !filters.contains(where: { $0.field == filter.field }) {
            filters.append(filter)
        }
        // An `in` is walked (one range per value); the others are probed.
        filters = filters.filter { $0.op == .in } + filters.filter { $0.op != .in }
        guard filters.count == target.filters.count, let first = filters.first,
              let ranges = TargetConstraints(target).pointRanges(of: first.field)
        else { return nil }
        var probes: [IndexProbe] = []
        for filter in filters.dropFirst() {
            let encoded = filter.value.indexEncoded()
            guard filter.op != .in, encoded.count <= DocumentIndexEntries.maxEncodedValueBytes else { return nil }
            probes.append(IndexProbe(field: filter.field, kind: filter.op == .arrayContains ? .arrayElement : .value, value: encoded))
        }
        guard let kind = ranges.first?.kind else { return 0 }
        var entries = 0
        for range in ranges where !range.isEmpty { entries += try await reader.indexEntryCount(range, requiring: probes) }
        var count = entries
        let unindexed = try await reader.unindexedDocuments(in: target.path, field: first.field, kind: kind)
        try await visitDocuments(unindexed, reader) { document in
            if !ranges.contains(where: { $0.holdsEntry(among: DocumentIndexEntries(document)) }) { count += 1 }
        }
        if target.includeDeleted || entries == 0 { return count }
        guard let markedTombstones = try await markedTombstones(ifAtMost: entries, reader) else { return nil }
        for range in ranges {
            guard let value = range.pointEncoding, value.count <= DocumentIndexEntries.maxEncodedValueBytes else { continue }
            let required = [IndexProbe(field: first.field, kind: kind, value: value)] + probes
            var position: IndexPosition?
            while true {
                let page = try await reader.walkPage(tombstoneRange, requiring: required, after: position, descending: false,
                                                     limit: Self.pageSize, maxMatches: Self.pageSize)
                count -= page.matches.count
                guard page.examined == Self.pageSize, let last = page.last else { break }
                position = last
            }
        }
        for document in try await reader.documents(markedTombstones).values where document.isTombstone {
            let indexed = DocumentIndexEntries(document)
            if ranges.contains(where: { $0.holdsEntry(among: indexed) }), probes.allSatisfy({ $0.isHeld(among: indexed) }) {
                count -= 1
            }
        }
        return count
    }

    /// For aggregations that are all `count()` over a collection whose filters are
    /// comparisons (`<`, `<=`, `>`, `>=`) on one field, ordered by that field and the document
    /// id only, with no cursor or limit: the entries of the field's value index within the
    /// filters' range (``TargetConstraints/valueRange(of:)``: the values of the compared
    /// type; comparisons follow value order, in which `NaN` is the lowest number, as the
    /// index does), counted without reading them; plus the documents too large for the index
    /// that match; less the tombstones among the entries unless they are included (read from
    /// `deletedAt`'s index: those with an entry in the range that the filters match). `nil`
    /// for any other target, and when the collection has more tombstones than entries match.
    private func countByRange(_ fields: [AggregateField], _ reader: any QueryIndexReader) async throws(DocError) -> Int? {
        var filters: [FieldFilter] = []
        for case .field(let filter) in target.filters { filters.append(filter) }
        let comparisons: Set<FieldFilter.Operator> = [.lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual]
        guard !filters.isEmpty, filters.count == target.filters.count, let field = filters.first?.field, !field.isDocumentID,
              filters.allSatisfy({ $0.field == field && comparisons.contains($0.op) }),
              countsACollection(fields, orderedBy: field)
        else { return nil }
        let range = TargetConstraints(target).valueRange(of: field)
        if range.isEmpty { return 0 }
        let entries = try await reader.indexEntryCount(range)
        var count = entries
        // A document has one value per field: an entry, or a marker for a value too large.
        let unindexed = try await reader.unindexedDocuments(in: target.path, field: field, kind: .value)
        try await visitDocuments(unindexed, reader) { _ in count += 1 }
        if target.includeDeleted || entries == 0 { return count }
        guard var tombstones = try await markedTombstones(ifAtMost: entries, reader) else { return nil }
        var position: IndexPosition?
        while true {
            let page = try await reader.indexPage(tombstoneRange, after: position, descending: false, limit: Self.pageSize)
            tombstones += page.map(\.key)
            guard page.count == Self.pageSize, let last = page.last else { break }
            position = last
        }
        var start = 0
        while start < tombstones.count {
            let chunk = Array(tombstones[start..<min(start + Self.pageSize, tombstones.count)])
            for document in try await reader.documents(chunk).values where document.isTombstone {
                if range.holdsEntry(among: DocumentIndexEntries(document)), filters.allSatisfy({ $0.matches(document) }) {
                    count -= 1
                }
            }
            start += chunk.count
        }
        return count
    }

    /// Reads pages in key order until one is short.
    private func scan(
        _ reader: any QueryIndexReader, visit: (Document) -> Void,
        page: (DocumentKey?, Int) async throws(DocError) -> [Document]
    ) async throws(DocError) {
        var position: DocumentKey?
        while true {
            let documents = try await page(position, Self.pageSize)
            for document in documents where target.matches(document) { visit(document) }
            guard documents.count == Self.pageSize, let last = documents.last?.key else { return }
            position = last
        }
    }

    /// The entries of each range, their documents read with them when they pass `probes`;
    /// then the documents too large for the field's index.
    private func readRanges(
        _ ranges: [IndexRange], field: FieldPath, probes: [IndexProbe], _ reader: any QueryIndexReader,
        visit: (Document) -> Void
    ) async throws(DocError) {
        for range in ranges where !range.isEmpty {
            var position: IndexPosition?
            while true {
                let page = try await reader.walkPage(range, requiring: probes, after: position, descending: false,
                                                     limit: Self.pageSize, maxMatches: Self.pageSize)
                for (_, document) in page.matches where target.matches(document) { visit(document) }
                guard page.examined == Self.pageSize, let last = page.last else { break }
                position = last
            }
        }
        guard let kind = ranges.first?.kind else { return }
        // A document with a marker may have an entry in a range as well (an array with a small
        // and a large element): it was visited there.
        let unindexed = try await reader.unindexedDocuments(in: target.path, field: field, kind: kind)
        try await visitDocuments(unindexed, reader) { document in
            if !ranges.contains(where: { $0.holdsEntry(among: DocumentIndexEntries(document)) }) { visit(document) }
        }
    }

    /// The documents of `keys` that exist and match, read a page at a time.
    private func visitDocuments(_ keys: [DocumentKey], _ reader: any QueryIndexReader, visit: (Document) -> Void) async throws(DocError) {
        var start = 0
        while start < keys.count {
            let chunk = Array(keys[start..<min(start + Self.pageSize, keys.count)])
            for document in try await reader.documentsInOrder(chunk) where target.matches(document) { visit(document) }
            start += chunk.count
        }
    }
}

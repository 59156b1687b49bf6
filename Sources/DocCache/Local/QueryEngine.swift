package import DocModel

/// Answers queries from the cache: remote documents with overlays (the local view) on top.
///
/// Strategies, cheapest first:
/// - a document query reads one key;
/// - a query whose target has server-confirmed results (`previousResults`) reads those keys
///   plus the collection's documents changed since, instead of the whole collection
///   (unlimited queries only: a limit window may have moved);
/// - a limited query whose equality filters and order-bys a complete declared composite
///   index serves walks that index from the equality values (``CompositeIndexPlan``);
/// - a limited query ordered by a field walks that field's local index in query order,
///   stopping after `limit` matches (plus the collection's overlays, which may change the
///   window), so its cost follows the limit, not the collection size;
/// - otherwise it scans the collection (or collection group).
package final class QueryEngine {
    let persistence: Persistence

    init(persistence: Persistence) {
        self.persistence = persistence
    }

    /// The documents matching `query` from the cache (local views: overlays over remote
    /// documents), each key once. Those of an index walk come in the target's order.
    package func documents(
        matching query: Query, target: Target, user: String,
        previousResults: (keys: Set<DocumentKey>, readTime: SnapshotVersion)?,
        in txn: PersistenceTransaction
    ) throws(DocError) -> [Document] {
        if query.isDocumentQuery {
            let key = DocumentKey(unchecked: query.path)
            let overlay = try persistence.overlays.overlay(for: key, user: user, in: txn)
            var local = overlay?.document
            if local == nil { local = try persistence.remoteDocuments.get(key, in: txn) }
            if let doc = local?.document, query.matches(doc) { return [doc] }
            return []
        }
        if let group = query.collectionGroup {
            let remote = try persistence.remoteDocuments.documents(inCollectionGroup: group, in: txn)
            let overlays = try persistence.overlays.overlays(inCollectionGroup: group, user: user, in: txn)
            return Self.merge(remote: remote, overlays: overlays, query: query)
        }
        if let previous = previousResults, !query.hasLimit {
            var remote = try persistence.remoteDocuments.getAll(previous.keys, in: txn)
            for (key, doc) in try persistence.remoteDocuments.documents(
                inCollection: query.path, changedSince: previous.readTime, in: txn)
            {
                remote[key] = doc
            }
            let overlays = try persistence.overlays.overlays(inCollection: query.path, user: user, in: txn)
            return Self.merge(remote: remote, overlays: overlays, query: query)
        }
        if let limit = target.limit {
            if let plan = CompositeIndexPlan(
                target: target, indexes: persistence.compositeIndexes.completeIndexes(collectionGroup: query.path.lastSegment ?? ""))
            {
                let keys = persistence.compositeIndexes.scan(
                    plan.index, collection: query.path, leading: plan.leading, lower: plan.lower, upper: plan.upper,
                    reverse: plan.reverse, in: txn)
                let unindexed = try persistence.compositeIndexes.unindexedDocuments(plan.index, collection: query.path, in: txn)
                return try documentsWalking(keys, unindexed: unindexed, query: query, target: target, limit: limit, user: user, in: txn)
            }
            if let plan = IndexPlan(target: target) {
                let keys = persistence.remoteDocuments.scanIndex(
                    collection: query.path, field: plan.field, lower: plan.lower, upper: plan.upper,
                    descending: plan.descending, in: txn)
                // Documents whose value for the field is too large for the index have a marker
                // instead: they are candidates too.
                let unindexed = try persistence.remoteDocuments.unindexedDocuments(collection: query.path, field: plan.field, in: txn)
                return try documentsWalking(keys, unindexed: unindexed, query: query, target: target, limit: limit, user: user, in: txn)
            }
        }
        let remote = try persistence.remoteDocuments.documents(inCollection: query.path, in: txn)
        let overlays = try persistence.overlays.overlays(inCollection: query.path, user: user, in: txn)
        return Self.merge(remote: remote, overlays: overlays, query: query)
    }

    /// Remote documents overridden by overlays, filtered by the query (in no order).
    static func merge(
        remote: [DocumentKey: MaybeDocument], overlays: [DocumentKey: Overlay], query: Query
    ) -> [Document] {
        var result: [Document] = []
        for (key, maybe) in remote where overlays[key] == nil {
            if let doc = maybe.document, query.matches(doc) { result.append(doc) }
        }
        for overlay in overlays.values {
            if let doc = overlay.document.document, query.matches(doc) { result.append(doc) }
        }
        return result
    }

    /// Top `limit` documents in target order from an index walk in target order (`keys`),
    /// skipping documents that have overlays (their local view is merged afterwards), until
    /// `limit` remote documents match; `unindexed` are the documents the index could not hold
    /// (checked one by one). Each overlay can push at most one remote document out of the
    /// window, so the window is exact after merging and trimming. The documents are in the
    /// target's order.
    private func documentsWalking(
        _ keys: DecodingScan<DocumentKey>, unindexed: [DocumentKey], query: Query, target: Target, limit: Int, user: String,
        in txn: PersistenceTransaction
    ) throws(DocError) -> [Document] {
        // The overlays only as far as the query reads them (its filter and order fields, and
        // the tombstone field): most of them stay outside the window, and the few inside are
        // read again in full below.
        var fields = target.orderBys.map(\.field)
        for filter in target.filters { fields += filter.flattenedFilters.map(\.field) }
        fields.append(FieldPath(unchecked: [tombstoneField]))
        let overlays = try persistence.overlays.overlays(
            inCollection: query.path, user: user, projecting: FieldProjection(fields), in: txn)
        var candidates: [Document] = []
        var remoteMatches = 0
        for key in keys {
            if overlays[key] != nil { continue }
            guard let doc = try persistence.remoteDocuments.get(key, in: txn)?.document, query.matches(doc) else { continue }
            candidates.append(doc)
            remoteMatches += 1
            if remoteMatches >= limit { break }
        }
        if let failure = txn.failure { throw failure }
        for key in unindexed where overlays[key] == nil {
            if let doc = try persistence.remoteDocuments.get(key, in: txn)?.document, query.matches(doc) {
                candidates.append(doc)
            }
        }
        for overlay in overlays.values {
            if let doc = overlay.document.document, query.matches(doc) { candidates.append(doc) }
        }
        var result = Self.first(limit, of: candidates, in: target)
        for (i, doc) in result.enumerated() where overlays[doc.key] != nil {
            guard let full = try persistence.overlays.overlay(for: doc.key, user: user, in: txn)?.document.document else {
                throw DocError(.internal, "the overlay of \(doc.key) changed during a query")
            }
            result[i] = full
        }
        return result
    }

    /// The first `limit` of `documents` in target order, in order. Keeps a sorted window and
    /// compares each other document with its last one, so many candidates (a collection's
    /// overlays) cost about one comparison each, not a full sort.
    static func first(_ limit: Int, of documents: [Document], in target: Target) -> [Document] {
        guard limit > 0 else { return [] }
        var window = Array(documents.prefix(limit))
        window.sort { target.compare($0, $1) < 0 }
        guard documents.count > limit else { return window }
        for doc in documents[limit...] where target.compare(doc, window[window.count - 1]) < 0 {
            var low = 0, high = window.count - 1
            while low < high {
                let mid = (low + high) / 2
                if target.compare(window[mid], doc) < 0 { low = mid + 1 } else { high = mid }
            }
            window.removeLast()
            window.insert(doc, at: low)
        }
        return window
    }
}

/// How to walk a local index for a limited query: the target's first order-by field, in its
/// direction, bounded by the target's filters on that field when they form a conjunction.
struct IndexPlan {
    var field: FieldPath
    var descending: Bool
    var lower: IndexBound?
    var upper: IndexBound?

    init?(target: Target) {
        guard let first = target.orderBys.first, !first.field.isDocumentID, target.collectionGroup == nil else { return nil }
        field = first.field
        descending = first.isDescending
        // Bounds only from top-level conjunctions (an OR may match other ranges).
        for filter in Self.conjunction(of: target) where filter.field == field {
            switch filter.op {
            case .equal:
                lower = Self.tighterLower(lower, IndexBound(value: filter.value, inclusive: true))
                upper = Self.tighterUpper(upper, IndexBound(value: filter.value, inclusive: true))
            case .greaterThan:
                lower = Self.tighterLower(lower, IndexBound(value: filter.value, inclusive: false))
            case .greaterThanOrEqual:
                lower = Self.tighterLower(lower, IndexBound(value: filter.value, inclusive: true))
            case .lessThan:
                upper = Self.tighterUpper(upper, IndexBound(value: filter.value, inclusive: false))
            case .lessThanOrEqual:
                upper = Self.tighterUpper(upper, IndexBound(value: filter.value, inclusive: true))
            default:
                continue
            }
        }
    }

    /// The field filters every match of `target` satisfies: its top-level filters and the
    /// members of its flat `and` composites (an `or` may match elsewhere, so it gives none).
    static func conjunction(of target: Target) -> [FieldFilter] {
        target.filters.flatMap { filter -> [FieldFilter] in
            switch filter {
            case .field(let f): return [f]
            case .composite(let c) where c.isFlatConjunction: return c.flattenedFilters
            case .composite: return []
            }
        }
    }

    static func tighterLower(_ a: IndexBound?, _ b: IndexBound) -> IndexBound {
        guard let a else { return b }
        let c = Value.compare(a.value, b.value)
        if c != 0 { return c > 0 ? a : b }
        return a.inclusive ? b : a
    }

    static func tighterUpper(_ a: IndexBound?, _ b: IndexBound) -> IndexBound {
        guard let a else { return b }
        let c = Value.compare(a.value, b.value)
        if c != 0 { return c < 0 ? a : b }
        return a.inclusive ? b : a
    }
}

/// How to walk a declared composite index for a limited query: the index's leading fields are
/// the query's equality filters (top-level conjunctions), its remaining fields exactly the
/// query's order-bys, each in the index's direction (a forward walk) or each in the opposite
/// one (a reverse walk). The range filters on the first order-by field bound the walk, as
/// ``IndexPlan``'s do; other filters are checked on each document.
struct CompositeIndexPlan {
    var index: CompositeIndex
    /// The values of the index's leading fields, from the equality filters.
    var leading: [Value]
    /// The range of the field after the leading ones (the first order-by), in value order.
    var lower: IndexBound?
    var upper: IndexBound?
    var reverse: Bool

    /// The plan over the index with the most leading equality fields among `indexes`, or `nil`
    /// when none serves the target.
    init?(target: Target, indexes: [CompositeIndex]) {
        guard !indexes.isEmpty, target.collectionGroup == nil,
              let last = target.orderBys.last, last.field.isDocumentID
        else { return nil }
        let orders = target.orderBys.dropLast()
        guard !orders.contains(where: { $0.field.isDocumentID }) else { return nil }
        var equalities: [FieldPath: Value] = [:]
        for filter in IndexPlan.conjunction(of: target) where filter.op == .equal { equalities[filter.field] = filter.value }
        var best: CompositeIndexPlan?
        for index in indexes {
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
            best = CompositeIndexPlan(index: index, leading: leading, reverse: reverse)
        }
        guard var best else { return nil }
        if let range = orders.isEmpty ? nil : IndexPlan(target: target) {
            (best.lower, best.upper) = (range.lower, range.upper)
        }
        self = best
    }

    private init(index: CompositeIndex, leading: [Value], reverse: Bool) {
        self.index = index
        self.leading = leading
        self.reverse = reverse
    }
}

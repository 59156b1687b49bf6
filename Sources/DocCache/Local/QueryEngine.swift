package import DocModel

/// Answers queries from the cache: remote documents with overlays (the local view) on top.
///
/// Strategies, cheapest first:
/// - a document query reads one key;
/// - a query whose target has server-confirmed results (`previousResults`) reads those keys
///   plus the collection's documents changed since, instead of the whole collection
///   (unlimited queries only: a limit window may have moved);
/// - a limited query ordered by a field walks that field's local index in query order,
///   stopping after `limit` matches (plus the collection's overlays, which may change the
///   window), so its cost follows the limit, not the collection size;
/// - otherwise it scans the collection (or collection group).
package final class QueryEngine {
    let persistence: Persistence

    init(persistence: Persistence) {
        self.persistence = persistence
    }

    package func documents(
        matching query: Query, target: Target, user: String,
        previousResults: (keys: Set<DocumentKey>, readTime: SnapshotVersion)?,
        in txn: PersistenceTransaction
    ) throws(DocError) -> [DocumentKey: Document] {
        if query.isDocumentQuery {
            let key = DocumentKey(unchecked: query.path)
            let overlay = try persistence.overlays.overlay(for: key, user: user, in: txn)
            var local = overlay?.document
            if local == nil { local = try persistence.remoteDocuments.get(key, in: txn) }
            if let doc = local?.document, query.matches(doc) { return [key: doc] }
            return [:]
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
        if let limit = target.limit, let plan = IndexPlan(target: target) {
            return try documentsUsingIndex(plan, query: query, target: target, limit: limit, user: user, in: txn)
        }
        let remote = try persistence.remoteDocuments.documents(inCollection: query.path, in: txn)
        let overlays = try persistence.overlays.overlays(inCollection: query.path, user: user, in: txn)
        return Self.merge(remote: remote, overlays: overlays, query: query)
    }

    /// Remote documents overridden by overlays, filtered by the query.
    static func merge(
        remote: [DocumentKey: MaybeDocument], overlays: [DocumentKey: Overlay], query: Query
    ) -> [DocumentKey: Document] {
        var result: [DocumentKey: Document] = [:]
        for (key, maybe) in remote where overlays[key] == nil {
            if let doc = maybe.document, query.matches(doc) { result[key] = doc }
        }
        for (key, overlay) in overlays {
            if let doc = overlay.document.document, query.matches(doc) { result[key] = doc }
        }
        return result
    }

    /// Top `limit` documents in target order: walk the index of the first order-by field,
    /// skipping documents that have overlays (their local view is merged afterwards), until
    /// `limit` remote documents match. Each overlay can push at most one remote document out
    /// of the window, so the window is exact after merging and trimming.
    private func documentsUsingIndex(
        _ plan: IndexPlan, query: Query, target: Target, limit: Int, user: String, in txn: PersistenceTransaction
    ) throws(DocError) -> [DocumentKey: Document] {
        let overlays = try persistence.overlays.overlays(inCollection: query.path, user: user, in: txn)
        var remoteMatches: [Document] = []
        let keys = persistence.remoteDocuments.scanIndex(
            collection: query.path, field: plan.field, lower: plan.lower, upper: plan.upper,
            descending: plan.descending, in: txn)
        for key in keys {
            if overlays[key] != nil { continue }
            guard let doc = try persistence.remoteDocuments.get(key, in: txn)?.document, query.matches(doc) else { continue }
            remoteMatches.append(doc)
            if remoteMatches.count >= limit { break }
        }
        var candidates = remoteMatches
        // Documents whose value for the field is too large for the index have a marker
        // instead: they are candidates too.
        for key in try persistence.remoteDocuments.unindexedDocuments(collection: query.path, field: plan.field, in: txn)
            where overlays[key] == nil
        {
            if let doc = try persistence.remoteDocuments.get(key, in: txn)?.document, query.matches(doc) {
                candidates.append(doc)
            }
        }
        for overlay in overlays.values {
            if let doc = overlay.document.document, query.matches(doc) { candidates.append(doc) }
        }
        candidates.sort { target.compare($0, $1) < 0 }
        var result: [DocumentKey: Document] = [:]
        for doc in candidates.prefix(limit) { result[doc.key] = doc }
        return result
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
        let conjunction: [FieldFilter] = target.filters.flatMap { filter -> [FieldFilter] in
            switch filter {
            case .field(let f): return [f]
            case .composite(let c) where c.isFlatConjunction: return c.flattenedFilters
            case .composite: return []
            }
        }
        for filter in conjunction where filter.field == field {
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

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
///   stopping after `limit` matches, and the same index over the overlays (``OverlayIndex``;
///   the overlays it does not hold yet are read one by one, or, when many are, every overlay
///   of the collection), so its cost follows the limit, not the collection size;
/// - a limited query with an `array-contains` filter and no order-by walks the array index's
///   rows of the element (in document-id order) the same way;
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
        // A limited query walks any index that serves it; an unlimited one (a `get`, an
        // aggregation) only one that reads the few rows of exact values, not a whole field.
        if let walk = indexWalk(query: query, target: target, in: txn),
           let limit = target.limit ?? (walk.readsExactValues ? Int.max : nil) {
            return try documentsWalking(walk, query: query, target: target, limit: limit, user: user, in: txn)
        }
        let remote = try persistence.remoteDocuments.documents(inCollection: query.path, in: txn)
        let overlays = try persistence.overlays.overlays(inCollection: query.path, user: user, in: txn)
        return Self.merge(remote: remote, overlays: overlays, query: query)
    }

    /// The index a query walks (``documentsWalking``): a declared composite index, the field
    /// index of its first order-by, the array index of an `array-contains` element, or the
    /// field index of an `==` filter's value (the last two for a query ordered by document id
    /// only); `nil` when none serves it.
    private func indexWalk(query: Query, target: Target, in txn: PersistenceTransaction) -> IndexWalk? {
        let remoteDocuments = persistence.remoteDocuments, compositeIndexes = persistence.compositeIndexes
        if let plan = CompositeIndexPlan(
            target: target, indexes: compositeIndexes.completeIndexes(collectionGroup: query.path.lastSegment ?? ""))
        {
            // The index's trailing fields are the target's order-bys: its order is the
            // target's, ties included.
            return IndexWalk(
                rows: { space in
                    compositeIndexes.scan(
                        plan.index, collection: query.path, leading: plan.leading, lower: plan.lower, upper: plan.upper,
                        from: plan.seed, reverse: plan.reverse, space: space, in: txn)
                },
                unindexed: { space throws(DocError) in
                    try compositeIndexes.unindexedDocuments(plan.index, collection: query.path, space: space, in: txn)
                },
                descending: plan.reverse, tiesNeedOrdering: false, readsExactValues: !plan.leading.isEmpty)
        }
        if let plan = IndexPlan(target: target) {
            return IndexWalk(
                rows: { space in
                    remoteDocuments.scanIndex(
                        collection: query.path, field: plan.field, lower: plan.lower, upper: plan.upper,
                        from: plan.seed, descending: plan.descending, space: space, in: txn)
                },
                // Documents whose value for the field is too large for the index have a
                // marker instead: they are candidates too.
                unindexed: { space throws(DocError) in
                    try remoteDocuments.unindexedDocuments(collection: query.path, field: plan.field, space: space, in: txn)
                },
                // Rows with equal values come in document-id order in the walk's direction:
                // the target's only when its next order-by is the document id, that way.
                descending: plan.descending,
                tiesNeedOrdering: target.orderBys.count > 1
                    && (!target.orderBys[1].field.isDocumentID || target.orderBys[1].isDescending != plan.descending),
                readsExactValues: false)
        }
        if let plan = ArrayContainsPlan(target: target) {
            // The rows of one element come in document-id order: the target's order.
            return IndexWalk(
                rows: { space in
                    remoteDocuments.scanArrayIndex(
                        collection: query.path, field: plan.field, contains: plan.element, descending: plan.descending,
                        space: space, in: txn)
                },
                unindexed: { space throws(DocError) in
                    try remoteDocuments.unindexedDocuments(
                        collection: query.path, field: plan.field, arrayElements: true, space: space, in: txn)
                },
                descending: plan.descending, tiesNeedOrdering: false, readsExactValues: true)
        }
        if let plan = EqualityPlan(target: target) {
            // The rows of one value come in document-id order: the target's order.
            let bound = IndexBound(value: plan.value, inclusive: true)
            return IndexWalk(
                rows: { space in
                    remoteDocuments.scanIndex(
                        collection: query.path, field: plan.field, lower: bound, upper: bound, descending: plan.descending,
                        space: space, in: txn)
                },
                unindexed: { space throws(DocError) in
                    try remoteDocuments.unindexedDocuments(collection: query.path, field: plan.field, space: space, in: txn)
                },
                descending: plan.descending, tiesNeedOrdering: false, readsExactValues: true)
        }
        return nil
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

    /// An index a limited query walks in target order, in either of its spaces: the remote
    /// documents' rows (an empty space) or a user's overlays' (``OverlayIndex/space(_:)``).
    struct IndexWalk {
        /// The rows in range, in target order.
        var rows: ([UInt8]) -> DecodingScan<IndexRow>
        /// The documents whose value was too large for the index (candidates, each checked).
        var unindexed: ([UInt8]) throws(DocError) -> [DocumentKey]
        /// Whether the rows come in descending byte order (a reverse scan).
        var descending: Bool
        /// Whether the target orders rows with equal index values otherwise than the walk
        /// meets them (by another field, or by document id the other way): the walk then goes
        /// on past `limit` matches through the rows tied with the last.
        var tiesNeedOrdering: Bool
        /// Whether the rows are those of exact values (an `==` or `array-contains` filter's,
        /// a composite index's leading equalities): few of the collection's, so an unlimited
        /// query walks them rather than read the whole collection.
        var readsExactValues: Bool
    }

    /// How many batches may wait above the overlay index's watermark for a query to still
    /// use the index, reading their documents' overlays one by one; with more, it reads every
    /// overlay of the collection.
    static let maximumUnindexedBatches = 64
    /// How many documents of the collection those batches may write for the query to still
    /// use the index (each is read whole).
    static let maximumUnindexedDocuments = 256

    /// Top `limit` documents in target order from `walk`, in the target's order.
    ///
    /// The remote documents' rows and, when the overlay index is nearly current, the
    /// overlays' rows are walked together in index order until `limit` documents match; a
    /// document with an overlay counts on the overlay side only, and the overlays that the
    /// index does not hold yet (those of batches above its watermark) are read one by one.
    /// When many are not held, every overlay of the collection is read instead, only as far
    /// as the query needs (its filter and order fields), and each overlay can push at most
    /// one remote document out of the window, so the window is exact after merging.
    private func documentsWalking(
        _ walk: IndexWalk, query: Query, target: Target, limit: Int, user: String, in txn: PersistenceTransaction
    ) throws(DocError) -> [Document] {
        let overlays = persistence.overlays, remoteDocuments = persistence.remoteDocuments
        let space = OverlayIndex.space(user)
        // Without overlays in the collection (one seek), the remote rows are the whole answer.
        let hasOverlays = try overlays.hasOverlays(inCollection: query.path, user: user, in: txn)
        let unindexedOverlays = hasOverlays ? try overlaysAboveWatermark(in: query.path, user: user, in: txn) : []
        var allOverlays: [DocumentKey: Overlay] = [:]
        if unindexedOverlays == nil {
            var fields = target.orderBys.map(\.field)
            for filter in target.filters { fields += filter.flattenedFilters.map(\.field) }
            fields.append(FieldPath(unchecked: [tombstoneField]))
            allOverlays = try overlays.overlays(inCollection: query.path, user: user, projecting: FieldProjection(fields), in: txn)
        }
        /// The remote document of `key` unless its local view is an overlay's.
        func remote(_ key: DocumentKey) throws(DocError) -> Document? {
            if !hasOverlays {
                // Nothing to skip.
            } else if let unindexedOverlays {
                if unindexedOverlays.contains(key) { return nil }
                if try overlays.contains(key, user: user, in: txn) { return nil }
            } else if allOverlays[key] != nil {
                return nil
            }
            return try remoteDocuments.get(key, in: txn)?.document
        }
        /// The overlay of `key`, which has rows in the overlay index.
        func indexedOverlay(_ key: DocumentKey) throws(DocError) -> Document? {
            guard let overlay = try overlays.overlay(for: key, user: user, in: txn) else {
                throw DocError(.dataLoss, "corrupt store: the overlay index has a row of \(key), which has no overlay")
            }
            return overlay.document.document
        }

        var remoteRows = walk.rows([]).makeIterator()
        var overlayRows = hasOverlays && unindexedOverlays != nil ? walk.rows(space).makeIterator() : nil
        var nextRemote = remoteRows.next(), nextOverlay = overlayRows?.next()
        var candidates: [Document] = []
        var matches = 0
        var lastMatchValues: ArraySlice<UInt8>?
        while nextRemote != nil || nextOverlay != nil {
            let fromOverlay: Bool
            if let r = nextRemote, let o = nextOverlay {
                let order = compareKeys(o.position, r.position)
                fromOverlay = walk.descending ? order > 0 : order < 0
            } else {
                fromOverlay = nextOverlay != nil
            }
            let row: IndexRow
            if fromOverlay {
                row = nextOverlay!
                nextOverlay = overlayRows!.next()
            } else {
                row = nextRemote!
                nextRemote = remoteRows.next()
            }
            // With `limit` matches, only rows tied with the last can still be in the window.
            if matches >= limit && !(walk.tiesNeedOrdering && row.values == lastMatchValues) { break }
            let doc: Document?
            if fromOverlay {
                doc = unindexedOverlays!.contains(row.key) ? nil : try indexedOverlay(row.key)
            } else {
                doc = try remote(row.key)
            }
            guard let doc, query.matches(doc) else { continue }
            candidates.append(doc)
            matches += 1
            lastMatchValues = row.values
        }
        if let failure = txn.failure { throw failure }
        for key in try walk.unindexed([]) {
            if let doc = try remote(key), query.matches(doc) { candidates.append(doc) }
        }
        if let unindexedOverlays {
            guard hasOverlays else { return Self.first(limit, of: candidates, in: target) }
            for key in try walk.unindexed(space) where !unindexedOverlays.contains(key) {
                if let doc = try indexedOverlay(key), query.matches(doc) { candidates.append(doc) }
            }
            for key in unindexedOverlays {
                var local = try overlays.overlay(for: key, user: user, in: txn)?.document
                if local == nil { local = try remoteDocuments.get(key, in: txn) }
                if let doc = local?.document, query.matches(doc) { candidates.append(doc) }
            }
            return Self.first(limit, of: candidates, in: target)
        }
        for overlay in allOverlays.values {
            if let doc = overlay.document.document, query.matches(doc) { candidates.append(doc) }
        }
        // The overlays in the window were read only as far as the query needs: read them whole.
        var result = Self.first(limit, of: candidates, in: target)
        for (i, doc) in result.enumerated() where allOverlays[doc.key] != nil {
            guard let full = try overlays.overlay(for: doc.key, user: user, in: txn)?.document.document else {
                throw DocError(.internal, "the overlay of \(doc.key) changed during a query")
            }
            result[i] = full
        }
        return result
    }

    /// The documents directly in `collection` that a batch above `user`'s overlay index
    /// watermark writes (their overlays' rows may be missing or stale), or `nil` when more
    /// than ``maximumUnindexedBatches`` batches are above it or they write more than
    /// ``maximumUnindexedDocuments`` documents of the collection.
    private func overlaysAboveWatermark(
        in collection: ResourcePath, user: String, in txn: PersistenceTransaction
    ) throws(DocError) -> Set<DocumentKey>? {
        let watermark = try persistence.overlayIndex.watermark(user: user, in: txn)
        let batches = try persistence.mutationQueue(for: user).nextBatches(
            after: watermark, limit: Self.maximumUnindexedBatches + 1, in: txn)
        guard batches.count <= Self.maximumUnindexedBatches else { return nil }
        var keys = Set<DocumentKey>()
        for batch in batches {
            for mutation in batch.mutations where mutation.key.collectionPath == collection { keys.insert(mutation.key) }
        }
        return keys.count <= Self.maximumUnindexedDocuments ? keys : nil
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
/// direction, bounded by the target's filters on that field when they form a conjunction, and
/// by its cursors.
struct IndexPlan {
    var field: FieldPath
    var descending: Bool
    var lower: IndexBound?
    var upper: IndexBound?
    /// The row a start cursor on exactly (field, `__name__`) in one direction names (what
    /// `start(afterDocument:)` makes for a query ordered by the field): the walk starts at it,
    /// so a page deep into a run of equal values does not read the run's earlier rows again.
    var seed: (value: Value, documentID: String)?

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
        // A cursor's first value bounds the first sort key (its later values only break ties,
        // so the bound includes the value unless the cursor has that one value and excludes it):
        // a page after a cursor starts there instead of walking the pages before it.
        if let start = target.startAt, let value = start.position.first {
            let bound = IndexBound(value: value, inclusive: start.inclusive || start.position.count > 1)
            if descending { upper = Self.tighterUpper(upper, bound) } else { lower = Self.tighterLower(lower, bound) }
        }
        if let end = target.endAt, let value = end.position.first {
            let bound = IndexBound(value: value, inclusive: end.inclusive || end.position.count > 1)
            if descending { lower = Self.tighterLower(lower, bound) } else { upper = Self.tighterUpper(upper, bound) }
        }
        // Rows with equal values come in document-id order in the walk's direction: the
        // cursor's row is a position in the target's order only when the document id follows
        // the field, in its direction.
        let orderBys = target.orderBys
        if orderBys.count == 2, orderBys[1].field.isDocumentID, orderBys[1].direction == first.direction,
           let start = target.startAt, start.position.count == 2,
           case .reference(let key) = start.position[1], key.isIn(collection: target.path) {
            seed = (start.position[0], key.documentID)
        }
    }

    /// The first filter of `target`'s top-level conjunction that `isWanted`, when the target
    /// is over one collection and ordered by document id only (then the rows of one value of
    /// an index come in its order), and whether that order is descending.
    static func filter(
        orderedByDocumentIDOnly target: Target, where isWanted: (FieldFilter) -> Bool
    ) -> (FieldFilter, descending: Bool)? {
        guard target.collectionGroup == nil, target.orderBys.count == 1, let order = target.orderBys.first,
              order.field.isDocumentID, let filter = conjunction(of: target).first(where: isWanted)
        else { return nil }
        return (filter, order.isDescending)
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

/// How to walk the array index for a limited query ordered by document id only (no explicit
/// order-by) with an `array-contains` filter among its top-level conjunctions: the rows of
/// the filter's element, which come in document-id order.
struct ArrayContainsPlan {
    var field: FieldPath
    var element: Value
    var descending: Bool

    init?(target: Target) {
        guard let (filter, descending) = IndexPlan.filter(orderedByDocumentIDOnly: target, where: { $0.op == .arrayContains })
        else { return nil }
        field = filter.field
        element = filter.value
        self.descending = descending
    }
}

/// How to walk the field index of an `==` filter for a query ordered by document id only
/// (`where f == v`, no order-by): the rows of that one value come in document-id order, the
/// target's order (reversed for a descending document id). The first such filter of the
/// top-level conjunction is walked; the other filters are checked on each document.
struct EqualityPlan {
    var field: FieldPath
    var value: Value
    var descending: Bool

    init?(target: Target) {
        guard let (filter, descending) = IndexPlan.filter(
            orderedByDocumentIDOnly: target, where: { $0.op == .equal && !$0.field.isDocumentID })
        else { return nil }
        field = filter.field
        value = filter.value
        self.descending = descending
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
    /// The row a start cursor names (``CompositeIndexMatch/cursorRow(of:)``): the walk starts
    /// at it, not at the cursor's first value.
    var seed: CompositeIndexMatch.CursorRow?

    /// The plan over the index with the most leading equality fields among `indexes`, or `nil`
    /// when none serves the target (``CompositeIndexMatch``).
    init?(target: Target, indexes: [CompositeIndex]) {
        guard let match = CompositeIndexMatch(target: target, conjunction: IndexPlan.conjunction(of: target), indexes: indexes)
        else { return nil }
        self.init(index: match.index, leading: match.leading, reverse: match.reverse)
        if let range = target.orderBys.count > 1 ? IndexPlan(target: target) : nil {
            (lower, upper) = (range.lower, range.upper)
        }
        seed = match.cursorRow(of: target)
    }

    private init(index: CompositeIndex, leading: [Value], reverse: Bool) {
        self.index = index
        self.leading = leading
        self.reverse = reverse
    }
}

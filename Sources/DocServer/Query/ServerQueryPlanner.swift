package import DocModel

/// Answers a server query from a store's documents and query indexes (through a
/// ``QueryIndexReader``) with exactly the results of the full scan — `Target.matches`, sorted
/// by `Target.compare`, the first `limit` — while reading, for a bounded query, a number of
/// entries that follows the limit and the filters' selectivity rather than the collection's
/// size.
///
/// Plans (docs/server-queries.md):
/// - a document target, or a `__name__ ==` / `in` filter: a **key lookup**;
/// - a collection group: a **key-order scan** of its group index under the parent (to the
///   limit when ordered by `__name__`, else whole);
/// - a collection:
///   - an **index range read** for each of up to ``maxRangeReads`` filtered fields — the values
///     of an `==` / `in` / `array-contains` / `array-contains-any` filter first, then the range
///     of an inequality on another field than the first sort key — read whole, then sorted;
///   - an **index walk** of the first sort key's index in its direction, bounded by the filters
///     and cursors on that field, stopping at the limit (with a limit, or when bounded);
///   - a **key-order scan** to the limit when the first sort key is `__name__` and there is a
///     limit;
///   - the **full scan** when none of these applies, and beside them for a query without a
///     limit and without a point filter (an inequality's range may be most of the collection).
///
/// Without statistics the planner cannot know which candidate is cheapest, so it runs them
/// **interleaved**, one page each in turn, with pages doubling each round (up to
/// ``maxPageSize``), and returns the first to finish: it costs at most about the number of
/// candidates times the best plan's reads (twice, with the two plans of
/// `where a == x order by b limit 50`), and never the sum of a bad guess.
package struct ServerQueryPlanner: Sendable {
    /// The query.
    package let target: Target
    /// The most results (`nil`: all); the store's `query(_:limit:)` argument, which takes
    /// precedence over ``DocModel/Target/limit``.
    package let limit: Int?

    /// The largest page a plan reads in one step.
    static let maxPageSize = 1_024
    /// The most index range reads run beside the other plans.
    static let maxRangeReads = 3

    /// The page sizes of the first round and the largest (tests use tiny pages).
    let pageSizes: (first: Int, max: Int)

    /// The declared composite indexes whose rows every stored document has (the store's
    /// complete ones): those a plan may read.
    package let compositeIndexes: [CompositeIndex]

    package init(target: Target, limit: Int?, compositeIndexes: [CompositeIndex] = []) {
        self.init(target: target, limit: limit, compositeIndexes: compositeIndexes, pageSizes: nil)
    }

    /// - Parameter pageSizes: `nil`: the limit and the entry after it (one page answers an
    ///   unfiltered bounded query), at least 16; 64 without a limit; at most ``maxPageSize``.
    init(target: Target, limit: Int?, compositeIndexes: [CompositeIndex] = [], pageSizes: (first: Int, max: Int)?) {
        self.target = target
        self.limit = limit
        self.compositeIndexes = compositeIndexes
        let first = limit.map { min(max($0 + 1, 16), Self.maxPageSize) } ?? 64
        self.pageSizes = pageSizes ?? (first, Self.maxPageSize)
    }

    /// Runs the query.
    package func execute(with reader: any QueryIndexReader) async throws(DocError) -> QueryExecution {
        try await run(plans(), reader: reader)
    }

    /// Runs `plans` interleaved (see the type's documentation) and returns the first to finish.
    func run(_ plans: [any QueryPlan], reader: any QueryIndexReader) async throws(DocError) -> QueryExecution {
        if let limit, limit <= 0 { return QueryExecution(documents: [], plan: "nothing (limit \(limit))") }
        var budget = max(pageSizes.first, 1)
        while true {
            for plan in plans {
                if let documents = try await plan.step(budget: budget, reader: reader) {
                    return QueryExecution(documents: documents, plan: plan.description)
                }
            }
            budget = min(budget * 2, max(pageSizes.max, 1))
        }
    }

    /// The candidate plans, in the order each round runs them (cheapest-looking first).
    func plans() -> [any QueryPlan] {
        if let group = target.collectionGroup {
            let orderedByKey = target.orderBys.first?.field.isDocumentID ?? true
            return [KeyOrderScanPlan(.group(group, under: target.path), target: target, limit: limit, orderedByKey: orderedByKey)]
        }
        if target.path.count % 2 == 0 {
            let keys = target.path.isEmpty ? [] : [DocumentKey(unchecked: target.path)]
            return [KeyLookupPlan(keys: keys, target: target, limit: limit)]
        }
        let constraints = TargetConstraints(target)
        if let keys = constraints.keyLookups {
            return [KeyLookupPlan(keys: keys.filter { $0.isIn(collection: target.path) }, target: target, limit: limit)]
        }
        var plans: [any QueryPlan] = rangeReads(constraints)
        if let first = constraints.firstOrderBy {
            if first.field.isDocumentID {
                if limit != nil {
                    plans.append(KeyOrderScanPlan(.collection(target.path), target: target, limit: limit, orderedByKey: true,
                                                  seed: constraints.keyWalkSeed))
                }
            } else {
                let range = constraints.valueRange(of: first.field)
                if limit != nil || range.isBounded {
                    let probes = constraints.probes(except: first.field)
                    let walk = IndexWalkPlan(range: range, probes: probes, descending: first.isDescending, target: target,
                                             limit: limit, seed: constraints.indexWalkSeed)
                    // A probing walk reads documents only for matches: it goes first in each
                    // round, so that the round in which it finishes reads nothing else.
                    plans.insert(walk, at: probes.isEmpty ? plans.endIndex : 0)
                }
            }
        }
        // Without a limit, a walk or a range read over an inequality may cover most of the
        // collection, in random reads: the sequential scan runs beside them (a point filter's
        // range is taken to be selective).
        if plans.isEmpty || (limit == nil && constraints.pointFilterFields.isEmpty) {
            plans.append(KeyOrderScanPlan(.collection(target.path), target: target, limit: limit, orderedByKey: false))
        }
        if let walk = compositeWalk(constraints) {
            // It reads what the limit needs whatever the filters' selectivity: first, so that
            // the round in which it finishes reads nothing else.
            plans.insert(walk, at: 0)
        }
        return plans
    }

    /// The walk of the composite index that serves the target best, in the target's order
    /// (the rows' order is the target's, ties included), or `nil`: the rows of its equality
    /// values, narrowed to the range of the first sort key's filters and cursors (the field
    /// after the leading ones), as the single-field walk is.
    private func compositeWalk(_ constraints: TargetConstraints) -> IndexWalkPlan? {
        guard let match = CompositeIndexMatch(target: target, conjunction: constraints.conjunction, indexes: compositeIndexes)
        else { return nil }
        var next: IndexRange?
        if match.leading.count < match.index.fields.count, let first = constraints.firstOrderBy {
            // The match makes the index's field after the leading ones the first sort key.
            next = constraints.valueRange(of: first.field)
        }
        let bounds = match.index.entryRange(
            leading: match.leading,
            nextLower: next?.lower.map { ($0.encoded, $0.inclusive) }, nextUpper: next?.upper.map { ($0.encoded, $0.inclusive) })
        let range = IndexRange(
            collection: target.path, field: match.index.entryField, kind: .composite,
            lower: IndexValueBound(encoded: bounds.lower, inclusive: true),
            upper: bounds.upper.map { IndexValueBound(encoded: $0, inclusive: false) })
        return IndexWalkPlan(range: range, descending: match.reverse, target: target, limit: limit,
                             seed: match.cursorRow(of: target).map { row in
                                 // Strictly after the cursor's row; the document itself read
                                 // as well when the cursor includes it.
                                 (IndexPosition(value: match.index.entryValue(row.values, documentID: row.key.documentID), key: row.key),
                                  row.inclusive ? row.key : nil)
                             })
    }

    /// Index range reads: point filters' values first, then inequality ranges on fields other
    /// than the first sort key (whose range the index walk covers), at most ``maxRangeReads``.
    private func rangeReads(_ constraints: TargetConstraints) -> [any QueryPlan] {
        let walked = constraints.firstOrderBy?.field
        var plans: [any QueryPlan] = []
        for field in constraints.pointFilterFields {
            if let ranges = constraints.pointRanges(of: field) {
                plans.append(IndexRangeReadPlan(ranges: ranges, target: target, limit: limit))
            }
        }
        for field in constraints.rangeFilterFields where field != walked && !constraints.pointFilterFields.contains(field) {
            plans.append(IndexRangeReadPlan(ranges: [constraints.valueRange(of: field)], target: target, limit: limit))
        }
        return Array(plans.prefix(Self.maxRangeReads))
    }
}

/// The answer of ``ServerQueryPlanner/execute(with:)``.
package struct QueryExecution: Sendable {
    /// The results, in target order.
    package var documents: [Document]
    /// The plan that produced them (for logs and tests).
    package var plan: String
}

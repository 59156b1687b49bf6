internal import DocModel

/// Walks the value index of the target's first sort key in that key's direction, within the
/// range the filters and cursors on the field allow, and stops once it has `limit` matches and
/// the next entry's value is past the last match's: every document not read yet sorts after
/// those (the first sort key decides first; later keys only break ties among equal values,
/// and all of those were read). Documents whose value is too large for the index are read
/// first and merged in.
///
/// The walk reads documents only for entries that can match: an entry whose document lacks
/// the entry an `==` / `array-contains` filter on another field requires (an ``IndexProbe``)
/// is skipped on the index alone — `where a == x order by b` walks `b` and reads the
/// documents with `a == x`, not every document on the way.
///
/// Cost: the entries up to the limit-th match, plus the rest of its value's ties, and the
/// documents of those that pass the probes — small when the other filters match often; up to
/// the whole range when they rarely do (then a ``IndexRangeReadPlan`` on another filter
/// usually finishes first).
///
/// The same walk reads a declared composite index (``ServerQueryPlanner``'s composite index
/// walk): its range is the rows with the query's equality values, in the query's order, each
/// row's value unique (it ends with the document id), so it stops at the entry after the
/// limit-th match.
final class IndexWalkPlan: QueryPlan {
    /// How many times the round's budget of entries a probing walk reads per page.
    static let probingPageFactor = 4

    private let range: IndexRange
    private let probes: [IndexProbe]
    private let descending: Bool
    private let limit: Int?
    private var seedLookup: DocumentKey?
    private var started = false
    private var position: IndexPosition?
    /// Matches found by the walk (not the unindexed or seed documents merged in).
    private var matched = 0
    /// The value encoding of the walk's last match.
    private var lastMatchedValue: [UInt8] = []
    private var candidates: QueryCandidates

    /// - Parameter seed: where the walk may start (see ``TargetConstraints/indexWalkSeed``).
    init(range: IndexRange, probes: [IndexProbe] = [], descending: Bool, target: Target, limit: Int?,
         seed: (after: IndexPosition, includes: DocumentKey?)? = nil) {
        self.range = range
        self.probes = probes
        self.descending = descending
        self.limit = limit
        position = seed?.after
        seedLookup = seed?.includes
        candidates = QueryCandidates(target: target, limit: limit)
    }

    var description: String {
        "index walk \(descending ? "desc" : "asc") of \(range)" + (probes.isEmpty ? "" : " probing \(probes)")
    }

    /// Whether the walk has its limit and `entry` is past the last match's value.
    private func isPastLimit(_ entry: IndexPosition) -> Bool {
        guard let limit, matched >= limit else { return false }
        return entry.value != lastMatchedValue
    }

    func step(budget: Int, reader: any QueryIndexReader) async throws(DocError) -> [Document]? {
        if !started {
            started = true
            var merged = try await reader.unindexedDocuments(of: range)
            if let key = seedLookup { merged += try await reader.documentsInOrder([key]) }
            for document in merged { _ = candidates.consider(document) }
        }
        if range.isEmpty { return candidates.results }
        // Matches still needed: the rest of the limit and one more — a tie of the last, or the
        // proof that the walk is past it — so the page that completes the limit also ends it.
        let wanted = limit.map { max($0 - matched, 0) + 1 } ?? Int(Int32.max)
        // A probing walk reads documents only for matches, at most `wanted` of them, so its
        // page can hold more entries than the round's budget (which counts documents or
        // entries alike): an entry and its probes are point reads of the index, and fewer
        // pages are fewer round trips to a database server.
        let pageSize = probes.isEmpty ? budget : budget * Self.probingPageFactor
        let page = try await reader.walkPage(range, requiring: probes, after: position, descending: descending,
                                             limit: pageSize, maxMatches: wanted)
        for (entry, document) in page.matches {
            if isPastLimit(entry) { return candidates.results }
            if candidates.consider(document) {
                matched += 1
                lastMatchedValue = entry.value
            }
        }
        position = page.last ?? position
        // The range ended, or the walk has its limit and has read past the last match's ties.
        let stoppedAtMatches = page.matches.count >= wanted
        if (page.examined < pageSize && !stoppedAtMatches) || page.last.map(isPastLimit) == true { return candidates.results }
        return nil
    }
}

internal import DocModel

/// Walks the value index of the target's first sort key in that key's direction, within the
/// range the filters and cursors on the field allow, and stops once it has `limit` matches and
/// the next entry's value is past the last match's: every document not read yet sorts after
/// those (the first sort key decides first; later keys only break ties among equal values,
/// and all of those were read). Documents whose value is too large for the index are read
/// first and merged in.
///
/// Cost: the entries up to the limit-th match, plus the rest of its value's ties — small when
/// the other filters match often; up to the whole range when they rarely do (then a
/// ``IndexRangeReadPlan`` on another filter usually finishes first).
final class IndexWalkPlan: QueryPlan {
    private let range: IndexRange
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
    init(range: IndexRange, descending: Bool, target: Target, limit: Int?,
         seed: (after: IndexPosition, includes: DocumentKey?)? = nil) {
        self.range = range
        self.descending = descending
        self.limit = limit
        position = seed?.after
        seedLookup = seed?.includes
        candidates = QueryCandidates(target: target, limit: limit)
    }

    var description: String { "index walk \(descending ? "desc" : "asc") of \(range)" }

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
        var page = try await reader.indexPage(range, after: position, descending: descending, limit: budget)
        let exhausted = page.count < budget
        // Past the limit already: only the last match's ties are still worth reading.
        if let end = page.firstIndex(where: isPastLimit) { page.removeSubrange(end...) }
        let stopsInPage = page.count < budget && !exhausted
        for (entry, document) in try await reader.documents(of: page) {
            if isPastLimit(entry) { return candidates.results }
            if candidates.consider(document) {
                matched += 1
                lastMatchedValue = entry.value
            }
        }
        position = page.last ?? position
        return exhausted || stopsInPage ? candidates.results : nil
    }
}

internal import DocModel

/// Reads whole ranges of one field's index — the values an `==`, `in`, `array-contains` or
/// `array-contains-any` filter allows (one range per value), or the range of a filter that
/// is not on the first sort key — then fetches their documents and sorts the matches.
/// Documents whose value is too large for the index are read first and merged in.
///
/// The entries are read first (sequential, cheap), the documents only once the ranges are
/// known to end: while an ``IndexWalkPlan`` beside it is the faster plan, a range read that
/// would have fetched a large share of the collection has only scanned as many entries.
///
/// Cost: every entry of the ranges and their documents, whatever the limit — small for a
/// selective filter.
final class IndexRangeReadPlan: QueryPlan {
    private let ranges: [IndexRange]
    /// The field (and kind) whose unindexed documents are merged in.
    private let field: IndexRange?
    private var next = 0
    private var started = false
    private var position: IndexPosition?
    /// The documents of the entries read so far, each once, in entry order.
    private var keys: [DocumentKey] = []
    private var seen = Set<DocumentKey>()
    /// How many of ``keys`` have been fetched.
    private var fetched = 0
    private var candidates: QueryCandidates

    /// - Parameter ranges: all of one field and kind; none when the filter can match nothing
    ///   (an `in` whose value is not a list).
    init(ranges: [IndexRange], target: Target, limit: Int?) {
        self.ranges = ranges.filter { !$0.isEmpty }
        field = ranges.first
        candidates = QueryCandidates(target: target, limit: limit)
    }

    var description: String {
        guard let first = ranges.first else { return "index range read of no values" }
        return ranges.count == 1 ? "index range read of \(first)" : "index range read of \(ranges.count) ranges of \(first)"
    }

    /// Reads up to `budget` entries, then (once every range is read) fetches up to the rest of
    /// the budget in documents.
    func step(budget: Int, reader: any QueryIndexReader) async throws(DocError) -> [Document]? {
        if !started {
            started = true
            if let field {
                for document in try await reader.unindexedDocuments(of: field) { _ = candidates.consider(document) }
            }
        }
        var remaining = budget
        while remaining > 0 {
            if next < ranges.count {
                let page = try await reader.indexPage(ranges[next], after: position, descending: false, limit: remaining)
                for entry in page where seen.insert(entry.key).inserted { keys.append(entry.key) }
                if page.count < remaining {
                    next += 1
                    position = nil
                } else {
                    position = page.last
                }
                remaining -= page.count
            } else if fetched < keys.count {
                let chunk = Array(keys[fetched..<min(fetched + remaining, keys.count)])
                for document in try await reader.documentsInOrder(chunk) { _ = candidates.consider(document) }
                fetched += chunk.count
                remaining -= chunk.count
            } else {
                return candidates.results
            }
        }
        return nil
    }
}

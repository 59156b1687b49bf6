internal import DocModel

/// The documents a plan has found to match its target, each once; the results are their
/// first `limit` in target order.
struct QueryCandidates {
    let target: Target
    let limit: Int?
    private var found: [DocumentKey: Document] = [:]

    init(target: Target, limit: Int?) {
        self.target = target
        self.limit = limit
    }

    /// Keeps `document` if it matches the target; returns whether it matched and was not kept
    /// already.
    mutating func consider(_ document: Document) -> Bool {
        guard target.matches(document), found[document.key] == nil else { return false }
        found[document.key] = document
        return true
    }

    /// The first `limit` matches in target order.
    var results: [Document] {
        let sorted = found.values.sorted { target.compare($0, $1) < 0 }
        guard let limit, sorted.count > limit else { return sorted }
        return Array(sorted.prefix(limit))
    }
}

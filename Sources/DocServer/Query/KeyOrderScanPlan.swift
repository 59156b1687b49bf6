internal import DocModel

/// Walks a collection, or a collection group under its parent, in key order: the full scan.
///
/// When the target's first sort key is `__name__` and there is a limit, the walk goes in that
/// key's direction and stops at the limit-th match (keys are unique, so nothing later can
/// sort before it), starting after a `__name__` start cursor's document; otherwise it reads
/// everything and sorts.
final class KeyOrderScanPlan: QueryPlan {
    /// What is scanned.
    enum Source {
        case collection(ResourcePath)
        case group(String, under: ResourcePath)
    }

    private let source: Source
    private let descending: Bool
    /// The limit when the walk may stop at it.
    private let stopAt: Int?
    private var seedLookup: DocumentKey?
    private var position: DocumentKey?
    private var matched = 0
    private var candidates: QueryCandidates

    /// - Parameters:
    ///   - orderedByKey: whether the target's first sort key is `__name__`.
    ///   - seed: where a collection walk ordered by key may start (see
    ///     ``TargetConstraints/keyWalkSeed``).
    init(_ source: Source, target: Target, limit: Int?, orderedByKey: Bool,
         seed: (after: DocumentKey, includes: DocumentKey?)? = nil) {
        self.source = source
        let first = target.orderBys.first
        descending = orderedByKey && (first?.isDescending ?? false)
        stopAt = orderedByKey ? limit : nil
        if orderedByKey, let seed {
            position = seed.after
            seedLookup = seed.includes
        }
        candidates = QueryCandidates(target: target, limit: limit)
    }

    var description: String {
        let what: String
        switch source {
        case .collection(let path): what = "collection \(path.canonicalString)"
        case .group(let group, let parent): what = "collection group \(group) under /\(parent.canonicalString)"
        }
        return "key-order scan of \(what)" + (stopAt == nil ? "" : descending ? " desc, to the limit" : " asc, to the limit")
    }

    func step(budget: Int, reader: any QueryIndexReader) async throws(DocError) -> [Document]? {
        if let key = seedLookup {
            seedLookup = nil
            for document in try await reader.documentsInOrder([key]) where candidates.consider(document) {
                matched += 1
            }
            if let stopAt, matched >= stopAt { return candidates.results }
        }
        let page: [Document]
        switch source {
        case .collection(let path):
            page = try await reader.collectionPage(path, after: position, descending: descending, limit: budget)
        case .group(let group, let parent):
            page = try await reader.collectionGroupPage(group, under: parent, after: position, descending: descending, limit: budget)
        }
        for document in page where candidates.consider(document) {
            matched += 1
            if let stopAt, matched >= stopAt { return candidates.results }
        }
        position = page.last?.key
        return page.count < budget ? candidates.results : nil
    }
}

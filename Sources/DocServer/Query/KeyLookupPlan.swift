internal import DocModel

/// Reads the documents a target can only be among, by key: a document target, or a collection
/// target with a `__name__ ==` / `__name__ in` filter. One read.
final class KeyLookupPlan: QueryPlan {
    private let keys: [DocumentKey]
    private var candidates: QueryCandidates

    init(keys: [DocumentKey], target: Target, limit: Int?) {
        self.keys = keys
        candidates = QueryCandidates(target: target, limit: limit)
    }

    var description: String { "key lookup of \(keys.count) document(s)" }

    func step(budget: Int, reader: any QueryIndexReader) async throws(DocError) -> [Document]? {
        for document in try await reader.documentsInOrder(keys) {
            _ = candidates.consider(document)
        }
        return candidates.results
    }
}

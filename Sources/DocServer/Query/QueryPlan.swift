internal import DocModel

/// One way to answer a target, run a page at a time so that ``ServerQueryPlanner`` can run
/// several side by side and take the first to finish.
protocol QueryPlan: AnyObject, CustomStringConvertible {
    /// Reads one more page of about `budget` entries (index entries or documents) and returns
    /// the results — the target's matches in target order, at most the limit — once the plan
    /// has seen every document that could be among them; `nil` while it needs more pages.
    func step(budget: Int, reader: any QueryIndexReader) async throws(DocError) -> [Document]?
}

extension QueryIndexReader {
    /// The existing documents of `keys`, in the order of `keys`.
    func documentsInOrder(_ keys: [DocumentKey]) async throws(DocError) -> [Document] {
        guard !keys.isEmpty else { return [] }
        let found = try await documents(keys)
        return keys.compactMap { found[$0] }
    }

    /// The documents directly in `collection` whose value at `field` (or an array element of
    /// it, by `kind`) has no index entry because it is too large: every plan that reads the
    /// field's index adds them as candidates.
    func unindexedDocuments(of range: IndexRange) async throws(DocError) -> [Document] {
        try await documentsInOrder(try await unindexedDocuments(in: range.collection, field: range.field, kind: range.kind))
    }
}

public import DocModel

/// The result of an aggregation (``QueryBuilder/aggregate(_:source:)``, ``QueryBuilder/count(source:)``):
/// the values by alias, and where they come from.
///
/// From the server (`metadata.isFromCache == false`) the values are over the committed
/// documents as of ``readTime``: writes of this device the server has not acknowledged yet do
/// not count. From the cache (`isFromCache == true`) they are over the local view, pending
/// writes included (`metadata.hasPendingWrites` says whether any of the documents has one).
public struct AggregateQuerySnapshot: Sendable, Hashable {
    /// The values by alias: integers for `count` and integer sums, doubles for other sums and
    /// averages, `null` for the average of no numbers.
    public let values: [String: Value]
    /// Where the values come from.
    public let metadata: SnapshotMetadata
    /// The server's version the values were read at; `nil` from the cache.
    public let readTime: SnapshotVersion?

    /// The value of one aggregation, by its alias.
    public subscript(alias: String) -> Value? { values[alias] }

    /// The `count` aggregation's value (alias `count`).
    public var count: Int64? {
        if case .integer(let n)? = values["count"] { return n }
        return nil
    }
}

extension QueryBuilder {
    /// The number of documents the query matches (its limit, if any, caps it). See
    /// ``aggregate(_:source:)`` for the sources.
    public func count(source: Source = .default) async throws(DocError) -> Int64 {
        let snapshot = try await aggregate([try AggregateField.count()], source: source)
        return snapshot.count ?? 0
    }

    /// Counts, sums or averages the query's results.
    ///
    /// - `.server`: the server computes them over its committed data, through its indexes —
    ///   only the values travel (no limit needed); the rules decide as for a `list` of the
    ///   query; `unavailable` while offline.
    /// - `.cache`: computed over the local view (pending writes included), at once.
    /// - `.default`: the server unless the store knows itself offline (or has no server, or
    ///   its network is disabled); the cache then, or when the server cannot be reached.
    ///
    /// - Throws: `invalidArgument` for no aggregations, more than
    ///   ``AggregateField/maxPerRequest``, or an alias used twice; the server's refusal.
    public func aggregate(_ fields: [AggregateField], source: Source = .default) async throws(DocError) -> AggregateQuerySnapshot {
        try AggregateField.validate(fields)
        let query = baseQuery
        let core = query.store.core
        let reachable = await core.mayReachServer
        if source == .server || (source == .default && reachable) {
            do {
                let (configuration, clientID) = try await core.unaryEndpoint()
                let target = try query.query.toTarget()
                let (values, readTime) = try await AggregationRequest.run(
                    target: target, aggregations: fields, configuration: configuration, clientID: clientID)
                return AggregateQuerySnapshot(values: values, metadata: SnapshotMetadata(hasPendingWrites: false, isFromCache: false),
                                              readTime: readTime)
            } catch where source == .default && error.code == .unavailable {
                // Offline after all: the cache answers.
            }
        }
        let (values, hasPendingWrites) = try await core.aggregateLocally(query.query, fields)
        return AggregateQuerySnapshot(values: values,
                                      metadata: SnapshotMetadata(hasPendingWrites: hasPendingWrites, isFromCache: true),
                                      readTime: nil)
    }
}

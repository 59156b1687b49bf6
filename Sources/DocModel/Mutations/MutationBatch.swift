/// Mutations written together by one user call (a write batch, a transaction commit): they
/// commit atomically, in order.
public struct MutationBatch: Sendable, Hashable, CustomStringConvertible {
    /// The batch's id in the local mutation queue (increasing).
    public var batchID: Int
    /// When the user wrote the batch: the local time pending server timestamps show.
    public var localWriteTime: Timestamp
    /// Mutations applied to the local view before ``mutations``, to pin the state
    /// non-idempotent transforms start from. Never sent to the server.
    public var baseMutations: [Mutation]
    /// The user's mutations, in order.
    public var mutations: [Mutation]

    /// Creates a batch; `baseMutations` defaults to none.
    public init(batchID: Int, localWriteTime: Timestamp, baseMutations: [Mutation] = [], mutations: [Mutation]) {
        self.batchID = batchID
        self.localWriteTime = localWriteTime
        self.baseMutations = baseMutations
        self.mutations = mutations
    }

    /// The documents the batch writes.
    public var keys: Set<DocumentKey> { Set(mutations.map(\.key)) }

    /// The local view of document `key` (`document` is its current view, or `nil`) with the
    /// batch's base mutations, then its mutations, applied in order
    /// (``Mutation/applyToLocalView(_:localWriteTime:)``).
    public func applyToLocalView(_ document: MaybeDocument?, for key: DocumentKey) -> MaybeDocument? {
        var document = document
        for mutation in baseMutations where mutation.key == key {
            document = mutation.applyToLocalView(document, localWriteTime: localWriteTime)
        }
        for mutation in mutations where mutation.key == key {
            document = mutation.applyToLocalView(document, localWriteTime: localWriteTime)
        }
        return document
    }

    /// The cached remote document `key` once the server has acknowledged the batch: each of the
    /// batch's mutations of `key` applied with its result
    /// (``Mutation/applyToRemoteDocument(_:result:)``).
    public func applyToRemoteDocument(
        _ document: MaybeDocument?, for key: DocumentKey, result: MutationBatchResult
    ) -> MaybeDocument? {
        var document = document
        for (mutation, mutationResult) in zip(mutations, result.mutationResults) where mutation.key == key {
            document = mutation.applyToRemoteDocument(document, result: mutationResult)
        }
        return document
    }

    /// The id, local write time and mutations, for logs.
    public var description: String {
        "MutationBatch(id: \(batchID), localWriteTime: \(localWriteTime), mutations: \(mutations))"
    }
}

/// The server's acknowledgement of a ``MutationBatch``.
public struct MutationBatchResult: Sendable, Hashable {
    /// The batch acknowledged.
    public let batch: MutationBatch
    /// The commit version of the whole batch.
    public let commitVersion: SnapshotVersion
    /// One result per mutation of the batch, in order.
    public let mutationResults: [MutationResult]
    /// The write stream's resume token after this acknowledgement, if any.
    public let streamToken: [UInt8]?
    /// The version each written document has after the batch: its last mutation's result
    /// version, or the commit version when that is `none`.
    public let docVersions: [DocumentKey: SnapshotVersion]

    /// Pairs the batch with the server's results.
    ///
    /// - Throws: `invalidArgument` when the number of results differs from the number of
    ///   mutations.
    public init(
        batch: MutationBatch, commitVersion: SnapshotVersion, mutationResults: [MutationResult],
        streamToken: [UInt8]? = nil
    ) throws(DocError) {
        guard mutationResults.count == batch.mutations.count else {
            throw .invalid(
                "batch \(batch.batchID) has \(batch.mutations.count) mutations but the server sent \(mutationResults.count) results")
        }
        self.batch = batch
        self.commitVersion = commitVersion
        self.mutationResults = mutationResults
        self.streamToken = streamToken
        var versions: [DocumentKey: SnapshotVersion] = [:]
        for (mutation, result) in zip(batch.mutations, mutationResults) {
            versions[mutation.key] = result.version == SnapshotVersion.none ? commitVersion : result.version
        }
        self.docVersions = versions
    }
}

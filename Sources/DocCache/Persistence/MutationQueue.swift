package import DocModel
internal import LevelDB

/// The queue of one user's pending (not yet acknowledged or rejected) mutation batches, in
/// batch-id order, with an index from document to the batches that write it, and the write
/// stream's last resume token.
///
/// Batch ids are handed out by the store, strictly increasing across users and restarts and
/// never reused, not even after the queue empties (see
/// ``PersistenceTransaction/persistBatchIDCounter()``).
package final class MutationQueue {
    /// The user whose queue this is (the empty string for an unauthenticated user).
    package let user: String
    /// The store state (batch-id allocation, the directory for errors).
    let state: PersistenceState

    /// Creates the queue of `user` (see `Persistence.mutationQueue(for:)`).
    init(user: String, state: PersistenceState) {
        self.user = user
        self.state = state
    }

    /// The format byte of a queue row.
    static let queueFormat: UInt8 = 1

    // MARK: Batches

    /// Appends a batch: allocates the next batch id, stores the batch and a document → batch
    /// row for every document it writes (mutations and base mutations). `firstEncodedData`,
    /// when the caller has it already, is `binaryEncoded()` of the data of the first mutation
    /// (a set or patch).
    package func addBatch(
        localWriteTime: Timestamp, baseMutations: [Mutation], mutations: [Mutation], firstEncodedData: [UInt8]? = nil,
        in txn: PersistenceTransaction
    ) throws(DocError) -> MutationBatch {
        let id = txn.allocateBatchID()
        let batch = MutationBatch(batchID: id, localWriteTime: localWriteTime, baseMutations: baseMutations, mutations: mutations)
        txn.put(KeySchema.mutation(user, id), MutationCoding.encode(batch, firstEncodedData: firstEncodedData))
        // Puts of the same key are idempotent: no need to de-duplicate the keys first.
        for m in baseMutations { txn.put(KeySchema.documentMutation(user, m.key, id), []) }
        for m in mutations { txn.put(KeySchema.documentMutation(user, m.key, id), []) }
        return batch
    }

    /// Whether batch `id` is in this user's queue.
    package func contains(_ id: BatchID, in txn: PersistenceTransaction) throws(DocError) -> Bool {
        try txn.get(KeySchema.mutation(user, id)) != nil
    }

    /// The batch with id `id`, or `nil` when it is not in this user's queue.
    package func batch(_ id: BatchID, in txn: PersistenceTransaction) throws(DocError) -> MutationBatch? {
        try Self.batch(id, user: user, in: txn)
    }

    /// The batch with id `id` in `user`'s queue, for readers without the queue object (an
    /// overlay that refers to its batch).
    static func batch(_ id: BatchID, user: String, in txn: PersistenceTransaction) throws(DocError) -> MutationBatch? {
        guard let raw = try txn.get(KeySchema.mutation(user, id)) else { return nil }
        return try MutationCoding.decodeBatch(raw)
    }

    /// The first `limit` batches with ids greater than `id` (``batchIDUnknown`` for the first
    /// batches), in order, read in one scan that stops at the first batch `accept` refuses
    /// (which is not returned).
    package func nextBatches(
        after id: BatchID, limit: Int, in txn: PersistenceTransaction, while accept: (MutationBatch) -> Bool = { _ in true }
    ) throws(DocError) -> [MutationBatch] {
        guard limit > 0 else { return [] }
        let prefix = KeySchema.mutationsPrefix(user)
        let from = id == BatchID.max ? KeySchema.prefixEnd(prefix) : KeySchema.mutation(user, id + 1)
        var batches: [MutationBatch] = []
        for entry in txn.scan(KeyRange(from: from, upTo: KeySchema.prefixEnd(prefix))) {
            let batch = try MutationCoding.decodeBatch(entry.value)
            guard accept(batch) else { break }
            batches.append(batch)
            if batches.count == limit { break }
        }
        if let failure = txn.failure { throw failure }
        return batches
    }

    /// Every batch of the queue, in batch-id order.
    package func allBatches(in txn: PersistenceTransaction) throws(DocError) -> [MutationBatch] {
        var out: [MutationBatch] = []
        for entry in txn.scan(prefix: KeySchema.mutationsPrefix(user)) {
            out.append(try MutationCoding.decodeBatch(entry.value))
        }
        if let failure = txn.failure { throw failure }
        return out
    }

    /// The batches that write any of `keys`, in batch-id order, each once.
    package func batchesAffecting(_ keys: some Collection<DocumentKey>, in txn: PersistenceTransaction) throws(DocError) -> [MutationBatch] {
        var ids = Set<BatchID>()
        for key in keys {
            let prefix = KeySchema.documentMutationsPrefix(user, key)
            for entry in txn.scan(prefix: prefix) {
                var d = KeyDecoder(entry.key, offset: prefix.count)
                ids.insert(BatchID(try d.readInt64()))
            }
        }
        return try batches(ids, in: txn)
    }

    /// Whether a batch with an id below `id` writes `key` (in its mutations or base
    /// mutations): one seek in the document → batch index.
    package func hasBatch(affecting key: DocumentKey, before id: BatchID, in txn: PersistenceTransaction) throws(DocError) -> Bool {
        let prefix = KeySchema.documentMutationsPrefix(user, key)
        var iterator = txn.scan(KeyRange(from: prefix, upTo: KeySchema.documentMutation(user, key, id))).makeIterator()
        let entry = iterator.next()
        if let failure = txn.failure { throw failure }
        return entry != nil
    }

    /// Calls `body` with each batch that writes `key` (in its mutations or base mutations)
    /// and has an id above `id` (every such batch when `id` is `nil`), in batch-id order,
    /// until `body` returns `false`. Batches are read one at a time, so stopping early costs
    /// only the batches read.
    package func forEachBatch(
        affecting key: DocumentKey, after id: BatchID?, in txn: PersistenceTransaction,
        _ body: (MutationBatch) throws(DocError) -> Bool
    ) throws(DocError) {
        let prefix = KeySchema.documentMutationsPrefix(user, key)
        let from = id.map { KeySchema.documentMutation(user, key, $0) } ?? prefix
        for entry in txn.scan(KeyRange(from: from, upTo: KeySchema.prefixEnd(prefix))) {
            var d = KeyDecoder(entry.key, offset: prefix.count)
            let batchID = BatchID(try d.readInt64())
            if let id, batchID <= id { continue }
            guard let batch = try batch(batchID, in: txn) else {
                throw DocError(
                    .dataLoss, "the document index of the mutation queue of user \"\(user)\" names batch \(batchID), which is missing",
                    at: state.directory)
            }
            guard try body(batch) else { break }
        }
        if let failure = txn.failure { throw failure }
    }

    /// The batches that write a document directly in the collection `path` (not in its
    /// sub-collections), in batch-id order, each once.
    package func batchesAffecting(collection path: ResourcePath, in txn: PersistenceTransaction) throws(DocError) -> [MutationBatch] {
        var ids = Set<BatchID>()
        for entry in txn.scan(prefix: KeySchema.documentMutationsPrefix(user, inCollection: path)) {
            let (documentPath, id) = try KeySchema.decodeDocumentMutation(entry.key)
            if documentPath.count == path.count + 1 { ids.insert(id) }
        }
        return try batches(ids, in: txn)
    }

    private func batches(_ ids: Set<BatchID>, in txn: PersistenceTransaction) throws(DocError) -> [MutationBatch] {
        if let failure = txn.failure { throw failure }
        var out: [MutationBatch] = []
        out.reserveCapacity(ids.count)
        for id in ids.sorted() {
            guard let batch = try batch(id, in: txn) else {
                throw DocError(
                    .dataLoss, "the document index of the mutation queue of user \"\(user)\" names batch \(id), which is missing",
                    at: state.directory)
            }
            out.append(batch)
        }
        return out
    }

    /// Removes a batch (acknowledged or rejected), its document → batch rows and its delivery
    /// record (``BatchDeliveryStore``). Stamps the
    /// LRU sentinels of its documents (they were just used).
    ///
    /// - Throws: `notFound` when the batch is not in this user's queue.
    package func remove(_ batch: MutationBatch, in txn: PersistenceTransaction) throws(DocError) {
        let rowKey = KeySchema.mutation(user, batch.batchID)
        guard try txn.get(rowKey) != nil else {
            throw DocError(.notFound, "cannot remove batch \(batch.batchID): it is not in the mutation queue of user \"\(user)\"")
        }
        txn.delete(rowKey)
        txn.delete(KeySchema.batchDelivery(user, batch.batchID))
        txn.persistBatchIDCounter()
        var keys = Set<DocumentKey>()
        for m in batch.baseMutations { keys.insert(m.key) }
        for m in batch.mutations { keys.insert(m.key) }
        for key in keys {
            txn.delete(KeySchema.documentMutation(user, key, batch.batchID))
            txn.stampSentinel(key)
        }
    }

    // MARK: Queue state

    /// The write stream's last resume token (empty when none was stored).
    package func lastStreamToken(in txn: PersistenceTransaction) throws(DocError) -> ResumeToken {
        guard let raw = try txn.get(KeySchema.mutationQueue(user)) else { return [] }
        var r = ByteReader(raw, record: "mutation queue")
        let f = try r.byte()
        guard f == Self.queueFormat else { throw r.fail("unsupported format \(f)", at: 0) }
        let token = try r.lengthPrefixed()
        try r.finish()
        return token
    }

    /// Stores the write stream's resume token.
    package func setLastStreamToken(_ token: ResumeToken, in txn: PersistenceTransaction) throws(DocError) {
        var w = ByteWriter(format: Self.queueFormat, capacity: token.count + 4)
        w.lengthPrefixed(token)
        txn.put(KeySchema.mutationQueue(user), w.bytes)
    }

    /// The id of the last batch in the queue, or ``batchIDUnknown`` when it is empty.
    package func highestUnacknowledgedBatchID(in txn: PersistenceTransaction) throws(DocError) -> BatchID {
        let prefix = KeySchema.mutationsPrefix(user)
        var iterator = txn.scan(prefix: prefix, reverse: true).makeIterator()
        let entry = iterator.next()
        if let failure = txn.failure { throw failure }
        guard let entry else { return batchIDUnknown }
        var d = KeyDecoder(entry.key, offset: prefix.count)
        return BatchID(try d.readInt64())
    }

    /// Whether the queue has no batches.
    package func isEmpty(in txn: PersistenceTransaction) throws(DocError) -> Bool {
        let empty = !txn.containsKey(withPrefix: KeySchema.mutationsPrefix(user))
        if let failure = txn.failure { throw failure }
        return empty
    }

    /// The number of batches in the queue.
    package func count(in txn: PersistenceTransaction) throws(DocError) -> Int {
        try txn.countKeys(withPrefix: KeySchema.mutationsPrefix(user))
    }
}

package import DocModel

/// A batch the server rejected, as kept for the user (``FailedWriteStore``): the user's
/// mutations, when they were made and rejected, why, and the server's version of each
/// document the batch writes as the client last knew it (from the remote document cache; `nil`
/// when the cache held nothing for the key).
package struct FailedWriteRecord: Sendable, Equatable {
    /// The rejected batch (its id is the failed write's id).
    package var batch: MutationBatch
    /// When the rejection arrived.
    package var rejectedAt: Timestamp
    /// The server's reason.
    package var error: DocError
    /// How many times the batch was sent before it was rejected.
    package var attempts: Int
    /// For each document of the batch, in the batch's order: the remote document the client
    /// had when the rejection arrived (`nil`: nothing cached).
    package var serverDocuments: [(key: DocumentKey, document: MaybeDocument?)]

    package init(batch: MutationBatch, rejectedAt: Timestamp, error: DocError, attempts: Int,
                 serverDocuments: [(key: DocumentKey, document: MaybeDocument?)]) {
        self.batch = batch
        self.rejectedAt = rejectedAt
        self.error = error
        self.attempts = attempts
        self.serverDocuments = serverDocuments
    }

    package static func == (a: Self, b: Self) -> Bool {
        a.batch == b.batch && a.rejectedAt == b.rejectedAt && a.error == b.error && a.attempts == b.attempts
            && a.serverDocuments.map(\.key) == b.serverDocuments.map(\.key)
            && a.serverDocuments.map(\.document) == b.serverDocuments.map(\.document)
    }

    /// The record's storage encoding:
    /// `format, batch (MutationCoding), timestamp rejectedAt, zigzag code, string message,
    /// flag + string location, zigzag attempts, varint n, n × (key, flag + MaybeDocument)`.
    static let format: UInt8 = 1

    func encoded() -> [UInt8] {
        var w = ByteWriter(format: Self.format, capacity: 256)
        w.lengthPrefixed(MutationCoding.encode(batch))
        w.timestamp(rejectedAt)
        w.error(error)
        w.zigzag(Int64(attempts))
        w.varint(UInt64(serverDocuments.count))
        for (key, document) in serverDocuments {
            w.documentKey(key)
            w.flag(document != nil)
            if let document { w.lengthPrefixed(document.binaryEncoded()) }
        }
        return w.bytes
    }

    init(decoding bytes: [UInt8]) throws(DocError) {
        var r = ByteReader(bytes, record: "failed write")
        guard try r.byte() == Self.format else { throw r.fail("unknown failed-write format") }
        batch = try MutationCoding.decodeBatch(try r.lengthPrefixed())
        rejectedAt = try r.timestamp()
        error = try r.error()
        attempts = try r.int()
        var documents: [(key: DocumentKey, document: MaybeDocument?)] = []
        for _ in 0..<(try r.count("server documents")) {
            let key = try r.documentKey()
            let document = try r.flag() ? try MaybeDocument(binary: try r.lengthPrefixed()) : nil
            documents.append((key, document))
        }
        serverDocuments = documents
        try r.finish()
    }
}

/// The failed writes of one user: batches the server rejected, kept — outside the mutation
/// queue, never sent — until the user retries or discards them. A record is written in the
/// transaction that removes its batch from the queue, and removed in the transaction that
/// queues its retry, so a write is always in exactly one of the two.
package struct FailedWriteStore {
    package let user: String

    package init(user: String) { self.user = user }

    package func add(_ record: FailedWriteRecord, in txn: PersistenceTransaction) {
        txn.put(KeySchema.failedWrite(user, record.batch.batchID), record.encoded())
    }

    package func record(_ id: BatchID, in txn: PersistenceTransaction) throws(DocError) -> FailedWriteRecord? {
        try txn.get(KeySchema.failedWrite(user, id)).map { bytes throws(DocError) in try FailedWriteRecord(decoding: bytes) }
    }

    /// Removes the record `id`; throws ``notFound(_:)`` when there is none.
    package func remove(_ id: BatchID, in txn: PersistenceTransaction) throws(DocError) {
        let key = KeySchema.failedWrite(user, id)
        guard try txn.get(key) != nil else { throw Self.notFound(id) }
        txn.delete(key)
    }

    /// The error for an id with no failed write: never made, or already retried, resolved or
    /// discarded.
    package static func notFound(_ id: BatchID) -> DocError {
        DocError(.notFound, "no failed write \(id) (it was never made, or was already retried, resolved or discarded)")
    }

    /// Every record, oldest batch first.
    package func all(in txn: PersistenceTransaction) throws(DocError) -> [FailedWriteRecord] {
        var out: [FailedWriteRecord] = []
        for entry in txn.scan(prefix: KeySchema.failedWritesPrefix(user)) {
            out.append(try FailedWriteRecord(decoding: entry.value))
        }
        if let failure = txn.failure { throw failure }
        return out
    }
}

extension MutationBatch {
    /// The documents the batch writes, each once, in the order of their first write.
    package var orderedKeys: [DocumentKey] {
        var seen = Set<DocumentKey>()
        return mutations.map(\.key).filter { seen.insert($0).inserted }
    }
}

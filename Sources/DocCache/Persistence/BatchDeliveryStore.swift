package import DocModel

/// What the network did with one queued batch so far: how often it was sent, when last, and
/// the last transient error it met (it stays queued and is sent again). Kept beside the batch
/// so that an outbox screen shows the same attempts and error after the app restarts.
package struct BatchDelivery: Sendable, Equatable {
    /// How many times the batch was sent to the server.
    package var attempts: Int
    /// When it was last sent.
    package var lastAttemptAt: Timestamp?
    /// The last transient error it met (a dropped connection, an unavailable server, …).
    package var lastError: DocError?

    package init(attempts: Int = 0, lastAttemptAt: Timestamp? = nil, lastError: DocError? = nil) {
        self.attempts = attempts
        self.lastAttemptAt = lastAttemptAt
        self.lastError = lastError
    }

    /// The storage encoding: `format, zigzag attempts, flag + timestamp, flag + error`.
    static let format: UInt8 = 1

    func encoded() -> [UInt8] {
        var w = ByteWriter(format: Self.format, capacity: 32)
        w.zigzag(Int64(attempts))
        w.flag(lastAttemptAt != nil)
        if let lastAttemptAt { w.timestamp(lastAttemptAt) }
        w.flag(lastError != nil)
        if let lastError { w.error(lastError) }
        return w.bytes
    }

    init(decoding bytes: [UInt8]) throws(DocError) {
        var r = ByteReader(bytes, record: "batch delivery")
        guard try r.byte() == Self.format else { throw r.fail("unknown batch-delivery format") }
        attempts = try r.int()
        lastAttemptAt = try r.flag() ? try r.timestamp() : nil
        lastError = try r.flag() ? try r.error() : nil
        try r.finish()
    }
}

/// The delivery records of one user's queued batches (``BatchDelivery``) and the time the
/// server last acknowledged everything that was queued. A record is removed with its batch
/// (``MutationQueue/remove(_:in:)``), so it never outlives the batch it describes.
package struct BatchDeliveryStore {
    package let user: String

    package init(user: String) { self.user = user }

    package func put(_ delivery: BatchDelivery, for id: BatchID, in txn: PersistenceTransaction) {
        txn.put(KeySchema.batchDelivery(user, id), delivery.encoded())
    }

    /// Every record, by batch id.
    package func all(in txn: PersistenceTransaction) throws(DocError) -> [BatchID: BatchDelivery] {
        var out: [BatchID: BatchDelivery] = [:]
        for entry in txn.scan(prefix: KeySchema.batchDeliveriesPrefix(user)) {
            out[try KeySchema.batchID(ofUserBatchKey: entry.key)] = try BatchDelivery(decoding: entry.value)
        }
        if let failure = txn.failure { throw failure }
        return out
    }

    /// When the server last acknowledged the last queued batch (`nil`: never).
    package func lastSyncedAt(in txn: PersistenceTransaction) throws(DocError) -> Timestamp? {
        guard let bytes = try txn.get(KeySchema.syncStatus(user)) else { return nil }
        var r = ByteReader(bytes, record: "sync status")
        guard try r.byte() == Self.syncStatusFormat else { throw r.fail("unknown sync-status format") }
        let time = try r.flag() ? try r.timestamp() : nil
        try r.finish()
        return time
    }

    package func setLastSyncedAt(_ time: Timestamp, in txn: PersistenceTransaction) {
        var w = ByteWriter(format: Self.syncStatusFormat, capacity: 16)
        w.flag(true)
        w.timestamp(time)
        txn.put(KeySchema.syncStatus(user), w.bytes)
    }

    static let syncStatusFormat: UInt8 = 1
}

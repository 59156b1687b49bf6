package import DocModel

/// What the store keeps about one attachment beside its file: size, content type, where it
/// came from, how far it got, and when it was last used (for the cache's size limit).
package struct AttachmentRecord: Sendable, Equatable {
    /// How an attachment reached this device.
    package enum Origin: UInt8, Sendable {
        /// Added here (by ``DocumentStore/Attachments/add(file:contentType:)``); uploaded by this store.
        case local = 0
        /// Downloaded from the server; the file is a cache entry and may be evicted.
        case downloaded = 1
    }

    /// How far a local attachment got (downloaded ones are always `uploaded`).
    package enum Progress: Sendable, Equatable {
        case localOnly
        case uploaded
        case failed(DocError)
    }

    package var id: AttachmentID
    package var size: Int64
    package var contentType: String
    package var createdAt: Timestamp
    package var origin: Origin
    package var progress: Progress
    package var lastUsedAt: Timestamp

    package init(id: AttachmentID, size: Int64, contentType: String, createdAt: Timestamp, origin: Origin,
                 progress: Progress, lastUsedAt: Timestamp) {
        self.id = id
        self.size = size
        self.contentType = contentType
        self.createdAt = createdAt
        self.origin = origin
        self.progress = progress
        self.lastUsedAt = lastUsedAt
    }

    /// `format, zigzag size, string contentType, timestamp createdAt, byte origin,
    /// byte progress (0 localOnly, 1 uploaded, 2 failed + error), timestamp lastUsedAt`.
    static let format: UInt8 = 1

    func encoded() -> [UInt8] {
        var w = ByteWriter(format: Self.format, capacity: 64)
        w.zigzag(size)
        w.string(contentType)
        w.timestamp(createdAt)
        w.byte(origin.rawValue)
        switch progress {
        case .localOnly: w.byte(0)
        case .uploaded: w.byte(1)
        case .failed(let error):
            w.byte(2)
            w.error(error)
        }
        w.timestamp(lastUsedAt)
        return w.bytes
    }

    init(id: AttachmentID, decoding bytes: [UInt8]) throws(DocError) {
        var r = ByteReader(bytes, record: "attachment")
        guard try r.byte() == Self.format else { throw r.fail("unknown attachment format") }
        self.id = id
        size = try r.zigzag()
        contentType = try r.string()
        createdAt = try r.timestamp()
        let rawOrigin = try r.byte()
        guard let origin = Origin(rawValue: rawOrigin) else { throw r.fail("unknown attachment origin \(rawOrigin)") }
        self.origin = origin
        switch try r.byte() {
        case 0: progress = .localOnly
        case 1: progress = .uploaded
        case 2: progress = .failed(try r.error())
        case let other: throw r.fail("unknown attachment progress \(other)")
        }
        lastUsedAt = try r.timestamp()
        try r.finish()
    }
}

/// The attachment records of a store (key space 0x26, by id). The files live in the store's
/// `attachments/` folder (``AttachmentFiles``); a record is written only after its file is
/// durable, and a file without a record is removed when the store opens.
package struct AttachmentStore {
    package init() {}

    package func put(_ record: AttachmentRecord, in txn: PersistenceTransaction) {
        txn.put(KeySchema.attachment(record.id), record.encoded())
    }

    package func remove(_ id: AttachmentID, in txn: PersistenceTransaction) {
        txn.delete(KeySchema.attachment(id))
    }

    /// Every record, by id.
    package func all(in txn: PersistenceTransaction) throws(DocError) -> [AttachmentRecord] {
        var out: [AttachmentRecord] = []
        for entry in txn.scan(prefix: KeySchema.attachmentsPrefix) {
            out.append(try AttachmentRecord(id: try KeySchema.attachmentID(entry.key), decoding: entry.value))
        }
        if let failure = txn.failure { throw failure }
        return out
    }
}

package import DocModel
internal import LevelDB

/// The local store's durable storage: one LevelDB database in one directory per tenant and
/// user, holding the remote document cache (with its indexes), the mutation queues, the
/// overlays, the target cache and the LRU bookkeeping. Key spaces: `KeySchema.swift` and
/// `docs/persistence.md`.
///
/// Every read and write goes through ``run(_:sync:_:)``: the body's writes are committed as
/// one LevelDB write batch, all or nothing. A committed transaction survives a crash of the
/// process (`kill -9`) once `run` has returned; with `sync: true` it also survives a crash of
/// the machine or a power loss.
///
/// Not `Sendable`: a `Persistence` and its components are used from one isolation domain (the
/// client's serial executor), so they need no locks. Transactions do not nest.
package final class Persistence {
    /// The version of the key spaces and record formats this build writes and reads.
    /// Schema 2 added overlays that refer to their batch (see `DocumentRecord`); schema 3 the
    /// declared composite indexes (tables 0x16–0x18), whose rows an older build would not
    /// maintain; schema 4 the overlay index (tables 0x31–0x33, ``OverlayIndex``), whose rows
    /// an older build would leave stale. An older store is read as it is (a store without an
    /// overlay index has none of its overlays indexed) and marked 4 on open, so that older
    /// builds refuse it instead of misreading its overlays or leaving its indexes stale.
    package static let schemaVersion = 4

    /// A cache size limit meaning "never collect garbage".
    package static let unlimited: Int64 = -1

    /// The store directory, as given to ``open(directory:)``.
    package let directory: String
    /// A random id generated when the store was created (sent with write batches so the
    /// server can recognize re-sent batches), and kept until the server reports that another
    /// store writes under it (``renewClientID()``).
    package private(set) var clientID: String

    /// The server's view of documents.
    package let remoteDocuments: RemoteDocumentCache
    /// The materialized local views of documents with pending writes, per user.
    package let overlays: DocumentOverlayCache
    /// The query index of the overlays.
    package let overlayIndex: OverlayIndex
    /// Targets, their matching documents and the target metadata.
    package let targets: TargetCache
    /// LRU garbage collection of the cache.
    package let lru: LRUGarbageCollector
    /// The declared composite indexes.
    package let compositeIndexes: CompositeIndexCache

    /// The LevelDB database (Sendable; the lock of the directory).
    let database: Database
    /// Compactions run off the engine's executor (``compactMutationQueuesInBackground()``).
    let compactor: BackgroundCompactor
    /// State shared with the components and transactions.
    let state: PersistenceState
    private var queues: [String: MutationQueue] = [:]
    /// The LevelDB batch transactions commit with, cleared and reused (its buffer is kept
    /// between commits, up to ``commitBatchKeptBytes``).
    private var commitBatch = NativeWriteBatch()
    /// A commit batch that grew beyond this is replaced after its commit rather than kept.
    private static let commitBatchKeptBytes = 1 << 20

    private init(directory: String, clientID: String, database: Database, state: PersistenceState) {
        self.directory = directory
        self.clientID = clientID
        self.database = database
        self.compactor = BackgroundCompactor(database: database)
        self.state = state
        compositeIndexes = CompositeIndexCache(state: state)
        remoteDocuments = RemoteDocumentCache(state: state, compositeIndexes: compositeIndexes)
        overlays = DocumentOverlayCache()
        overlayIndex = OverlayIndex(remoteDocuments: remoteDocuments)
        targets = TargetCache(state: state)
        lru = LRUGarbageCollector(remoteDocuments: remoteDocuments, targets: targets)
    }

    deinit {
        database.close()
    }

    // MARK: Opening, closing, clearing

    /// Opens the store in `directory`, creating the directory and the store if missing.
    ///
    /// On first open the schema version and a new random client id are written. A store
    /// written by a newer schema is refused (and left untouched).
    ///
    /// - Throws: `failedPrecondition` when the store is already open (by another process or
    ///   another `Persistence` in this process), was written by a newer version of doccache,
    ///   or the directory holds a LevelDB database that is not a doccache store; `dataLoss`
    ///   when its metadata is corrupt; other LevelDB failures mapped as described in
    ///   `LevelDBError.docError(directory:operation:)`, with LevelDB's message and the
    ///   directory.
    package static func open(directory: String) throws(DocError) -> Persistence {
        try FileSystem.createDirectories(directory)
        // Tables are written without compression, as Firestore's iOS cache writes them: Snappy
        // cost ~6 % of the instructions of a bulk sync (compressing every table a compaction
        // writes, decompressing every block a read misses in the cache) for tables ~1.7×
        // smaller. Blocks an earlier version compressed are still read (LevelDB records the
        // compression per block).
        let options = Options(compression: .none, bloomFilterBitsPerKey: 10, reuseIntactLog: true)
        let database = try withLevelDB(directory, "open") { () throws(LevelDBError) in
            try Database.open(path: directory, options: options)
        }
        do {
            return try open(database: database, directory: directory)
        } catch {
            database.close()
            throw error
        }
    }

    private static func open(database: Database, directory: String) throws(DocError) -> Persistence {
        let schemaKey = KeySchema.global(KeySchema.schemaVersionName)
        let clientKey = KeySchema.global(KeySchema.clientIDName)
        let stored = try withLevelDB(directory, "open") { () throws(LevelDBError) in try database.get(schemaKey) }
        var firstWrite = LevelDB.WriteBatch()
        // Whether the store gets this build's schema version: a new store, or an older schema.
        let markSchema: Bool
        if let stored {
            var r = ByteReader(stored, record: "schema version")
            let version = try r.zigzag()
            try r.finish()
            if version > Int64(schemaVersion) {
                throw DocError(
                    .failedPrecondition,
                    "the store was written by a newer version of doccache (schema \(version)); this build reads "
                        + "up to schema \(schemaVersion). Update the app, or clear the store to start over.",
                    at: directory)
            }
            guard version >= 1 else {
                throw DocError(.dataLoss, "the store has an invalid schema version \(version)", at: directory)
            }
            // Schema 1, 2 or 3 → 4: every older record reads as it is; only the mark changes.
            markSchema = version < Int64(schemaVersion)
        } else {
            let isEmpty = try withLevelDB(directory, "open") { () throws(LevelDBError) in
                var iterator = try database.entries().makeIterator()
                return try iterator.nextEntry() == nil
            }
            guard isEmpty else {
                throw DocError(
                    .failedPrecondition,
                    "the directory holds a LevelDB database that is not a doccache store (it has no schema version)",
                    at: directory)
            }
            markSchema = true
        }
        if markSchema {
            var w = ByteWriter()
            w.zigzag(Int64(schemaVersion))
            firstWrite.put(schemaKey, w.bytes)
        }
        let clientID: String
        if let raw = try withLevelDB(directory, "open", { () throws(LevelDBError) in try database.get(clientKey) }) {
            guard let id = String(validating: raw, as: UTF8.self), !id.isEmpty else {
                throw DocError(.dataLoss, "the store's client id is corrupt", at: directory)
            }
            clientID = id
        } else {
            clientID = randomUUIDString()
            firstWrite.put(clientKey, Array(clientID.utf8))
        }
        if !firstWrite.isEmpty {
            try withLevelDB(directory, "initialize") { () throws(LevelDBError) in
                try database.write(firstWrite, options: WriteOptions(sync: true))
            }
        }

        let metadata: TargetMetadata
        if let raw = try withLevelDB(directory, "open", { () throws(LevelDBError) in
            try database.get(KeySchema.targetMetadata)
        }) {
            metadata = try TargetCache.decodeMetadata(raw)
        } else {
            metadata = TargetMetadata()
        }
        var nextBatchID: BatchID = 1
        if let raw = try withLevelDB(directory, "open", { () throws(LevelDBError) in
            try database.get(KeySchema.global(KeySchema.nextBatchIDName))
        }) {
            var r = ByteReader(raw, record: "next batch id")
            nextBatchID = try r.int()
            try r.finish()
        }
        // Never below a stored batch (protects against a lost counter row).
        let highest = try highestStoredBatchID(database, directory)
        nextBatchID = max(nextBatchID, highest + 1, 1)

        let state = PersistenceState(
            directory: directory, committedMetadata: metadata, nextBatchID: nextBatchID,
            lastSequenceNumber: metadata.highestListenSequenceNumber)
        state.compositeIndexes = try CompositeIndexCache.load(from: database, directory: directory)
        return Persistence(directory: directory, clientID: clientID, database: database, state: state)
    }

    /// The highest batch id stored in any user's queue (0 when there is none): walks the
    /// users of the mutation table, one seek each.
    private static func highestStoredBatchID(_ database: Database, _ directory: String) throws(DocError) -> BatchID {
        var highest: BatchID = 0
        var lower = KeySchema.Table.mutations.prefix
        let end = KeySchema.prefixEnd(KeySchema.Table.mutations.prefix)
        while true {
            let range = KeyRange(from: lower, upTo: end)
            guard let first = try withLevelDB(directory, "open", { () throws(LevelDBError) in
                var it = try database.entries(in: range).makeIterator()
                return try it.nextEntry()
            }) else { break }
            let (user, _) = try KeySchema.decodeLeadingString(first.key)
            let userPrefix = KeySchema.mutationsPrefix(user)
            let userRange = KeyRange.prefix(userPrefix)
            if let last = try withLevelDB(directory, "open", { () throws(LevelDBError) in
                var it = try database.entries(in: userRange, reverse: true).makeIterator()
                return try it.nextEntry()
            }) {
                var d = KeyDecoder(last.key, offset: userPrefix.count)
                highest = max(highest, BatchID(try d.readInt64()))
            }
            lower = KeySchema.prefixEnd(userPrefix)
        }
        return highest
    }

    /// Closes the store, releasing the LevelDB lock. Idempotent; afterwards ``run(_:sync:_:)``
    /// throws `failedPrecondition`.
    package func close() {
        database.close()
    }

    /// Whether ``close()`` has been called.
    package var isClosed: Bool { database.isClosed }

    /// Destroys the store in `directory` (all cached documents, pending writes, targets) and
    /// removes the directory if it is then empty. Succeeds when there is no store.
    ///
    /// - Throws: `failedPrecondition` while a store has the directory open (in this process
    ///   or another); other LevelDB failures mapped with LevelDB's message.
    package static func clear(directory: String) throws(DocError) {
        guard FileSystem.exists(directory) else { return }
        try withLevelDB(directory, "clear") { () throws(LevelDBError) in
            try Database.destroy(path: directory)
        }
    }

    // MARK: Client id

    /// Replaces the client id with a new random one, durably (synced), and returns it. For a
    /// store whose id the server has seen used for other batches (a copy of this store, or a
    /// restored backup of it, wrote under it): the batches of the queue, none answered under
    /// the new id, are then sent under it.
    package func renewClientID() throws(DocError) -> String {
        let id = randomUUIDString()
        try run("Renew the client id", sync: true) { txn throws(DocError) in
            txn.put(KeySchema.global(KeySchema.clientIDName), Array(id.utf8))
        }
        clientID = id
        return id
    }

    // MARK: Transactions

    /// Runs `body` in a transaction and commits its writes as one LevelDB write batch.
    ///
    /// Reads inside the body see the transaction's own writes. When the body returns, every
    /// write is committed at once (all or nothing); when it throws, nothing is written and
    /// its error is rethrown. `sync: false` (the default) makes the commit durable against a
    /// crash of the process; `sync: true` also against a crash of the machine (an `fsync`).
    ///
    /// - Parameter label: what the transaction does, for diagnostics.
    /// - Throws: the body's error; a read error met by a lazy scan; `failedPrecondition` when
    ///   the store is closed or a transaction is already running; LevelDB write failures.
    package func run<T>(
        _ label: String, sync: Bool = false, _ body: (PersistenceTransaction) throws(DocError) -> T
    ) throws(DocError) -> T {
        guard !database.isClosed else {
            throw DocError(.failedPrecondition, "the store is closed (transaction \"\(label)\")", at: directory)
        }
        guard !state.inTransaction else {
            throw DocError(
                .failedPrecondition, "transaction \"\(label)\" started inside another transaction; they do not nest",
                at: directory)
        }
        state.inTransaction = true
        let txn = PersistenceTransaction(label: label, database: database, state: state)
        defer {
            txn.finish()
            state.inTransaction = false
        }
        let result = try body(txn)
        if let failure = txn.failure { throw failure }
        let (hasWrites, metadata) = txn.prepareCommit()
        guard hasWrites else { return result }
        commitBatch.clear()
        txn.appendWrites(to: &commitBatch)
        defer { if commitBatch.byteCount > Self.commitBatchKeptBytes { commitBatch = NativeWriteBatch() } }
        try withLevelDB(directory, "commit \"\(label)\" to") { () throws(LevelDBError) in
            try state.faults?.check(.commit, label)
            try database.write(commitBatch, options: WriteOptions(sync: sync))
        }
        if let metadata { state.committedMetadata = metadata }
        return result
    }

    /// Failures to inject into this store's reads and commits, for tests of the paths that
    /// meet a failing disk; `nil` (the default) injects none.
    package var faults: StorageFaults? {
        get { state.faults }
        set { state.faults = newValue }
    }

    // MARK: Components

    /// The mutation queue of `user` (the empty string for an unauthenticated user). Queues of
    /// different users are independent; batch ids are unique across all of them.
    package func mutationQueue(for user: String) -> MutationQueue {
        if let q = queues[user] { return q }
        let q = MutationQueue(user: user, state: state)
        queues[user] = q
        return q
    }

    // MARK: Size and maintenance

    /// The approximate size of the store on disk, in bytes: LevelDB's estimate of the file
    /// space used by every key space. Writes still only in LevelDB's log and memory table are
    /// not counted until they are flushed (LevelDB flushes every few MiB, and ``compact()``
    /// flushes), which is precise enough for garbage-collection thresholds.
    package func approximateSizeInBytes() throws(DocError) -> Int64 {
        try approximateSizes().values.reduce(0, +)
    }

    /// ``approximateSizeInBytes()`` per key space (table name → bytes).
    package func approximateSizes() throws(DocError) -> [String: Int64] {
        try Self.approximateSizes(of: database, directory: directory, faults: state.faults)
    }

    /// Compacts the whole store: flushes recent writes to table files and discards deleted
    /// and overwritten data. Blocks until done.
    package func compact() throws(DocError) {
        try withLevelDB(directory, "compact") { () throws(LevelDBError) in try database.compact() }
    }

    /// Compacts, in the background, the tables a synced batch leaves deletion markers in:
    /// the mutation queues (batches, document → batch rows, deliveries, failed writes,
    /// attachments) and the overlays (tables 0x20 up to 0x40, every user). Returns at once.
    package func compactMutationQueuesInBackground() {
        compactor.compact(from: KeySchema.Table.mutations.prefix, to: KeySchema.Table.targets.prefix)
    }

    /// The highest listen sequence number used so far (the LRU clock).
    package var highestListenSequenceNumber: ListenSequenceNumber { state.lastSequenceNumber }
}

/// State shared by the persistence components and their transactions: counters kept in
/// memory and persisted by the transactions that advance them, and the committed target
/// metadata.
final class PersistenceState {
    /// The store directory (for error messages).
    let directory: String
    /// The target metadata as last committed.
    var committedMetadata: TargetMetadata
    /// The next mutation batch id to hand out (≥ the persisted counter, ≥ every stored id + 1).
    var nextBatchID: BatchID
    /// The last listen sequence number handed out.
    var lastSequenceNumber: ListenSequenceNumber
    /// Whether a transaction is running (they do not nest).
    var inTransaction = false
    /// Failures to inject (tests only; `nil`: none).
    var faults: StorageFaults?
    /// The declared composite indexes (maintained with every remote document).
    var compositeIndexes: [StoredCompositeIndex] = []
    /// Where the backfill of an incomplete composite index stopped (its last collection-group
    /// row), by index id; lost at close, when the backfill starts over (rows are idempotent).
    var backfillCursors: [String: [UInt8]] = [:]

    /// Creates the state from what the store holds at open.
    init(directory: String, committedMetadata: TargetMetadata, nextBatchID: BatchID, lastSequenceNumber: ListenSequenceNumber) {
        self.directory = directory
        self.committedMetadata = committedMetadata
        self.nextBatchID = nextBatchID
        self.lastSequenceNumber = lastSequenceNumber
    }
}

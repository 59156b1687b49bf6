package import DocModel
package import LevelDB

/// A read-write transaction over the store, handed to the body of ``Persistence/run(_:sync:_:)``.
///
/// Writes (``put(_:_:)``, ``delete(_:)``) are buffered in memory and committed together as one
/// LevelDB write batch when the body returns; if the body throws, they are dropped. Reads
/// (``get(_:)``, ``scan(_:reverse:)``) see the committed store with the transaction's own
/// buffered writes applied on top.
///
/// Reads need no LevelDB snapshot to be consistent: the store has a single writer (one
/// ``Persistence`` holds the directory's lock, it is used from one isolation domain and its
/// transactions do not nest), so the committed data cannot change while a transaction runs.
/// Skipping the snapshot saves its creation and release on every transaction.
///
/// A read error met during a lazy scan (which cannot throw through `Sequence`) ends that scan
/// early and fails the whole transaction: ``Persistence/run(_:sync:_:)`` then throws it and
/// commits nothing, so no caller acts on a silently truncated scan.
///
/// Not `Sendable`: a transaction belongs to the body it was handed to and must not be kept
/// after the body returns.
package final class PersistenceTransaction {
    /// What the transaction is for (diagnostics).
    package let label: String
    /// The store's database.
    let database: Database
    /// The store state (counters, committed metadata).
    let state: PersistenceState

    /// The writes made so far, committed when the body returns.
    private var buffer = WriteBuffer()
    /// The first read error met by a lazy scan; fails the transaction.
    private(set) var failure: DocError?
    private var finished = false

    // Per-transaction state committed with the writes.
    private var metadataStorage: TargetMetadata?
    private var sequenceNumberStorage: ListenSequenceNumber?
    /// ``sequenceNumber`` encoded as a sentinel value, once per transaction.
    private var sentinelValue: [UInt8]?
    private var persistBatchCounter = false

    /// Starts a transaction (``Persistence/run(_:sync:_:)`` does).
    init(label: String, database: Database, state: PersistenceState) {
        self.label = label
        self.database = database
        self.state = state
    }

    /// The directory of the store (for error messages).
    var directory: String { state.directory }

    // MARK: Reads and writes

    /// The value under `key`: the transaction's own write if it made one, else the stored one.
    package func get(_ key: [UInt8]) throws(DocError) -> [UInt8]? {
        checkActive()
        if let w = buffer.latest(for: key) {
            switch w {
            case .put(let v): return v
            case .delete: return nil
            }
        }
        let options = ReadOptions()
        return try withLevelDB(directory, "read") { () throws(LevelDBError) in
            try state.faults?.check(.read, label)
            return try database.get(key, options: options)
        }
    }

    /// Stores `value` under `key` when the transaction commits.
    package func put(_ key: [UInt8], _ value: [UInt8]) {
        checkActive()
        buffer.append(key, .put(value))
    }

    /// Removes `key` when the transaction commits.
    package func delete(_ key: [UInt8]) {
        checkActive()
        buffer.append(key, .delete)
    }

    /// The entries in `range` as the transaction sees them (stored entries merged with its
    /// own buffered puts and deletes), ascending or, with `reverse`, descending. Lazy: a
    /// LevelDB cursor is opened on the first `next()` and released when iteration ends or
    /// the iterator goes away, so stopping early is cheap. Buffered writes made after the
    /// iteration started are not seen by it.
    package func scan(_ range: KeyRange, reverse: Bool = false) -> TransactionScan {
        checkActive()
        return TransactionScan(transaction: self, range: range, reverse: reverse)
    }

    /// The entries whose keys start with `prefix` (see ``scan(_:reverse:)``).
    package func scan(prefix: [UInt8], reverse: Bool = false) -> TransactionScan {
        scan(KeyRange(from: prefix, upTo: KeySchema.prefixEnd(prefix)), reverse: reverse)
    }

    /// The number of keys that start with `prefix`, as the transaction sees them. Without
    /// buffered writes in the range, LevelDB's keys are counted in place (no key or value is
    /// copied).
    package func countKeys(withPrefix prefix: [UInt8]) throws(DocError) -> Int {
        checkActive()
        let end = KeySchema.prefixEnd(prefix)
        let range = KeyRange(from: prefix, upTo: end)
        guard bufferedWrites(in: range).isEmpty else {
            var count = 0
            for _ in scan(range) { count += 1 }
            if let failure { throw failure }
            return count
        }
        return try withLevelDB(directory, "count") { () throws(LevelDBError) -> Int in
            try state.faults?.check(.read, label)
            let cursor = try database.cursor(options: ReadOptions())
            try cursor.seek(to: prefix)
            return try cursor.countKeys(before: end.isEmpty ? nil : end)
        }
    }

    /// Whether any key starts with `prefix` (one seek).
    package func containsKey(withPrefix prefix: [UInt8]) -> Bool {
        var iterator = scan(prefix: prefix).makeIterator()
        return iterator.next() != nil
    }

    /// The number of keys written so far.
    package var bufferedWriteCount: Int {
        buffer.distinctKeyCount()
    }

    // MARK: Transaction state

    /// The listen sequence number of this transaction: allocated on first use, greater than
    /// every number used before it (in this process or, as it is persisted in the target
    /// metadata when the transaction commits, any earlier one). Stamps LRU sentinels and
    /// targets used in the transaction.
    package var sequenceNumber: ListenSequenceNumber {
        if let n = sequenceNumberStorage { return n }
        state.lastSequenceNumber += 1
        sequenceNumberStorage = state.lastSequenceNumber
        return state.lastSequenceNumber
    }

    /// Marks `key` as used now for the LRU garbage collector: its sentinel gets this
    /// transaction's sequence number. Every component that writes a document's sentinel (the
    /// remote document cache, the mutation queue, the target cache, the collector) goes
    /// through here.
    package func stampSentinel(_ key: DocumentKey) {
        let value: [UInt8]
        if let sentinelValue {
            value = sentinelValue
        } else {
            value = LRUGarbageCollector.encodeSequenceNumber(sequenceNumber)
            sentinelValue = value
        }
        put(KeySchema.sentinel(key), value)
    }

    /// The target metadata as this transaction sees it (changes are committed with it).
    var targetMetadata: TargetMetadata {
        get { metadataStorage ?? state.committedMetadata }
        set { metadataStorage = newValue }
    }

    /// Allocates the next mutation batch id (in memory: an id is not handed out twice by this
    /// process, even if the transaction fails).
    func allocateBatchID() -> BatchID {
        let id = state.nextBatchID
        state.nextBatchID += 1
        return id
    }

    /// Makes the commit store the batch-id counter. Called when a batch is removed: the ids
    /// of stored batches are covered by the queue itself (the store resumes above the highest
    /// one), so the counter only needs writing when a batch leaves the queue, which keeps it
    /// off the local-write path. Ids of batches never committed may be handed out again
    /// after a restart; they were never stored or sent.
    func persistBatchIDCounter() {
        persistBatchCounter = true
    }

    // MARK: Internals

    /// Traps when the transaction is used after its body returned (a programming error).
    func checkActive() {
        precondition(!finished, "the transaction \"\(label)\" was used after its body returned")
    }

    /// Records a read error met by a lazy scan; the first one fails the transaction.
    func record(_ error: DocError) {
        if failure == nil { failure = error }
    }

    /// The buffered writes whose keys are in `range`, ascending.
    func bufferedWrites(in range: KeyRange) -> [([UInt8], BufferedWrite)] {
        buffer.writes(in: range)
    }

    /// Adds the writes of the per-transaction state (target metadata, the batch-id counter).
    /// Returns whether there is anything to commit, and the target metadata the commit
    /// stores (`nil` when unchanged).
    func prepareCommit() -> (hasWrites: Bool, metadata: TargetMetadata?) {
        var metadata = metadataStorage
        if let n = sequenceNumberStorage {
            var m = metadata ?? state.committedMetadata
            if n > m.highestListenSequenceNumber {
                m.highestListenSequenceNumber = n
                metadata = m
            }
        }
        if let m = metadata, m != state.committedMetadata {
            put(KeySchema.targetMetadata, TargetCache.encode(m))
        } else {
            metadata = nil
        }
        if persistBatchCounter {
            var w = ByteWriter()
            w.zigzag(Int64(state.nextBatchID))
            put(KeySchema.global(KeySchema.nextBatchIDName), w.bytes)
        }
        return (!buffer.isEmpty, metadata)
    }

    /// Adds the buffered writes to the batch that commits them (after ``prepareCommit()``),
    /// in the order made: LevelDB applies a batch in order, so the later write to a key wins.
    func appendWrites(to batch: inout NativeWriteBatch) {
        for (key, write) in buffer.log { batch.add(key, write) }
    }

    /// Ends the transaction; later use traps.
    func finish() {
        finished = true
    }
}

/// The merged view of a key range inside a transaction: stored entries overlaid with the
/// transaction's buffered puts and deletes. See ``PersistenceTransaction/scan(_:reverse:)``.
package struct TransactionScan: Sequence {
    /// The transaction whose view is scanned.
    let transaction: PersistenceTransaction
    /// The keys visited.
    package let range: KeyRange
    /// Whether keys are visited in descending order.
    package let reverse: Bool

    /// An iterator that opens its cursor on its first `next()`.
    package func makeIterator() -> Iterator {
        Iterator(scan: self)
    }

    /// Walks a ``TransactionScan``: a LevelDB cursor and the buffered writes, merged.
    package struct Iterator: IteratorProtocol {
        private let scan: TransactionScan
        private var started = false
        private var done = false
        private var cursor: Cursor?
        /// The current stored entry not yet returned.
        private var stored: Entry?
        private var buffered: [([UInt8], BufferedWrite)] = []
        private var bufferedIndex = 0

        /// Creates an iterator over `scan`.
        init(scan: TransactionScan) {
            self.scan = scan
        }

        /// The next entry, or `nil` at the end of the range or after a read error (which the
        /// transaction records and throws when it ends).
        package mutating func next() -> Entry? {
            if done { return nil }
            do {
                if !started { try start() }
                while true {
                    let b: ([UInt8], BufferedWrite)? = bufferedIndex < buffered.count
                        ? buffered[scan.reverse ? buffered.count - 1 - bufferedIndex : bufferedIndex] : nil
                    switch (stored, b) {
                    case (nil, nil):
                        end()
                        return nil
                    case (let s?, nil):
                        try advanceStored()
                        return s
                    case (nil, let w?):
                        bufferedIndex += 1
                        if case .put(let v) = w.1 { return Entry(key: w.0, value: v) }
                    case (let s?, let w?):
                        var c = compareKeys(s.key, w.0)
                        if scan.reverse { c = -c }
                        if c < 0 {
                            try advanceStored()
                            return s
                        }
                        if c == 0 { try advanceStored() }
                        bufferedIndex += 1
                        if case .put(let v) = w.1 { return Entry(key: w.0, value: v) }
                    }
                }
            } catch {
                scan.transaction.record(error)
                end()
                return nil
            }
        }

        private mutating func end() {
            done = true
            cursor = nil
            stored = nil
            buffered = []
        }

        private mutating func start() throws(DocError) {
            started = true
            let txn = scan.transaction
            txn.checkActive()
            buffered = txn.bufferedWrites(in: scan.range)
            let options = ReadOptions()
            let range = scan.range
            let reverse = scan.reverse
            let c = try withLevelDB(txn.directory, "scan") { () throws(LevelDBError) -> Cursor in
                try txn.state.faults?.check(.read, txn.label)
                let c = try txn.database.cursor(options: options)
                if !reverse {
                    if let lower = range.lowerBound { try c.seek(to: lower) } else { try c.seekToFirst() }
                } else {
                    switch range.upperBound {
                    case nil:
                        try c.seekToLast()
                    case .excluding(let upper)?:
                        try c.seek(to: upper)
                        if c.isValid { try c.previous() } else { try c.seekToLast() }
                    case .including(let upper)?:
                        try c.seek(to: upper)
                        if c.isValid {
                            if try c.key() != upper { try c.previous() }
                        } else {
                            try c.seekToLast()
                        }
                    }
                }
                return c
            }
            cursor = c
            try readStored()
        }

        /// Reads the entry under the cursor into `stored` (nil when out of range).
        private mutating func readStored() throws(DocError) {
            guard let c = cursor else {
                stored = nil
                return
            }
            let range = scan.range
            let reverse = scan.reverse
            let entry = try withLevelDB(scan.transaction.directory, "scan") { () throws(LevelDBError) in try c.entry() }
            guard let entry else {
                stored = nil
                cursor = nil
                return
            }
            let inRange: Bool
            if reverse {
                inRange = range.lowerBound.map { compareKeys(entry.key, $0) >= 0 } ?? true
            } else {
                switch range.upperBound {
                case nil: inRange = true
                case .excluding(let u)?: inRange = compareKeys(entry.key, u) < 0
                case .including(let u)?: inRange = compareKeys(entry.key, u) <= 0
                }
            }
            if inRange {
                stored = entry
            } else {
                stored = nil
                cursor = nil
            }
        }

        private mutating func advanceStored() throws(DocError) {
            guard let c = cursor else {
                stored = nil
                return
            }
            let reverse = scan.reverse
            try withLevelDB(scan.transaction.directory, "scan") { () throws(LevelDBError) in
                if reverse { try c.previous() } else { try c.next() }
            }
            try readStored()
        }
    }
}

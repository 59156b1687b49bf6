/// The entries of a ``Database`` in a ``KeyRange``, in ascending or descending key order: the
/// result of ``Database/entries(in:reverse:options:)`` and
/// ``Database/entries(withPrefix:reverse:options:)``.
///
/// A lazy, multi-pass sequence: each iterator opens its own ``Cursor``, which reads the database
/// as it was when the iterator started (or as of ``ReadOptions/snapshot``), and closes it when
/// the range is exhausted or the iterator goes away.
///
/// ## Errors during iteration
/// Swift's `Sequence` cannot throw, so a `for entry in entries` loop ends early if reading
/// fails midway (the database is closed by another task, or LevelDB reports corruption). When
/// that matters, use ``collect()``, or an iterator's throwing ``Iterator/nextEntry()``; a plain
/// iterator also keeps the failure in ``Iterator/error``.
public struct Entries: Sequence, Sendable {
    /// The database read.
    public let database: Database
    /// The keys visited.
    public let range: KeyRange
    /// Whether keys are visited in descending order.
    public let reverse: Bool
    /// How the database is read.
    public let options: ReadOptions

    init(database: Database, range: KeyRange, reverse: Bool, options: ReadOptions) {
        self.database = database
        self.range = range
        self.reverse = reverse
        self.options = options
    }

    /// An iterator that opens its own cursor on its first `next()`.
    public func makeIterator() -> Iterator {
        Iterator(entries: self)
    }

    /// Reads every entry into an array, throwing any error met on the way.
    public func collect() throws(LevelDBError) -> [Entry] {
        var iterator = makeIterator()
        var result: [Entry] = []
        while let entry = try iterator.nextEntry() {
            result.append(entry)
        }
        return result
    }

    /// Walks the entries of an ``Entries`` sequence with a cursor.
    public struct Iterator: IteratorProtocol {
        private let entries: Entries
        private var cursor: Cursor?
        private var finished = false
        /// The error that ended the iteration early, if any.
        public private(set) var error: LevelDBError?

        init(entries: Entries) {
            self.entries = entries
        }

        /// The next entry, or `nil` at the end of the range or after an error (kept in
        /// ``error``).
        public mutating func next() -> Entry? {
            do {
                return try nextEntry()
            } catch {
                self.error = error
                return nil
            }
        }

        /// The next entry, or `nil` at the end of the range; throws if reading fails.
        /// After the end or an error, returns `nil`.
        public mutating func nextEntry() throws(LevelDBError) -> Entry? {
            if finished { return nil }
            do {
                let cursor: Cursor
                if let existing = self.cursor {
                    cursor = existing
                    if entries.reverse { try cursor.previous() } else { try cursor.next() }
                } else {
                    cursor = try entries.database.cursor(options: entries.options)
                    self.cursor = cursor
                    try position(cursor)
                }
                guard let entry = try cursor.entry(), isInRange(entry.key) else {
                    finish()
                    return nil
                }
                return entry
            } catch {
                finish()
                throw error
            }
        }

        /// Ends the iteration and releases the cursor (and its LevelDB iterator) at once.
        private mutating func finish() {
            finished = true
            cursor = nil
        }

        /// Whether `key`, reached by moving in the iteration's direction, is still in range.
        private func isInRange(_ key: [UInt8]) -> Bool {
            entries.reverse ? entries.range.isAboveLowerBound(key) : entries.range.isBelowUpperBound(key)
        }

        /// Puts the cursor at the first entry of the iteration (or makes it invalid).
        private func position(_ cursor: Cursor) throws(LevelDBError) {
            let range = entries.range
            if !entries.reverse {
                if let lower = range.lowerBound {
                    try cursor.seek(to: lower)
                } else {
                    try cursor.seekToFirst()
                }
                return
            }
            // Reverse: the last key within the upper bound.
            switch range.upperBound {
            case nil:
                try cursor.seekToLast()
            case .excluding(let upper)?:
                try cursor.seek(to: upper)
                // At the first key ≥ upper, which is excluded: step back. Past the end: every
                // key is below upper.
                if cursor.isValid { try cursor.previous() } else { try cursor.seekToLast() }
            case .including(let upper)?:
                try cursor.seek(to: upper)
                if cursor.isValid {
                    if try cursor.key() != upper { try cursor.previous() }
                } else {
                    try cursor.seekToLast()
                }
            }
        }
    }
}

package import LevelDB

/// A buffered write of a transaction: the value to store, or a deletion.
enum BufferedWrite {
    case put([UInt8])
    case delete
}

extension NativeWriteBatch {
    /// Adds `write` of `key`.
    mutating func add(_ key: [UInt8], _ write: BufferedWrite) {
        switch write {
        case .put(let value): put(key, value)
        case .delete: delete(key)
        }
    }
}

/// The writes a ``PersistenceTransaction`` buffers until it commits, readable by key and by
/// key range (a later write to a key wins).
///
/// Every write is appended to a log in the order made, and the commit writes the log as it
/// is (LevelDB applies a batch in order, so the later write to a key wins there too). A
/// transaction that only writes (a local write, the usual case) never sorts or compares a
/// key.
///
/// Reads look the log up through sorted runs of log positions, built when a read comes: the
/// writes made since the last read are sorted into a new run (one position per key, its
/// latest), and runs of similar size are merged (the later write of a key present in both
/// is kept), so that run sizes at least double from the last run to the first. A key's
/// latest write is the highest position found for it in any run. A read costs a binary
/// search per run, and interleaving writes with reads costs O(log n) comparisons per key,
/// never hashing: the acknowledgement of a batch makes ~30 writes between its ~7 reads.
struct WriteBuffer {
    /// Every write in the order made.
    private(set) var log: [(key: [UInt8], write: BufferedWrite)] = []
    /// Positions in `log` sorted by key, each key once per run; the runs cover
    /// `log[..<sortedCount]`.
    private var runs: [[Int]] = []
    /// How many writes of the log the runs cover.
    private var sortedCount = 0

    /// Whether nothing was written.
    var isEmpty: Bool { log.isEmpty }

    /// Appends a write.
    mutating func append(_ key: [UInt8], _ write: BufferedWrite) {
        // A local write makes three rows: room for them in one allocation.
        if log.capacity == 0 { log.reserveCapacity(4) }
        log.append((key, write))
    }

    /// The latest write of `key`, or `nil` when the transaction did not write it.
    mutating func latest(for key: [UInt8]) -> BufferedWrite? {
        sortNewWrites()
        var found = -1
        for run in runs {
            let i = Self.firstIndex(in: run, of: log) { compareKeys($0, key) >= 0 }
            if i < run.count, run[i] > found, compareKeys(log[run[i]].key, key) == 0 { found = run[i] }
        }
        return found >= 0 ? log[found].write : nil
    }

    /// The latest write of every key in `range`, ascending by key.
    mutating func writes(in range: KeyRange) -> [([UInt8], BufferedWrite)] {
        sortNewWrites()
        var positions: [Int] = []
        var contributingRuns = 0
        for run in runs {
            let lower = range.lowerBound.map { bound in Self.firstIndex(in: run, of: log) { compareKeys($0, bound) >= 0 } } ?? 0
            let upper: Int
            switch range.upperBound {
            case nil: upper = run.count
            case .excluding(let bound)?: upper = Self.firstIndex(in: run, of: log) { compareKeys($0, bound) >= 0 }
            case .including(let bound)?: upper = Self.firstIndex(in: run, of: log) { compareKeys($0, bound) > 0 }
            }
            guard lower < upper else { continue }
            positions.append(contentsOf: run[lower..<upper])
            contributingRuns += 1
        }
        if contributingRuns > 1 { positions = latestPerKey(positions) }
        return positions.map { (log[$0].key, log[$0].write) }
    }

    /// The number of distinct keys written.
    mutating func distinctKeyCount() -> Int {
        sortNewWrites()
        return latestPerKey(runs.flatMap { $0 }).count
    }

    // MARK: Runs

    /// Sorts the writes made since the last read into a run and merges runs of similar size.
    private mutating func sortNewWrites() {
        guard sortedCount < log.count else { return }
        var run = latestPerKey(Array(sortedCount..<log.count))
        sortedCount = log.count
        while let last = runs.last, last.count <= 2 * run.count {
            run = merge(runs.removeLast(), run)
        }
        runs.append(run)
    }

    /// `positions` sorted by key, with only the highest position of each key.
    private func latestPerKey(_ positions: [Int]) -> [Int] {
        let sorted = positions.sorted { a, b in
            let c = compareKeys(log[a].key, log[b].key)
            return c != 0 ? c < 0 : a < b
        }
        var out: [Int] = []
        out.reserveCapacity(sorted.count)
        for p in sorted {
            if let last = out.last, compareKeys(log[last].key, log[p].key) == 0 {
                out[out.count - 1] = p
            } else {
                out.append(p)
            }
        }
        return out
    }

    /// Two runs merged into one; a key in both keeps its higher position.
    private func merge(_ a: [Int], _ b: [Int]) -> [Int] {
        var out: [Int] = []
        out.reserveCapacity(a.count + b.count)
        var i = 0, j = 0
        while i < a.count, j < b.count {
            let c = compareKeys(log[a[i]].key, log[b[j]].key)
            if c < 0 {
                out.append(a[i]); i += 1
            } else if c > 0 {
                out.append(b[j]); j += 1
            } else {
                out.append(max(a[i], b[j])); i += 1; j += 1
            }
        }
        out.append(contentsOf: a[i...])
        out.append(contentsOf: b[j...])
        return out
    }

    /// The index of the first position in `run` whose key satisfies `isAtOrAfter` (the keys
    /// for which it is false come first).
    private static func firstIndex(
        in run: [Int], of log: [(key: [UInt8], write: BufferedWrite)], where isAtOrAfter: ([UInt8]) -> Bool
    ) -> Int {
        var low = 0, high = run.count
        while low < high {
            let mid = (low + high) / 2
            if isAtOrAfter(log[run[mid]].key) { high = mid } else { low = mid + 1 }
        }
        return low
    }
}

internal import Dispatch
internal import LevelDB
internal import Synchronization

/// Compacts key ranges of the store on a queue of its own, off the engine's executor, so that
/// the caller goes on at once.
///
/// Why: LevelDB keeps a deletion marker per deleted key until a compaction drops it, and a seek
/// that lands before a run of markers steps over every one of them to find the next live key.
/// A synced run of queued writes deletes four rows per batch (the batch, its document → batch
/// rows, its delivery record, its overlay; and an indexed overlay's index rows), and every
/// later query seeks into those tables (its overlays) or just before them (a composite index's
/// unindexed rows): after 10,000 synced writes, one such seek took 5.7 ms instead of 2 µs until
/// LevelDB happened to compact there.
/// Compacting the range once the run is over drops the markers.
final class BackgroundCompactor: Sendable {
    private let database: Database
    private let queue = DispatchQueue(label: "doccache.compaction", qos: .utility)
    private let requested = Atomic<Int>(0)
    private let completed = Atomic<Int>(0)

    init(database: Database) {
        self.database = database
    }

    /// Compacts the keys from `start` to `end` (inclusive) in the background. Closing the
    /// store waits for a compaction under way (closing waits for the calls in flight); one
    /// that starts after the close finds the database closed and does nothing.
    func compact(from start: [UInt8], to end: [UInt8]) {
        requested.add(1, ordering: .relaxed)
        queue.async { self.run(from: start, to: end) }
    }

    private func run(from start: [UInt8], to end: [UInt8]) {
        do {
            try database.compact(from: start, to: end)
        } catch {
            // A compaction reports no failure but a closed database: nothing left to do.
            // (A failing disk shows in LevelDB's next read or write, which reports it.)
            assert(error.code == .closed, "unexpected compaction failure: \(error)")
        }
        completed.add(1, ordering: .relaxed)
    }

    /// The compactions asked for, and those finished, so far.
    var counts: (requested: Int, completed: Int) {
        (requested.load(ordering: .relaxed), completed.load(ordering: .relaxed))
    }
}

import DocModel

/// What the network streams observed, kept in memory for the public API: the error that last
/// interrupted syncing (``DocumentStore/lastSyncError``) and, per pending batch, how often it
/// was sent and the last transient error it met (``PendingWrite/attempts``,
/// ``PendingWrite/lastError``). Nothing here is persisted: it starts empty when a store opens.
///
/// Used on the client core's actor only.
final class SyncActivity {
    /// The two streams, which fail and recover independently.
    enum Stream: Hashable { case watch, write }

    private var streamErrors: [Stream: DocError] = [:]
    private var attempts: [BatchID: Int] = [:]
    private var batchErrors: [BatchID: DocError] = [:]

    /// The error that most recently interrupted a stream that has not connected since (the
    /// watch stream's first).
    var lastSyncError: DocError? { streamErrors[.watch] ?? streamErrors[.write] }

    /// The stream connected: its earlier error no longer applies.
    func streamOpened(_ stream: Stream) { streamErrors[stream] = nil }

    /// The stream failed with `error`.
    func streamFailed(_ stream: Stream, _ error: DocError) { streamErrors[stream] = error }

    /// The batch was sent (again).
    func batchSent(_ id: BatchID) { attempts[id, default: 0] += 1 }

    /// The batches were in flight when their stream failed with a transient `error` (they
    /// are sent again).
    func batchesFailed(_ ids: some Sequence<BatchID>, _ error: DocError) {
        for id in ids { batchErrors[id] = error }
    }

    /// The batch left the queue (acknowledged, rejected or reverted).
    func forget(_ id: BatchID) {
        attempts[id] = nil
        batchErrors[id] = nil
    }

    /// How often the batch was sent since the store opened.
    func attempts(of id: BatchID) -> Int { attempts[id] ?? 0 }

    /// The last transient error the batch met since the store opened.
    func lastError(of id: BatchID) -> DocError? { batchErrors[id] }

    /// Drops what is known about batches not in `live` (they left the queue).
    func retain(only live: Set<BatchID>) {
        attempts = attempts.filter { live.contains($0.key) }
        batchErrors = batchErrors.filter { live.contains($0.key) }
    }
}

import DocModel

/// What the network streams observed, for the public API: the error that last interrupted
/// syncing (``DocumentStore/lastSyncError``), the batches on their way to the server now, and
/// per queued batch how often it was sent, when last, and the last transient error it met
/// (``PendingWrite/attempts``, ``PendingWrite/lastError``).
///
/// The per-batch records are kept beside the batches in the store (``BatchDeliveryStore``):
/// ``persist`` is called with the records of batches as they are first sent
/// (``recordFirstSends()``), and of batches whose connection failed or ended before they were
/// answered (the store also does so for the batches in flight when it closes), and
/// ``load(_:)`` fills them in when the store opens, so an outbox screen shows the same attempts
/// after a restart. Stream errors and
/// the batches in flight describe the current connection only and start empty.
///
/// Used on the client core's actor only.
final class SyncActivity {
    /// The two streams, which fail and recover independently.
    enum Stream: Hashable { case watch, write }

    private var streamErrors: [Stream: DocError] = [:]
    private var deliveries: [BatchID: BatchDelivery] = [:]
    /// Batches sent on the current write connection and not answered yet.
    private(set) var sending: Set<BatchID> = []
    /// Batches sent for the first time since the last ``recordFirstSends()``.
    private var firstSends: [BatchID] = []
    private let clock: () -> Timestamp

    /// Called with the records that changed, to store them (on the same actor, synchronously).
    var persist: (([(BatchID, BatchDelivery)]) -> Void)?
    /// Called when a stream's error changes (the store's sync status reads it).
    var onChange: (() -> Void)?
    /// Called when a stream fails (for the store's log).
    var onStreamFailed: ((Stream, DocError) -> Void)?

    init(clock: @escaping () -> Timestamp = { .now }) {
        self.clock = clock
    }

    /// The records stored for the queued batches (at open).
    func load(_ stored: [BatchID: BatchDelivery]) {
        deliveries = stored
    }

    /// The error that most recently interrupted a stream that has not connected since (the
    /// watch stream's first).
    var lastSyncError: DocError? { streamErrors[.watch] ?? streamErrors[.write] }

    /// The write stream's error, while it has not connected since.
    var writeStreamError: DocError? { streamErrors[.write] }

    /// The stream connected: its earlier error no longer applies.
    func streamOpened(_ stream: Stream) {
        guard streamErrors.removeValue(forKey: stream) != nil else { return }
        onChange?()
    }

    /// The stream's connection ended with `error`, and was open (`wasOpen`: its `hello`
    /// answered) and idle (`wasIdle`: nothing to send or listen to) when it did. Two ends
    /// interrupt no syncing and are not reported (``lastSyncError``, the sync status):
    /// - an idle stream's: nothing was being synced, and the stream connects again when
    ///   there is something to do (an error of that connection is reported then);
    /// - the end of a working connection by `unauthenticated`: its token expired (the
    ///   server ends a connection then), and the stream connects again at once with a fresh
    ///   one; a token the server refuses at that `hello` is reported.
    /// Any other end is a failure (``streamFailed(_:_:)``).
    func streamClosed(_ stream: Stream, _ error: DocError, wasOpen: Bool, wasIdle: Bool) {
        guard wasIdle || (wasOpen && error.code == .unauthenticated) else {
            streamFailed(stream, error)
            return
        }
        onStreamFailed?(stream, error)
        streamOpened(stream)
    }

    /// The stream failed with `error`.
    func streamFailed(_ stream: Stream, _ error: DocError) {
        streamErrors[stream] = error
        onStreamFailed?(stream, error)
        onChange?()
    }

    /// The batch was sent (again). A first send is stored before the frame leaves
    /// (``recordFirstSends()``); later ones when their connection fails or ends with the batch
    /// unanswered (``batchesFailed(_:_:)``, ``batchesStopped(_:)``). An answered batch's record
    /// leaves with it.
    func batchSent(_ id: BatchID) {
        var delivery = deliveries[id] ?? BatchDelivery()
        delivery.attempts += 1
        delivery.lastAttemptAt = clock()
        deliveries[id] = delivery
        sending.insert(id)
        if delivery.attempts == 1 { firstSends.append(id) }
    }

    /// Stores, in one write, the records of the batches sent for the first time since the last
    /// call, before their frames leave: a store killed with a batch in flight (its answer lost
    /// with the process) still knows after the restart that it sent it. The server may then
    /// answer it as processed before, its outcome pruned, and the store must tell that from
    /// another store writing under its client id (ClientCore.resolveBatchIDConflict).
    func recordFirstSends() {
        guard !firstSends.isEmpty else { return }
        let sent = firstSends.map { ($0, deliveries[$0] ?? BatchDelivery()) }
        firstSends.removeAll()
        persist?(sent)
    }

    /// The batches were in flight when their stream failed with a transient `error` (they
    /// are sent again).
    func batchesFailed(_ ids: some Sequence<BatchID>, _ error: DocError) {
        var changed: [(BatchID, BatchDelivery)] = []
        for id in ids {
            sending.remove(id)
            var delivery = deliveries[id] ?? BatchDelivery()
            delivery.lastError = error
            deliveries[id] = delivery
            changed.append((id, delivery))
        }
        guard !changed.isEmpty else { return }
        persist?(changed)
    }

    /// The connection carrying these batches ended (they are sent again on the next one).
    func batchesStopped(_ ids: some Sequence<BatchID>) {
        var stopped: [(BatchID, BatchDelivery)] = []
        for id in ids where sending.remove(id) != nil { stopped.append((id, deliveries[id] ?? BatchDelivery())) }
        if !stopped.isEmpty { persist?(stopped) }
    }

    /// The batch left the queue (acknowledged, rejected or reverted); its stored record left
    /// with it.
    func forget(_ id: BatchID) {
        deliveries[id] = nil
        sending.remove(id)
    }

    /// How often the batch was sent.
    func attempts(of id: BatchID) -> Int { deliveries[id]?.attempts ?? 0 }

    /// What is known of the batch's delivery.
    func delivery(of id: BatchID) -> BatchDelivery { deliveries[id] ?? BatchDelivery() }

}

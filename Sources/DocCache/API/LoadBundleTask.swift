import Synchronization

/// Where a bundle load stands (Firestore's `LoadBundleTaskState`).
public enum LoadBundleTaskState: String, Sendable, Hashable, CustomStringConvertible {
    /// The bundle is being read; nothing is applied yet.
    case running
    /// The bundle is in the cache (or was skipped: loaded before with an equal or later create time).
    case success
    /// The bundle was refused or could not be stored; nothing was applied.
    case error

    public var description: String { rawValue }
}

/// A bundle load's progress (Firestore's `LoadBundleTaskProgress`). `bytesLoaded` and
/// `totalBytes` count the elements after the bundle's metadata, as the metadata's own total does.
public struct LoadBundleTaskProgress: Sendable, Hashable, CustomStringConvertible {
    /// The documents read so far.
    public var documentsLoaded: Int
    /// The documents the bundle's metadata announces.
    public var totalDocuments: Int
    /// The bytes read so far, after the metadata.
    public var bytesLoaded: Int64
    /// The bytes the bundle's metadata announces, after the metadata.
    public var totalBytes: Int64
    /// Where the load stands.
    public var taskState: LoadBundleTaskState

    /// A progress report with these counts.
    public init(documentsLoaded: Int, totalDocuments: Int, bytesLoaded: Int64, totalBytes: Int64, taskState: LoadBundleTaskState) {
        self.documentsLoaded = documentsLoaded
        self.totalDocuments = totalDocuments
        self.bytesLoaded = bytesLoaded
        self.totalBytes = totalBytes
        self.taskState = taskState
    }

    public var description: String {
        "\(taskState) \(documentsLoaded)/\(totalDocuments) documents \(bytesLoaded)/\(totalBytes) bytes"
    }
}

/// A bundle being loaded by `DocumentStore.loadBundle(_:)`: its progress as it
/// goes, and its outcome.
///
/// ```swift
/// let task = store.loadBundle(bytes)
/// for await progress in task.progressUpdates() { print(progress.documentsLoaded, "/", progress.totalDocuments) }
/// let final = try await task.value   // throws the reason when the bundle was refused
/// ```
///
/// Progress is reported when the metadata has been read (`running`, nothing loaded), then as
/// documents are read — after every document, or for a bundle of more than 100 documents
/// after every hundredth of them —, and once at the end (`success` with everything loaded, or
/// `error`). The counts never go down. Every stream from ``progressUpdates()`` starts with
/// every update made so far, so one asked for late misses nothing, and ends after the last.
public final class LoadBundleTask: Sendable {
    private struct State {
        var outcome: Result<LoadBundleTaskProgress, DocError>?
        var waiters: [CheckedContinuation<Result<LoadBundleTaskProgress, DocError>, Never>] = []
    }

    private let state = Mutex(State())
    /// Every progress update so far, replayed to each new stream.
    private let updates = EventBroadcast<LoadBundleTaskProgress>(replayingAll: ())

    init() {}

    /// The latest progress; `nil` until the bundle's metadata has been read.
    public var progress: LoadBundleTaskProgress? { updates.latest }

    /// Every progress update, from the first (replayed to a stream asked for late) to the
    /// final `success` or `error`, after which the stream ends.
    public func progressUpdates() -> AsyncStream<LoadBundleTaskProgress> { updates.stream() }

    /// The final progress (`success`), once the bundle is loaded; throws the reason it was
    /// refused (`invalidArgument` for a malformed bundle, naming the element and its byte
    /// offset) or could not be stored.
    public var value: LoadBundleTaskProgress {
        get async throws(DocError) {
            let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<LoadBundleTaskProgress, DocError>, Never>) in
                let ready = state.withLock { state -> Result<LoadBundleTaskProgress, DocError>? in
                    if let outcome = state.outcome { return outcome }
                    state.waiters.append(continuation)
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
            return try result.get()
        }
    }

    // MARK: - Reporting (the loader)

    /// Reports progress while running (nothing once the task has finished).
    func update(_ progress: LoadBundleTaskProgress) {
        updates.yield(progress)
    }

    /// Ends the task: `final` is reported as the last progress, and ``value`` returns it or
    /// throws `error`.
    func finish(_ final: LoadBundleTaskProgress, error: DocError? = nil) {
        let outcome: Result<LoadBundleTaskProgress, DocError> = error.map { .failure($0) } ?? .success(final)
        let waiters = state.withLock { state -> [CheckedContinuation<Result<LoadBundleTaskProgress, DocError>, Never>]? in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer { state.waiters = [] }
            return state.waiters
        }
        guard let waiters else { return }
        updates.yield(final)
        updates.finish()
        for waiter in waiters { waiter.resume(returning: outcome) }
    }
}

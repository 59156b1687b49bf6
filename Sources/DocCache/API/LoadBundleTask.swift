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
    public var documentsLoaded: Int
    public var totalDocuments: Int
    public var bytesLoaded: Int64
    public var totalBytes: Int64
    public var taskState: LoadBundleTaskState

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
        var updates: [LoadBundleTaskProgress] = []
        var observers: [Int: AsyncStream<LoadBundleTaskProgress>.Continuation] = [:]
        var nextID = 0
        var outcome: Result<LoadBundleTaskProgress, DocError>?
        var waiters: [CheckedContinuation<Result<LoadBundleTaskProgress, DocError>, Never>] = []
    }

    private let state = Mutex(State())

    init() {}

    /// The latest progress; `nil` until the bundle's metadata has been read.
    public var progress: LoadBundleTaskProgress? { state.withLock { $0.updates.last } }

    /// Every progress update, from the first (replayed to a stream asked for late) to the
    /// final `success` or `error`, after which the stream ends.
    public func progressUpdates() -> AsyncStream<LoadBundleTaskProgress> {
        let (stream, continuation) = AsyncStream.makeStream(of: LoadBundleTaskProgress.self)
        let id = state.withLock { state -> Int? in
            for update in state.updates { continuation.yield(update) }
            guard state.outcome == nil else { return nil }
            state.nextID += 1
            state.observers[state.nextID] = continuation
            return state.nextID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.observers.removeValue(forKey: id) }
        }
        return stream
    }

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

    /// Reports progress while running.
    func update(_ progress: LoadBundleTaskProgress) {
        let observers = state.withLock { state -> [AsyncStream<LoadBundleTaskProgress>.Continuation] in
            guard state.outcome == nil else { return [] }
            state.updates.append(progress)
            return Array(state.observers.values)
        }
        for observer in observers { observer.yield(progress) }
    }

    /// Ends the task: `final` is reported as the last progress, and ``value`` returns it or
    /// throws `error`.
    func finish(_ final: LoadBundleTaskProgress, error: DocError? = nil) {
        let (observers, waiters, outcome) = state.withLock { state -> ([AsyncStream<LoadBundleTaskProgress>.Continuation], [CheckedContinuation<Result<LoadBundleTaskProgress, DocError>, Never>], Result<LoadBundleTaskProgress, DocError>?) in
            guard state.outcome == nil else { return ([], [], nil) }
            let outcome: Result<LoadBundleTaskProgress, DocError> = error.map { .failure($0) } ?? .success(final)
            state.outcome = outcome
            state.updates.append(final)
            defer {
                state.observers = [:]
                state.waiters = []
            }
            return (Array(state.observers.values), state.waiters, outcome)
        }
        guard let outcome else { return }
        for observer in observers {
            observer.yield(final)
            observer.finish()
        }
        for waiter in waiters { waiter.resume(returning: outcome) }
    }
}

import Dispatch
public import DocModel
import Synchronization

/// A query over a collection or collection group. Builders return new queries; nothing runs
/// until you read or listen.
///
/// Listeners must be bounded: a query listener needs `limit(to:)` or `limit(toLast:)` no
/// larger than ``StoreSettings/maxListenLimit`` (default 1,000); an unbounded listen is refused
/// with `invalidArgument`. One-time reads from the cache (``getDocuments(source:)``) may be
/// unbounded; reads from the server are listens too, and need the same bound.
public struct DocumentQuery: Sendable {
    /// The store the query reads from and listens on.
    public let store: DocumentStore
    /// The query in the data model's terms.
    public let query: Query

    init(store: DocumentStore, query: Query) {
        self.store = store
        self.query = query
    }

    // MARK: - Reads

    // The builders, `getDocuments(source:)`, the listeners: QueryBuilder.swift.

    /// Runs the query once (``QueryBuilder/getDocuments(source:)`` says what each source does).
    func runOnce(source: Source) async throws(DocError) -> QuerySnapshot {
        let fromServer: Bool
        switch source {
        case .server:
            try checkBounded()
            fromServer = true
        case .default:
            let bounded = (try? checkBounded()) != nil
            fromServer = bounded ? await store.core.isOnline : false
        case .cache:
            fromServer = false
        }
        if fromServer { return QuerySnapshot(try await serverSnapshot(), includeMetadataChanges: false) }
        return QuerySnapshot(try await store.core.runQuery(query), includeMetadataChanges: false)
    }

    /// A snapshot the server has just confirmed (``ClientCore/serverSnapshot(_:)``).
    func serverSnapshot() async throws(DocError) -> ViewSnapshot {
        try await store.core.serverSnapshot(query).snapshot
    }

    // MARK: - Listeners

    /// Refuses listeners on queries that are not bounded by a limit within the store's cap.
    func checkBounded() throws(DocError) {
        let cap = store.settings.maxListenLimit
        guard let limit = query.limit else {
            throw DocError(.invalidArgument,
                "unbounded listener on \(query.collectionGroup.map { "collection group \($0)" } ?? query.path.description): query listeners need limit(to:) or limit(toLast:) of at most \(cap)")
        }
        guard limit <= cap else {
            throw DocError(.invalidArgument, "listener limit \(limit) is above the store's maxListenLimit of \(cap)")
        }
    }

    /// Registers a listener; its events reach `deliver` on `queue` (the user's callbacks, so a
    /// slow callback never holds the engine up) or, with `nil`, on the engine itself (the
    /// async sequences, whose delivery is a non-blocking `yield`). Either way nothing is
    /// delivered once the registration is removed: the flag is checked where `deliver` runs.
    func register(
        includeMetadataChanges: Bool, source: ListenSource = .default, scope: ListenerScope?, bounded: Bool,
        on queue: DispatchQueue? = nil,
        _ deliver: @escaping @Sendable (Result<ViewSnapshot, DocError>) -> Void
    ) async throws(DocError) -> ListenerRegistration {
        if bounded { try checkBounded() }
        let flag = RemovalFlag()
        let send = flag.gate(on: queue, deliver)
        let id = try await store.core.addListener(
            query: query, options: ListenOptions(includeMetadataChanges: includeMetadataChanges, source: source),
            scopeID: scope?.id, deliver: send)
        let core = store.core
        return ListenerRegistration(flag: flag) { await core.removeListener(id) }
    }

    func stream<Element: Sendable>(
        includeMetadataChanges: Bool, source: ListenSource = .default, scope: ListenerScope?, bounded: Bool,
        _ transform: @escaping @Sendable (ViewSnapshot) -> Element
    ) -> AsyncThrowingStream<Element, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task { () -> ListenerRegistration? in
                do {
                    let registration = try await register(
                        includeMetadataChanges: includeMetadataChanges, source: source, scope: scope, bounded: bounded
                    ) { result in
                        switch result {
                        case .success(let snapshot): continuation.yield(transform(snapshot))
                        case .failure(let error): continuation.finish(throwing: error)
                        }
                    }
                    return registration
                } catch {
                    continuation.finish(throwing: error)
                    return nil
                }
            }
            continuation.onTermination = { _ in
                Task { await task.value?.remove() }
            }
        }
    }
}

/// A value delivered once, awaited once.
final class OneShot<T: Sendable>: Sendable {
    private let state = Mutex<(T?, CheckedContinuation<T, Never>?)>((nil, nil))

    func fulfil(_ value: T) {
        let waiter = state.withLock { s -> CheckedContinuation<T, Never>? in
            guard s.0 == nil else { return nil }
            s.0 = value
            defer { s.1 = nil }
            return s.1
        }
        waiter?.resume(returning: value)
    }

    var value: T {
        get async {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { s -> T? in
                    if let v = s.0 { return v }
                    s.1 = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }
}

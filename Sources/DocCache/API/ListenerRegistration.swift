import Dispatch
import Synchronization

/// A registered snapshot listener. ``remove()`` stops it: no callback starts after it returns
/// (one already running on the store's ``DocumentStore/callbackQueue`` finishes), including
/// events that were already queued for delivery.
public final class ListenerRegistration: Sendable {
    let flag: RemovalFlag
    /// Unregisters the listener from the engine.
    private let unregister: @Sendable () async -> Void

    init(flag: RemovalFlag, unregister: @escaping @Sendable () async -> Void) {
        self.flag = flag
        self.unregister = unregister
    }

    /// Stops the listener. Safe to call more than once.
    public func remove() {
        guard flag.markRemoved() else { return }
        let unregister = self.unregister
        Task { await unregister() }
    }
}

/// Set once a listener is removed; checked before every delivery so that nothing reaches the
/// user after `remove()` returned, even if an event was already on its way.
final class RemovalFlag: Sendable {
    private let state = Mutex(false)

    var isRemoved: Bool { state.withLock { $0 } }

    /// `deliver` behind this flag: on `queue` when given (the user's callbacks), else where it
    /// is called; either way nothing is delivered once the listener is removed, even an event
    /// already on its way (the flag is checked where `deliver` runs).
    func gate<Event: Sendable>(
        on queue: DispatchQueue?, _ deliver: @escaping @Sendable (Event) -> Void
    ) -> @Sendable (Event) -> Void {
        guard let queue else {
            return { [self] event in
                guard !isRemoved else { return }
                deliver(event)
            }
        }
        return { [self] event in
            queue.async {
                guard !self.isRemoved else { return }
                deliver(event)
            }
        }
    }

    /// Marks the listener removed; true the first time.
    func markRemoved() -> Bool {
        state.withLock { removed in
            defer { removed = true }
            return !removed
        }
    }
}

/// Listeners attached to a scope can be stopped and restarted together.
///
/// Call ``detach()`` when the app goes to the background (listeners stop; nothing is
/// delivered) and ``reattach()`` when it comes back: every listener immediately gets its
/// cached snapshot (`isFromCache == true`), then resumes syncing from its stored resume token.
public final class ListenerScope: Sendable {
    let store: DocumentStore
    let id: Int
    private static let nextID = Mutex(0)

    init(store: DocumentStore) {
        self.store = store
        self.id = Self.nextID.withLock { $0 += 1; return $0 }
    }

    /// Stops every listener of the scope, keeping them for ``reattach()``.
    public func detach() async { await store.core.detachScope(id) }

    /// Restarts every listener of the scope, cached snapshot first.
    public func reattach() async throws(DocError) { try await store.core.reattachScope(id) }

    /// Removes every listener of the scope for good.
    public func removeAll() async { await store.core.removeScope(id) }
}

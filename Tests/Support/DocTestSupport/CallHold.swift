import Synchronization

/// Holds one call of a wrapped dependency until the test lets it go: the moment between two
/// steps of the code under test (a commit's reads and its store commit, an attachment check
/// and the commit that relies on it), made as long as the test needs to act in it.
///
/// ```swift
/// let hold = CallHold<AttachmentID>()
/// // in the wrapper, where the call is to be held:  await hold.pass(id)
/// let (reached, release) = hold.holdNext(where: { $0 == id })
/// for await _ in reached { break }   // the call is held now
/// release.yield()                    // and goes on
/// ```
public final class CallHold<Subject: Sendable>: Sendable {
    private struct Armed: Sendable {
        let matches: @Sendable (Subject) -> Bool
        let reached: AsyncStream<Void>.Continuation
        let release: AsyncStream<Void>
    }

    private let armed = Mutex<Armed?>(nil)

    public init() {}

    /// Holds the next call whose subject `matches` (every call by default); returns a stream
    /// that yields once that call is held, and the continuation that lets it go on.
    public func holdNext(
        where matches: @escaping @Sendable (Subject) -> Bool = { _ in true }
    ) -> (reached: AsyncStream<Void>, release: AsyncStream<Void>.Continuation) {
        let (reached, reach) = AsyncStream<Void>.makeStream()
        let (release, letGo) = AsyncStream<Void>.makeStream()
        armed.withLock { $0 = Armed(matches: matches, reached: reach, release: release) }
        return (reached, letGo)
    }

    /// Called by the wrapper at the point to hold: returns at once, unless this call is the
    /// one held (the first matching one since ``holdNext(where:)``), which returns when it is
    /// let go.
    public func pass(_ subject: Subject) async {
        let held = armed.withLock { armed -> Armed? in
            guard let current = armed, current.matches(subject) else { return nil }
            armed = nil
            return current
        }
        guard let held else { return }
        held.reached.yield()
        for await _ in held.release { break }
    }
}

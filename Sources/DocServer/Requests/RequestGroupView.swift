internal import DocModel
internal import Synchronization

/// The documents the handlers of a request group see: what the group's earlier requests wrote
/// (their writes applied as a local view, in order), else the stored document.
///
/// A stored document is read from the store once per group and kept; every one read (other
/// than the group's own request documents, which the requests' status patches condition on)
/// is verified, at the version read, when the group commits — so the group's decisions stand
/// only if nothing they rest on changed. Documents seen only as an earlier request wrote them
/// are not verified: the group's own writes are what they show.
///
/// Requests of a group are decided one after the other; the lock only keeps the view sound
/// should a handler read concurrently.
final class RequestGroupView: Sendable {
    private struct State {
        /// Documents written by requests already in the group, as those writes left them.
        var written: [DocumentKey: MaybeDocument] = [:]
        /// Documents read from the store (nil: absent), request documents included.
        var stored: [DocumentKey: Document?] = [:]
        /// The stored documents to verify, in the order first read.
        var verified: [DocumentKey] = []

        /// The document if the group knows it (written or stored), as `.some` (`.some(nil)`:
        /// absent); nil when it must be read from the store.
        func known(_ key: DocumentKey) -> Document?? {
            if let written = written[key] { return .some(written.document) }
            if let stored = stored[key] { return .some(stored) }
            return nil
        }
    }

    private let state: Mutex<State>
    private let read: @Sendable ([DocumentKey]) async throws(DocError) -> DocumentsRead
    /// The local write time of the overlay's documents (placeholders of server timestamps).
    private let localWriteTime: Timestamp

    /// A view over the store `read` reads, knowing the group's request documents as read
    /// (`requests`: absent ones omitted).
    init(read: @escaping @Sendable ([DocumentKey]) async throws(DocError) -> DocumentsRead,
         requests: [DocumentKey: Document], localWriteTime: Timestamp) {
        var state = State()
        for (key, document) in requests { state.stored[key] = .some(document) }
        self.state = Mutex(state)
        self.read = read
        self.localWriteTime = localWriteTime
    }

    /// The document as the next request of the group sees it; nil when it does not exist
    /// (a deleted document is a tombstone, as in the store).
    func document(_ key: DocumentKey) async throws(DocError) -> Document? {
        if let known = state.withLock({ $0.known(key) }) { return known }
        let loaded = try await read([key]).documents[key]
        return state.withLock { state in
            // A concurrent read of the same key got there first: keep the one version.
            if let known = state.known(key) { return known }
            state.stored[key] = .some(loaded)
            state.verified.append(key)
            return loaded
        }
    }

    /// The documents written by requests already in the group.
    var changed: Set<DocumentKey> { state.withLock { Set($0.written.keys) } }

    /// How many stored documents the group's commit verifies.
    var verificationCount: Int { state.withLock { $0.verified.count } }

    /// The verifications, in the order the documents were first read: each at the version
    /// read, or its absence.
    var verifications: [Mutation] {
        state.withLock { state in
            state.verified.map { RequestProcessor.verification($0, (state.stored[$0] ?? nil)?.version) }
        }
    }

    /// A point to return to with ``rollBack(to:)``.
    var mark: Int { verificationCount }

    /// Forgets the stored documents first read after `mark` (a request left out of the group).
    func rollBack(to mark: Int) {
        state.withLock { state in
            for key in state.verified[mark...] { state.stored[key] = nil }
            state.verified.removeSubrange(mark...)
        }
    }

    /// Reads the documents that `writes` change but do not replace (updates, deletes) and that
    /// the group has not seen yet: their result depends on them, so they are read (and
    /// verified) like a handler's reads.
    func readBases(of writes: [Mutation]) async throws(DocError) {
        for write in writes where !Self.replaces(write) {
            _ = try await document(write.key)
        }
    }

    /// Applies a request's writes (as converted for its commit) on top of the view: later
    /// requests of the group see them.
    func apply(_ writes: [Mutation]) {
        state.withLock { state in
            for write in writes {
                let base: MaybeDocument? = state.written[write.key] ?? (state.stored[write.key] ?? nil).map { .document($0) }
                // A write whose precondition fails here (an update of a missing document) will
                // fail the group's commit too; until then the document counts as absent.
                state.written[write.key] = write.applyToLocalView(base, localWriteTime: localWriteTime)
                    ?? .noDocument(NoDocument(key: write.key, version: .none, hasLocalMutations: true))
            }
        }
    }

    /// Whether `write` leaves the same document whatever was there (a set without transforms
    /// or precondition).
    private static func replaces(_ write: Mutation) -> Bool {
        guard case .set = write.kind else { return false }
        return write.fieldTransforms.isEmpty && write.precondition == .none
    }
}

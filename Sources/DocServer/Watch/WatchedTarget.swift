internal import DocModel

/// A target a connection listens to, as the server tracks it: the target and its current
/// results (the *window*: the documents matching it, in target order, at most `limit`).
///
/// The window is what the client has been told, so every change is computed as the
/// difference between the old and the new window.
struct WatchedTarget: Sendable {
    let id: Int32
    let target: Target
    /// The document of a document target (``Target/isDocumentQuery``); `nil` for a query.
    let documentKey: DocumentKey?
    /// `target`'s identity (``Target/canonicalID``, which `==` compares) and its hash,
    /// computed once: a fan-out looks targets up by them on every commit.
    let canonicalID: String
    let targetHash: Int
    private(set) var window: [Document]
    private(set) var keys: Set<DocumentKey>

    init(id: Int32, target: Target, window: [Document]) {
        self.id = id
        self.target = target
        self.documentKey = target.isDocumentQuery ? try? DocumentKey(path: target.path) : nil
        self.canonicalID = target.canonicalID
        self.targetHash = canonicalID.hashValue
        self.window = window
        self.keys = Set(window.map(\.key))
    }

    var limit: Int? { target.limit }

    /// Whether documents beyond the window may exist (the window holds `limit` documents).
    var isFull: Bool { limit.map { window.count >= $0 } ?? false }

    /// Whether a document at `key` can ever belong to the target (its path; filters aside).
    func pathMatches(_ key: DocumentKey) -> Bool {
        Self.pathMatches(key, target: target)
    }

    static func pathMatches(_ key: DocumentKey, target: Target) -> Bool {
        if let group = target.collectionGroup {
            return key.collectionGroup == group && target.path.isPrefix(of: key.path)
        }
        if target.path.count % 2 == 0 { return key.path == target.path }
        return key.isIn(collection: target.path)
    }

    /// How a commit changes the window.
    enum Update {
        /// The commit does not touch the target.
        case unchanged
        /// The new window.
        case window([Document])
        /// A full window lost documents (or one moved past its end): the window must be
        /// re-read from the store.
        case needsRefill
    }

    /// The window after the documents in `changes` took their new states.
    func update(with changes: [DocumentKey: MaybeDocument]) -> Update {
        var touched = false
        var entering: [Document] = []
        for (key, state) in changes where pathMatches(key) {
            if keys.contains(key) { touched = true }
            if let document = state.document, target.matches(document) {
                touched = true
                entering.append(document)
            }
        }
        guard touched else { return .unchanged }
        var next = window.filter { changes[$0.key] == nil }
        next.append(contentsOf: entering)
        next.sort { target.compare($0, $1) < 0 }
        if let limit {
            if isFull, let boundary = window.last {
                // Documents beyond a full window are unknown here, but all sort after its old
                // last document: only what sorts up to that boundary is certain.
                let certain = next.prefix { target.compare($0, boundary) <= 0 }
                guard certain.count >= limit else { return .needsRefill }
                next = Array(certain.prefix(limit))
            } else if next.count > limit {
                next.removeSubrange(limit...)
            }
        }
        return .window(next)
    }

    /// Replaces the window.
    mutating func setWindow(_ documents: [Document]) {
        window = documents
        keys = Set(documents.map(\.key))
    }

    /// Replaces the window with one whose keys are known (`keys` must be `documents`' keys):
    /// targets given the same new window share its storage.
    mutating func setWindow(_ documents: [Document], keys: Set<DocumentKey>) {
        assert(keys.count == documents.count, "the keys of another window")
        window = documents
        self.keys = keys
    }
}

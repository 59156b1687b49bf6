package import DocModel

/// What the watch stream has said about one target since the last remote event: the
/// aggregator's per-target bookkeeping (Firestore's `TargetState`).
///
/// A target with outstanding requests (a watch or unwatch the server has not yet answered)
/// is *pending*: changes for it are ignored until the server catches up.
package struct TargetState {
    /// How a document changed for the target since the last remote event.
    package enum DocumentChangeKind: Sendable, Hashable {
        /// The document entered the target.
        case added
        /// The document was in the target and changed.
        case modified
        /// The document left the target (or was deleted).
        case removed
    }

    /// Watch and unwatch requests sent for the target and not yet answered.
    package private(set) var outstandingResponses = 0
    /// The newest resume token the server sent for the target (empty if none yet).
    package private(set) var resumeToken: ResumeToken = []
    /// Whether the server said the target is current.
    package private(set) var current = false
    /// Whether anything changed since the last remote event. A new state starts with changes,
    /// so that a freshly added or reset target always shows up in the next event.
    package private(set) var hasPendingChanges = true
    /// Document changes since the last remote event.
    package private(set) var documentChanges: [DocumentKey: DocumentChangeKind] = [:]

    /// An empty state: no responses outstanding, no token, not current.
    package init() {}

    /// Whether the server still owes answers to requests for this target; its changes are
    /// then ignored.
    package var isPending: Bool { outstandingResponses != 0 }

    /// The accumulated changes as a ``TargetChange`` for a remote event.
    package var targetChange: TargetChange {
        var change = TargetChange(resumeToken: resumeToken, current: current)
        for (key, kind) in documentChanges {
            switch kind {
            case .added: change.addedDocuments.insert(key)
            case .modified: change.modifiedDocuments.insert(key)
            case .removed: change.removedDocuments.insert(key)
            }
        }
        return change
    }

    /// Keeps `token` as the newest resume token; an empty token changes nothing.
    package mutating func updateResumeToken(_ token: ResumeToken) {
        guard !token.isEmpty else { return }
        hasPendingChanges = true
        resumeToken = token
    }

    /// Forgets the document changes once they went into a remote event (the resume token
    /// and `current` are kept).
    package mutating func clearPendingChanges() {
        hasPendingChanges = false
        documentChanges.removeAll()
    }

    /// A watch or unwatch request for the target was sent.
    package mutating func recordPendingTargetRequest() {
        outstandingResponses += 1
    }

    /// The server answered one request (an add or a remove).
    package mutating func recordTargetResponse() {
        outstandingResponses -= 1
    }

    /// The server said the target is current.
    package mutating func markCurrent() {
        hasPendingChanges = true
        current = true
    }

    /// Records how `key` changed for the target.
    package mutating func addDocumentChange(_ key: DocumentKey, _ kind: DocumentChangeKind) {
        hasPendingChanges = true
        documentChanges[key] = kind
    }

    /// Forgets a change of `key` (it entered and left the target within one event).
    package mutating func removeDocumentChange(_ key: DocumentKey) {
        hasPendingChanges = true
        documentChanges[key] = nil
    }
}

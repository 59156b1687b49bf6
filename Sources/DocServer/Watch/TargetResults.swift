internal import DocModel
internal import DocProtocol

/// The documents a newly added target is sent: all of its results, or — when it resumes
/// from a token — only what may differ from what the client has.
enum TargetResults {
    /// Every result as a document change (initial listen, or after a `reset`).
    static func all(_ documents: [Document], targetID: Int32) -> [ServerMessage] {
        documents.map { .documentChange(.init(document: $0, targetIDs: [targetID])) }
    }

    /// The messages that bring a client from the target's state at the token's version to the
    /// current one.
    ///
    /// - Parameters:
    ///   - changed: the latest state of every document of the target's path that changed
    ///     after the token's version (from the change log).
    ///   - extended: the target's current results, read with the limit raised by
    ///     `changed.count`, so that documents just past the window are known.
    /// - Returns: the messages and the new window (the first `limit` of `extended`).
    ///
    /// Changed documents are sent (entered, changed, or left the target). Unchanged documents
    /// matter only for limited targets, whose window may have moved: with `C` changed
    /// documents, an unchanged document preceded (now, and so also then) by `u` unchanged
    /// documents was in the old window if `u + C < limit`, and may have been otherwise; those
    /// in the new window that may not have been are sent, those past it that may have been
    /// are removed. The client ends with exactly the new window; re-sending a document it has
    /// is harmless.
    static func resume(
        targetID: Int32, limit: Int?, changed: [DocumentKey: MaybeDocument], extended: [Document],
        version: SnapshotVersion
    ) -> (messages: [ServerMessage], window: [Document]) {
        let window = limit.map { Array(extended.prefix($0)) } ?? extended
        let windowKeys = Set(window.map(\.key))
        var collected = ConnectionChanges()
        var unchangedBefore = 0
        for document in window {
            if changed[document.key] != nil {
                collected.add(document, changed: true, to: targetID)
            } else {
                if let limit, unchangedBefore + changed.count >= limit {
                    collected.add(document, changed: false, to: targetID)
                }
                unchangedBefore += 1
            }
        }
        for (key, state) in changed.sorted(by: { $0.key < $1.key }) where !windowKeys.contains(key) {
            collected.remove(key, newState: state, from: targetID)
        }
        if let limit {
            for document in extended.dropFirst(limit) where changed[document.key] == nil {
                if unchangedBefore < limit {
                    collected.remove(document.key, newState: nil, from: targetID)
                }
                unchangedBefore += 1
            }
        }
        return (collected.messages(version: version), window)
    }
}

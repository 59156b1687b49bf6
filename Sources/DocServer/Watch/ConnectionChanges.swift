internal import DocModel
internal import DocProtocol

/// Collects, for one connection, how documents moved in and out of its targets during one
/// commit (or one resume), and turns that into watch messages: one message per document,
/// naming every target it entered (or changed in) and every target it left.
struct ConnectionChanges {
    private struct Entry {
        /// The document's new state when it changed, or its contents when it only entered
        /// a target.
        var state: MaybeDocument?
        var changed: Bool
        var targetIDs: [Int32] = []
        var removedTargetIDs: [Int32] = []
    }

    private var entries: [DocumentKey: Entry] = [:]
    private var order: [DocumentKey] = []

    var isEmpty: Bool { order.isEmpty }

    private mutating func entry(_ key: DocumentKey, _ update: (inout Entry) -> Void, new: @autoclosure () -> Entry) {
        if entries[key] == nil {
            entries[key] = new()
            order.append(key)
        }
        update(&entries[key]!)
    }

    /// `document` is in target `targetID` now (it entered, or it changed while in it).
    mutating func add(_ document: Document, changed: Bool, to targetID: Int32) {
        entry(document.key, { e in
            e.targetIDs.append(targetID)
            if changed { e.changed = true; e.state = .document(document) }
            if e.state == nil { e.state = .document(document) }
        }, new: Entry(state: .document(document), changed: changed))
    }

    /// The document at `key` left target `targetID`; `newState` is its new state when it
    /// changed (a document, or a `NoDocument` for a delete), `nil` when it did not.
    mutating func remove(_ key: DocumentKey, newState: MaybeDocument?, from targetID: Int32) {
        entry(key, { e in
            e.removedTargetIDs.append(targetID)
            if let newState, !e.changed { e.changed = true; e.state = newState }
        }, new: Entry(state: newState, changed: newState != nil))
    }

    /// The messages, in the order documents were first mentioned.
    func messages(version: SnapshotVersion) -> [ServerMessage] {
        order.map { key in
            let e = entries[key]!
            switch e.state {
            case .document(let document)?:
                return .documentChange(.init(document: document, targetIDs: e.targetIDs, removedTargetIDs: e.removedTargetIDs))
            case .noDocument(let deleted)?:
                return .documentDelete(.init(key: key, version: deleted.version, removedTargetIDs: e.removedTargetIDs))
            case .unknown?, nil:
                return .documentRemove(.init(key: key, version: version, removedTargetIDs: e.removedTargetIDs))
            }
        }
    }
}

internal import DocModel
internal import DocProtocol

/// What one commit does to a hub's targets, worked out once per distinct target and once per
/// distinct set of changed targets, and handed to every connection that has them.
///
/// A target's new window and the documents that moved depend only on the target, its old
/// window and the commit: connections listening to equal targets with equal windows (the hub
/// keeps every window at the version it delivered, so equal targets normally have equal
/// windows; they are compared, not assumed) share one ``TargetUpdate``. A connection's frames
/// depend only on which of its targets changed (their ids) and how: connections with the same
/// ``ChangeSet`` receive the same frames, each encoded once for all of them
/// (``OutboundFrame/shared(_:)``), followed by the commit's global snapshot, one frame for every
/// connection. What differs per connection (its rules decisions, a target removed by them) is
/// still worked out per connection, by the hub.
struct FanOutPlan {
    let changes: [DocumentKey: MaybeDocument]
    let version: SnapshotVersion
    /// The global snapshot at the commit's version that ends every connection's frames.
    private let snapshotMessage: ServerMessage
    /// Its frame, encoded when a connection first needs it (``snapshot()``).
    private var snapshotFrame: OutboundFrame?

    /// A target's new window and how documents moved, from one old window.
    struct TargetUpdate {
        let oldWindow: [Document]
        let window: [Document]
        let keys: Set<DocumentKey>
        /// Documents of the new window that changed or entered, in window order.
        let entered: [(document: Document, changed: Bool)]
        /// Documents of the old window that left it, in old window order, with their new state
        /// when they changed (`nil`: pushed out, unchanged).
        let left: [(key: DocumentKey, newState: MaybeDocument?)]
    }

    /// A changed target of a connection: its id and its update.
    struct Touched: Hashable {
        let targetID: Int32
        let update: Int
    }

    /// The changed targets of one connection, in target id order (the first one inline: most
    /// connections have one).
    struct ChangeSet: Hashable {
        private(set) var first: Touched?
        private(set) var rest: [Touched] = []

        var isEmpty: Bool { first == nil }

        mutating func append(_ touched: Touched) {
            if first == nil { first = touched } else { rest.append(touched) }
        }

        func forEach(_ body: (Touched) -> Void) {
            guard let first else { return }
            body(first)
            rest.forEach(body)
        }
    }

    /// How a commit affects one target of a connection.
    enum Step {
        case unchanged
        /// The target's update, an index into ``updates``.
        case updated(Int)
        /// The window must be read again from the store (then ``refilled(_:window:)``).
        case needsRefill
    }

    private(set) var updates: [TargetUpdate] = []
    private var updatesByTarget: [TargetKey: [Int]] = [:]
    private var framesByChangeSet: [ChangeSet: [OutboundFrame]] = [:]

    init(changes: [DocumentKey: MaybeDocument], version: SnapshotVersion, snapshot: ServerMessage) {
        self.changes = changes
        self.version = version
        self.snapshotMessage = snapshot
    }

    /// The global snapshot's frame, shared by every connection; encoded once, by the first
    /// connection that receives frames (a commit that reaches no connection encodes nothing).
    mutating func snapshot() -> OutboundFrame {
        if let snapshotFrame { return snapshotFrame }
        let frame = OutboundFrame.shared(snapshotMessage)
        snapshotFrame = frame
        return frame
    }

    /// How the commit affects `target`, computed once for equal targets with equal windows.
    mutating func step(for target: WatchedTarget) -> Step {
        // An equal target with the same window was touched alike: only touched ones are
        // recorded, so a hit skips the target's own walk over the changes.
        if let known = update(of: target) { return .updated(known) }
        switch target.update(with: changes) {
        case .unchanged: return .unchanged
        case .window(let window): return .updated(record(target, window: window))
        case .needsRefill: return .needsRefill
        }
    }

    /// Records the window read again from the store for `target` (after ``Step/needsRefill``);
    /// equal targets with the same old window use it too.
    mutating func refilled(_ target: WatchedTarget, window: [Document]) -> Int {
        if let known = update(of: target) { return known }
        return record(target, window: window)
    }

    /// The update already worked out for a target equal to `target` with the same old window.
    private func update(of target: WatchedTarget) -> Int? {
        guard let candidates = updatesByTarget[TargetKey(canonicalID: target.canonicalID, hash: target.targetHash)] else { return nil }
        // Equal windows are usually one array (shared by the previous commit's fan-out), which
        // `==` recognizes without comparing documents.
        return candidates.first { updates[$0].oldWindow == target.window }
    }

    private mutating func record(_ target: WatchedTarget, window: [Document]) -> Int {
        let keys = Set(window.map(\.key))
        var entered: [(document: Document, changed: Bool)] = []
        for document in window {
            let changed = changes[document.key] != nil
            if changed || !target.keys.contains(document.key) { entered.append((document, changed)) }
        }
        var left: [(key: DocumentKey, newState: MaybeDocument?)] = []
        for document in target.window where !keys.contains(document.key) {
            left.append((document.key, changes[document.key]))
        }
        let index = updates.count
        updates.append(TargetUpdate(oldWindow: target.window, window: window, keys: keys,
                                    entered: entered, left: left))
        updatesByTarget[TargetKey(canonicalID: target.canonicalID, hash: target.targetHash), default: []].append(index)
        return index
    }

    /// The frames of a connection whose changed targets are `changeSet`: one message per
    /// document that moved (``ConnectionChanges``), then the global snapshot; none when no
    /// document moved. The same array for every connection with this change set.
    mutating func frames(for changeSet: ChangeSet) -> [OutboundFrame] {
        if let known = framesByChangeSet[changeSet] { return known }
        var collected = ConnectionChanges()
        changeSet.forEach { touched in
            let update = updates[touched.update]
            for (document, changed) in update.entered {
                collected.add(document, changed: changed, to: touched.targetID)
            }
            for (key, newState) in update.left {
                collected.remove(key, newState: newState, from: touched.targetID)
            }
        }
        let frames = collected.isEmpty ? [] : collected.messages(version: version).map(OutboundFrame.shared) + [snapshot()]
        framesByChangeSet[changeSet] = frames
        return frames
    }

    /// A target as a dictionary key: its canonical id (what `Target`'s `==` compares) and the
    /// hash its ``WatchedTarget`` computed once.
    private struct TargetKey: Hashable {
        let canonicalID: String
        let hash: Int

        static func == (a: TargetKey, b: TargetKey) -> Bool { a.hash == b.hash && a.canonicalID == b.canonicalID }
        func hash(into hasher: inout Hasher) { hasher.combine(hash) }
    }
}

public import DocModel

/// Whether a snapshot reflects unacknowledged local writes and whether it came from the cache
/// without the server's confirmation.
public struct SnapshotMetadata: Sendable, Hashable {
    /// The snapshot includes writes the server has not acknowledged yet.
    public var hasPendingWrites: Bool
    /// The snapshot was computed from the cache and the server has not confirmed it is current.
    public var isFromCache: Bool
}

/// How to read a field whose `FieldValue.serverTimestamp()` the server has not set yet.
public enum ServerTimestampBehavior: Sendable, Hashable {
    /// As `null`.
    case none
    /// As the local time of the write.
    case estimate
    /// As the field's value before the write (or `null`).
    case previous
}

/// Where a one-time read gets its data.
public enum Source: Sendable, Hashable {
    /// The server when online, the cache otherwise.
    case `default`
    /// The cache only; never waits for the network.
    case cache
    /// The server only; fails with `unavailable` while offline.
    case server
}

/// One document as read from the store.
public struct DocumentSnapshot: Sendable {
    /// The document's path, e.g. `rooms/r1`.
    public let key: DocumentKey
    let document: Document?
    /// Whether the snapshot shows writes not yet committed, and whether it came from the cache.
    public let metadata: SnapshotMetadata

    init(key: DocumentKey, document: Document?, fromCache: Bool) {
        self.key = key
        self.document = document
        self.metadata = SnapshotMetadata(hasPendingWrites: document?.hasLocalMutations ?? false, isFromCache: fromCache)
    }

    /// The document's path, slash-separated.
    public var path: String { key.description }
    /// The last segment of the path.
    public var documentID: String { key.documentID }

    /// The document exists and is not a tombstone.
    public var exists: Bool { document.map { !$0.isTombstone } ?? false }
    /// The document is a tombstone (deleted with `delete()`); its fields stay readable.
    public var isDeleted: Bool { document?.isTombstone ?? false }
    /// When the document was deleted (server time; an estimate while the delete is pending).
    public var deletedAt: Timestamp? {
        guard let value = document?.data[tombstoneField] else { return nil }
        return Self.resolve(value, .estimate).timestampValue
    }
    /// The server commit version of the document's last change; `nil` while the document has
    /// pending writes (its local view is not a committed version) or exists only locally.
    public var version: SnapshotVersion? {
        guard let document, document.version != .none else { return nil }
        return document.version
    }

    /// The document's fields, or `nil` when the document does not exist at all. Tombstones
    /// return their fields (check ``isDeleted``).
    public func data(serverTimestamps: ServerTimestampBehavior = .none) -> [String: Value]? {
        guard let document else { return nil }
        return document.data.fields.mapValues { Self.resolve($0, serverTimestamps) }
    }

    /// One field by path (`"address.city"`), or `nil` when absent or the path is invalid.
    public func get(_ field: String, serverTimestamps: ServerTimestampBehavior = .none) -> Value? {
        guard let document, let path = try? FieldPath(field), let value = document.value(at: path) else { return nil }
        return Self.resolve(value, serverTimestamps)
    }

    static func resolve(_ value: Value, _ behavior: ServerTimestampBehavior) -> Value {
        if value.isServerTimestamp {
            switch behavior {
            case .none: return .null
            case .estimate: return value.serverTimestampLocalWriteTime.map(Value.timestamp) ?? .null
            case .previous: return value.serverTimestampPreviousValue.map { resolve($0, behavior) } ?? .null
            }
        }
        switch value {
        case .map(let m): return .map(m.mapValues { resolve($0, behavior) })
        case .array(let a): return .array(a.map { resolve($0, behavior) })
        default: return value
        }
    }
}

/// One change between two query snapshots, with positions in the old and new result lists.
public struct DocumentChange: Sendable {
    /// How the document changed.
    public enum Kind: String, Sendable, Hashable {
        /// It entered the results (``DocumentChange/oldIndex`` is -1).
        case added
        /// It stayed in the results with other data or metadata (its position may change).
        case modified
        /// It left the results (``DocumentChange/newIndex`` is -1).
        case removed
    }

    /// How the document changed.
    public let type: Kind
    /// The document: as it is now, or, when removed, as it was last in the results.
    public let document: DocumentSnapshot
    /// The position in the previous snapshot; -1 for an added document.
    public let oldIndex: Int
    /// The position in this snapshot; -1 for a removed document.
    public let newIndex: Int
}

/// The results of a query at one moment.
public struct QuerySnapshot: Sendable {
    /// The results, in the query's order.
    public let documents: [DocumentSnapshot]
    /// Whether the results show writes not yet committed (any of them), and whether they came
    /// from the cache (not yet in sync with the server).
    public let metadata: SnapshotMetadata
    /// The engine's snapshot, kept to compute ``documentChanges`` when it is asked for.
    private let view: ViewSnapshot
    private let includeMetadataChanges: Bool

    /// The number of results.
    public var count: Int { documents.count }
    /// Whether there are no results.
    public var isEmpty: Bool { documents.isEmpty }

    init(_ snapshot: ViewSnapshot, includeMetadataChanges: Bool) {
        let fromCache = snapshot.isFromCache
        documents = snapshot.documents.map { DocumentSnapshot(key: $0.key, document: $0, fromCache: fromCache) }
        metadata = SnapshotMetadata(hasPendingWrites: snapshot.hasPendingWrites, isFromCache: fromCache)
        view = snapshot
        self.includeMetadataChanges = includeMetadataChanges
    }

    /// What changed since the listener's previous snapshot (everything is `added` in the first).
    /// Computed when read (a one-time read or a listener that only looks at ``documents``
    /// does not pay for it), so read it once per snapshot.
    public var documentChanges: [DocumentChange] {
        let fromCache = metadata.isFromCache
        let changes = (try? view.documentChanges(includeMetadataChanges: includeMetadataChanges)) ?? []
        return changes.map { change in
            let kind: DocumentChange.Kind
            switch change.type {
            case .added: kind = .added
            case .modified: kind = .modified
            case .removed: kind = .removed
            }
            return DocumentChange(
                type: kind, document: DocumentSnapshot(key: change.document.key, document: change.document, fromCache: fromCache),
                oldIndex: change.oldIndex, newIndex: change.newIndex)
        }
    }
}

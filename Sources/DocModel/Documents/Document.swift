/// The name of the field that marks a tombstoned (soft-deleted) document.
public let tombstoneField = "deletedAt"
/// The field set to the commit time of every tombstone delete.
public let updatedAtField = "updatedAt"

/// An existing document: its key, fields and versions.
public struct Document: Sendable, Hashable, CustomStringConvertible {
    public var key: DocumentKey
    public var data: ObjectValue
    /// The commit version of the last change (equals ``updateTime``); `none` for a document
    /// that exists only locally.
    public var version: SnapshotVersion
    /// The commit version that created the document.
    public var createTime: SnapshotVersion
    /// The local view includes mutations not yet acknowledged by the server.
    public var hasLocalMutations: Bool
    /// The document reflects a write the server acknowledged but whose result has not yet
    /// arrived through the watch stream.
    public var hasCommittedMutations: Bool

    public init(
        key: DocumentKey, data: ObjectValue, version: SnapshotVersion,
        createTime: SnapshotVersion? = nil,
        hasLocalMutations: Bool = false, hasCommittedMutations: Bool = false
    ) {
        self.key = key
        self.data = data
        self.version = version
        self.createTime = createTime ?? version
        self.hasLocalMutations = hasLocalMutations
        self.hasCommittedMutations = hasCommittedMutations
    }

    /// The time of the last change (the commit version as a timestamp).
    public var updateTime: SnapshotVersion { version }

    /// Whether the document has pending writes (local or acknowledged but not yet seen on watch).
    public var hasPendingWrites: Bool { hasLocalMutations || hasCommittedMutations }

    /// A tombstone: the document carries a non-null `deletedAt`. Queries and listeners hide
    /// tombstones unless asked to include them.
    public var isTombstone: Bool {
        if let v = data[tombstoneField], !v.isNull { return true }
        return false
    }

    /// The value at `path`; `__name__` yields the document's key as a reference.
    public func value(at path: FieldPath) -> Value? {
        path.isDocumentID ? .reference(key) : data[path]
    }

    public var description: String {
        "Document(\(key) v\(version)\(hasLocalMutations ? " local" : "")\(hasCommittedMutations ? " committed" : ""))"
    }
}

/// A document known not to exist at `version` (a hard delete, or never created).
public struct NoDocument: Sendable, Hashable {
    public var key: DocumentKey
    public var version: SnapshotVersion
    /// The absence comes from a pending local delete.
    public var hasLocalMutations: Bool
    /// The absence comes from a delete the server acknowledged but watch has not confirmed.
    public var hasCommittedMutations: Bool

    public init(
        key: DocumentKey, version: SnapshotVersion,
        hasLocalMutations: Bool = false, hasCommittedMutations: Bool = false
    ) {
        self.key = key
        self.version = version
        self.hasLocalMutations = hasLocalMutations
        self.hasCommittedMutations = hasCommittedMutations
    }
}

/// A document the server committed a write to at `version`, whose contents the client does
/// not know (e.g. a patch was acknowledged for a document not in the cache).
public struct UnknownDocument: Sendable, Hashable {
    public var key: DocumentKey
    public var version: SnapshotVersion

    public init(key: DocumentKey, version: SnapshotVersion) {
        self.key = key
        self.version = version
    }
}

/// What is known about one document key.
public enum MaybeDocument: Sendable, Hashable {
    case document(Document)
    case noDocument(NoDocument)
    case unknown(UnknownDocument)

    public var key: DocumentKey {
        switch self {
        case .document(let d): return d.key
        case .noDocument(let d): return d.key
        case .unknown(let d): return d.key
        }
    }

    public var version: SnapshotVersion {
        switch self {
        case .document(let d): return d.version
        case .noDocument(let d): return d.version
        case .unknown(let d): return d.version
        }
    }

    /// The document, when it exists.
    public var document: Document? { if case .document(let d) = self { return d } else { return nil } }

    public var hasPendingWrites: Bool {
        switch self {
        case .document(let d): return d.hasPendingWrites
        case .noDocument(let d): return d.hasLocalMutations || d.hasCommittedMutations
        case .unknown: return true
        }
    }
}

/// The name of the field that marks a tombstoned (soft-deleted) document.
public let tombstoneField = "deletedAt"
/// The field set to the commit time of every tombstone delete.
public let updatedAtField = "updatedAt"

/// An existing document: its key, fields and versions.
public struct Document: Sendable, Hashable, CustomStringConvertible {
    /// The document's path.
    public var key: DocumentKey
    /// The document's fields; the key itself is not a field (read it as `__name__` with
    /// ``value(at:)``).
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

    /// Creates a document; `createTime` defaults to `version` (a document not changed since it
    /// was created).
    /// No limits are checked here (see ``DocumentLimits/validate(_:for:)``).
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
    /// The path of the missing document.
    public var key: DocumentKey
    /// The version at which the document is known not to exist; ``SnapshotVersion/none`` when
    /// no server version is known (e.g. after a local delete).
    public var version: SnapshotVersion
    /// The absence comes from a pending local delete.
    public var hasLocalMutations: Bool
    /// The absence comes from a delete the server acknowledged but watch has not confirmed.
    public var hasCommittedMutations: Bool

    /// Creates an absence record for `key` at `version`.
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
    /// The path of the document written.
    public var key: DocumentKey
    /// The commit version of the acknowledged write.
    public var version: SnapshotVersion

    /// Creates a record of a write committed to `key` at `version`.
    public init(key: DocumentKey, version: SnapshotVersion) {
        self.key = key
        self.version = version
    }
}

/// What is known about one document key.
public enum MaybeDocument: Sendable, Hashable {
    /// The document exists, with these contents.
    case document(Document)
    /// The document is known not to exist.
    case noDocument(NoDocument)
    /// A write to the document was committed, but its contents are not known.
    case unknown(UnknownDocument)

    /// The document's path, whichever the case.
    public var key: DocumentKey {
        switch self {
        case .document(let d): return d.key
        case .noDocument(let d): return d.key
        case .unknown(let d): return d.key
        }
    }

    /// The version the case was recorded at: the last change, the absence, or the committed write.
    public var version: SnapshotVersion {
        switch self {
        case .document(let d): return d.version
        case .noDocument(let d): return d.version
        case .unknown(let d): return d.version
        }
    }

    /// The document, when it exists.
    public var document: Document? { if case .document(let d) = self { return d } else { return nil } }

    /// Whether writes not yet confirmed by the watch stream shaped this state; always `true` for
    /// ``unknown(_:)``.
    public var hasPendingWrites: Bool {
        switch self {
        case .document(let d): return d.hasPendingWrites
        case .noDocument(let d): return d.hasLocalMutations || d.hasCommittedMutations
        case .unknown: return true
        }
    }
}

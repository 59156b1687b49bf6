/// A condition a document must meet for a mutation to apply, as in Firestore.
///
/// On the server a failed precondition rejects the write; in the local view the mutation is
/// skipped and the document stays as it was.
public enum Precondition: Sendable, Hashable, CustomStringConvertible {
    /// No condition.
    case none
    /// The document must exist (`true`) or must not exist (`false`).
    case exists(Bool)
    /// The document must exist with exactly this update time (version).
    case updateTime(SnapshotVersion)

    /// Whether `document` meets the condition, with Firestore's rules: only a found
    /// ``Document`` exists; a missing entry, a ``NoDocument`` and an ``UnknownDocument`` do not
    /// (an unknown document's contents and existence are not known to the client).
    public func isValid(for document: MaybeDocument?) -> Bool {
        switch self {
        case .none:
            return true
        case .exists(let exists):
            return exists == (document?.document != nil)
        case .updateTime(let version):
            guard let found = document?.document else { return false }
            return found.version == version
        }
    }

    /// Whether this is ``none``.
    public var isNone: Bool { if case .none = self { return true } else { return false } }

    /// `Precondition(exists: true)` and the like, for logs.
    public var description: String {
        switch self {
        case .none: return "Precondition(none)"
        case .exists(let e): return "Precondition(exists: \(e))"
        case .updateTime(let v): return "Precondition(updateTime: \(v))"
        }
    }
}

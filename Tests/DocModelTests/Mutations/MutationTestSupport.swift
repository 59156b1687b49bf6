@testable import DocModel

/// Shared fixtures for the mutation tests.
enum Fx {
    static let key = try! DocumentKey("users/alice")
    static let otherKey = try! DocumentKey("users/bob")
    /// The local write time of pending writes.
    static let localTime = try! Timestamp(seconds: 1_700_000_000, nanos: 5_000)
    /// The existing document's create time and version.
    static let created = SnapshotVersion(microseconds: 500_000)
    static let v1 = SnapshotVersion(microseconds: 1_000_000)
    /// The commit version used by server and acknowledgement tests.
    static let v2 = SnapshotVersion(microseconds: 2_000_000)
    static var commitTime: Value { .timestamp(v2.timestamp) }

    static func path(_ text: String) -> FieldPath { try! FieldPath(text) }

    static func doc(_ fields: [String: Value], version: SnapshotVersion = v1, key: DocumentKey = key) -> MaybeDocument {
        .document(Document(key: key, data: ObjectValue(fields), version: version, createTime: created))
    }

    static func pending(_ previous: Value? = nil) -> Value {
        .pendingServerTimestamp(localWriteTime: localTime, previous: previous)
    }

    /// The fields of a document (nil for anything but a found document).
    static func fields(_ doc: MaybeDocument?) -> [String: Value]? { doc?.document?.data.fields }
}

/// The three contexts a mutation is applied in.
enum Context: String, CaseIterable, Sendable, CustomStringConvertible {
    case local, server, ack
    var description: String { rawValue }
}

/// What happened when a mutation was applied.
enum Applied {
    case document(MaybeDocument?)
    case failure(DocError)

    var document: MaybeDocument? { if case .document(let d) = self { return d } else { return nil } }
    var error: DocError? { if case .failure(let e) = self { return e } else { return nil } }
}

extension Mutation {
    /// The server's result for this mutation as Firestore would send it for a commit at `version`.
    func fakeResult(version: SnapshotVersion = Fx.v2) -> MutationResult {
        MutationResult(version: version, transformResults: effectiveTransforms.map { t in
            switch t.operation {
            case .serverTimestamp: return .timestamp(version.timestamp)
            case .arrayUnion, .arrayRemove: return .null
            case .increment: return .integer(0)
            }
        })
    }

    /// Applies the mutation in `context` against `base` (acknowledgement with ``fakeResult``).
    func apply(_ context: Context, to base: MaybeDocument?) -> Applied {
        switch context {
        case .local:
            return .document(applyToLocalView(base, localWriteTime: Fx.localTime))
        case .server:
            do { return .document(try applyOnServer(base, commitVersion: Fx.v2).0) } catch { return .failure(error) }
        case .ack:
            return .document(applyToRemoteDocument(base, result: fakeResult()))
        }
    }
}

extension Value {
    /// The value with every pending server timestamp replaced by `time`.
    func resolvingServerTimestamps(_ time: Timestamp) -> Value {
        if isServerTimestamp { return .timestamp(time) }
        switch self {
        case .map(let m): return .map(m.mapValues { $0.resolvingServerTimestamps(time) })
        case .array(let a): return .array(a.map { $0.resolvingServerTimestamps(time) })
        default: return self
        }
    }
}

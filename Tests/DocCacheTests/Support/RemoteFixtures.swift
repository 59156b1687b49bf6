@testable import DocCache
import DocModel

/// Small builders for remote-layer tests (namespaced so they cannot clash with other test
/// helpers of the module).
enum RemoteFixtures {
    /// The key of a document path known to be valid.
    static func key(_ path: String) -> DocumentKey {
        DocumentKey(unchecked: try! ResourcePath(path))
    }

    /// A found document with `value` in field `value`, at `version` (microseconds).
    static func doc(_ path: String, _ version: Int64, value: Value = 1) -> MaybeDocument {
        .document(Document(key: key(path), data: ObjectValue(["value": value]), version: SnapshotVersion(microseconds: version)))
    }

    /// A document known not to exist at `version`.
    static func deletedDoc(_ path: String, _ version: Int64) -> MaybeDocument {
        .noDocument(NoDocument(key: key(path), version: SnapshotVersion(microseconds: version)))
    }

    /// A snapshot version from microseconds.
    static func version(_ microseconds: Int64) -> SnapshotVersion {
        SnapshotVersion(microseconds: microseconds)
    }

    /// Resume token bytes from text.
    static func token(_ text: String) -> ResumeToken {
        Array(text.utf8)
    }

    /// A `.listen` target on a collection (limited, as listens must be).
    static func queryTarget(_ targetID: TargetID, collection: String = "coll", resumeToken: ResumeToken = []) -> TargetData {
        let target = try! Query(collection: collection).limit(to: 100).toTarget()
        return TargetData(target: target, targetID: targetID, purpose: .listen, sequenceNumber: 0, resumeToken: resumeToken)
    }

    /// A limbo-resolution target for the single document at `path`.
    static func limboTarget(_ targetID: TargetID, path: String = "coll/limbo") -> TargetData {
        let target = try! Query(document: key(path)).toTarget()
        return TargetData(target: target, targetID: targetID, purpose: .limboResolution, sequenceNumber: 0)
    }
}

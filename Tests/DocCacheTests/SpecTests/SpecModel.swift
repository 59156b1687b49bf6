@testable import DocCache
import DocModel

// The decoded form of the Firestore client spec tests (`*_spec_test.json`).
//
// A file maps test names to tests; a test has tags, a config and steps. Each step is one
// action (user, watch, write or client control) plus what is expected right after it: the
// snapshot events raised, engine state, snapshots-in-sync and wait-for-pending-writes events.
// Decoding is strict: an unknown step kind or expectation is a decoding error, so nothing in a
// file is silently ignored.

/// One `*_spec_test.json` file.
struct SpecFile {
    /// The file name, e.g. `listen_spec_test.json`.
    var name: String
    /// The tests, sorted by name.
    var tests: [SpecTest]
}

/// One test of a spec file: either decoded, or the reason it could not be.
struct SpecTest {
    /// The test's key in the file (its `itName`).
    var name: String
    var describeName: String
    var tags: [String]
    var comment: String?
    var config: SpecConfig
    /// The steps, or the decoding error (reported as a failure of this test).
    var steps: Result<[SpecStep], SpecDecodingError>
}

/// A test's `config`.
struct SpecConfig: Equatable {
    /// Memory persistence with eager GC (ignored: we always run LevelDB with LRU GC).
    var useEagerGCForMemory = false
    /// The number of clients (tabs): more than one is a multi-client test.
    var numClients = 1
    /// The most limbo resolutions at a time; `nil` for no limit.
    var maxConcurrentLimboResolutions: Int?
}

/// A query as the spec files write it: `{"path", "collectionGroup"?, "filters": [[field, op,
/// value]], "orderBys": [[field, dir]], "limit"?, "limitType"?}`, or a plain path string.
struct SpecQuery: CustomStringConvertible {
    var query: Query
    /// The JSON text the query was decoded from, for messages.
    var json: String

    var description: String { json }
}

/// A document in an event or a watch change.
struct SpecDocument: Equatable, CustomStringConvertible {
    var key: DocumentKey
    var version: SnapshotVersion
    /// `0` in every file (the generator does not set it); compared only when non-zero.
    var createTime: SnapshotVersion
    /// The fields; `nil` for a deleted document (`"value": null`).
    var value: ObjectValue?
    var hasLocalMutations: Bool
    var hasCommittedMutations: Bool

    var description: String {
        var flags: [String] = []
        if hasLocalMutations { flags.append("local") }
        if hasCommittedMutations { flags.append("committed") }
        let data = value.map(\.jsonString) ?? "null"
        return "\(key) v\(version.microseconds) \(data)" + (flags.isEmpty ? "" : " [" + flags.joined(separator: ",") + "]")
    }
}

/// An expected snapshot event of one query listener.
struct SpecEvent: CustomStringConvertible {
    var query: SpecQuery
    var added: [SpecDocument] = []
    var modified: [SpecDocument] = []
    var removed: [SpecDocument] = []
    var metadata: [SpecDocument] = []
    var fromCache = false
    var hasPendingWrites = false
    /// The gRPC code of the error that ended the listen; `0` for a snapshot.
    var errorCode = 0

    var description: String {
        if errorCode != 0 { return "\(query): error \(errorCode)" }
        var parts: [String] = []
        for (name, docs) in [("removed", removed), ("added", added), ("modified", modified), ("metadata", metadata)]
        where !docs.isEmpty {
            parts.append("\(name): [" + docs.map(\.description).joined(separator: "; ") + "]")
        }
        parts.append("fromCache: \(fromCache)")
        parts.append("hasPendingWrites: \(hasPendingWrites)")
        return "\(query): " + parts.joined(separator: ", ")
    }
}

/// An expected active watch target.
struct SpecTarget {
    var queries: [SpecQuery]
    var purpose: QueryPurpose
    /// The resume token sent with the target (UTF-8 of the spec string).
    var resumeToken: ResumeToken?
    /// The read time sent instead of a resume token, when the file gives one.
    var readTime: SnapshotVersion?
    /// The expected count sent with a resumed target, when the file gives one.
    var expectedCount: Int?
}

/// The `expectedState` of a step. Absent members are not checked (active targets and limbo
/// documents are remembered from earlier steps, as the Firestore runners do).
struct SpecExpectedState {
    var numOutstandingWrites: Int?
    var writeStreamRequestCount: Int?
    var watchStreamRequestCount: Int?
    var activeTargets: [TargetID: SpecTarget]?
    var activeLimboDocs: [DocumentKey]?
    var enqueuedLimboDocs: [DocumentKey]?
    var userCallbacks: (acknowledgedDocs: [String], rejectedDocs: [String])?
    /// Multi-client expectations (`isPrimary`, `numActiveClients`, `isShutdown`), which the
    /// single-client driver cannot check.
    var multiClientKeys: [String] = []
}

/// What a step does.
enum SpecAction {
    case userListen(query: SpecQuery, targetID: TargetID, cacheOnly: Bool)
    case userUnlisten(targetID: TargetID, query: SpecQuery)
    case userSet(DocumentKey, ObjectValue)
    /// Field paths with their new values; `nil` deletes the field (the `"<DELETE>"` sentinel).
    case userPatch(DocumentKey, [(FieldPath, Value?)])
    case userDelete(DocumentKey)
    case watchAck([TargetID])
    case watchCurrent([TargetID], resumeToken: ResumeToken)
    case watchRemove([TargetID], cause: DocError?)
    /// Documents (found, or deleted when the value is null) that now match `targets` and no
    /// longer match `removedTargets`.
    case watchEntity(docs: [SpecDocument], targets: [TargetID], removedTargets: [TargetID])
    /// A key that no longer matches `removedTargets` (the document itself is not sent).
    case watchRemoveKey(DocumentKey, removedTargets: [TargetID])
    /// The server counts `keys.count` documents in the target, with a bloom filter of their
    /// names when the step has one.
    case watchFilter(targetIDs: [TargetID], keys: [DocumentKey], bloomFilter: WatchChange.BloomFilterParameters?)
    case watchReset([TargetID])
    case watchSnapshot(version: SnapshotVersion, targetIDs: [TargetID], resumeToken: ResumeToken)
    case watchStreamClose(error: DocError, runBackoffTimer: Bool)
    case writeAck(version: SnapshotVersion, keepInQueue: Bool)
    case failWrite(error: DocError, keepInQueue: Bool)
    case enableNetwork(Bool)
    case restart
    /// `nil` for the unauthenticated user.
    case changeUser(String?)
    case runTimer(String)
    case waitForPendingWrites
    case addSnapshotsInSyncListener
    case removeSnapshotsInSyncListener
    /// Runs the async queue (a no-op here: steps run synchronously).
    case drainQueue
    /// Loads a bundle (the step's string: the bundle's bytes in Firestore's format).
    case loadBundle([UInt8])
    /// A step the single-client LevelDB driver cannot run (multi-client, manual LRU
    /// collection); the test is skipped with this step kind as the reason.
    case unsupported(String)
}

/// One step and its expectations.
struct SpecStep {
    var action: SpecAction
    /// The step's JSON, shortened, for messages.
    var json: String
    /// The client a multi-client test runs the step on.
    var clientIndex: Int?
    /// `nil` when the step has no `expectedSnapshotEvents` (then no event may be raised).
    var expectedSnapshotEvents: [SpecEvent]?
    var expectedState: SpecExpectedState?
    /// Checked after every step; `0` when absent.
    var expectedSnapshotsInSyncEvents = 0
    /// Checked after every step; `0` when absent.
    var expectedWaitForPendingWritesEvents = 0
}

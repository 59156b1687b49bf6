@testable import DocCache
import DocModel
import DocTestSupport

/// Shared helpers for the view and event tests (namespaced to stay clear of other test files).
enum ViewFixtures {
    static func key(_ path: String) -> DocumentKey { try! DocumentKey(path) }

    static func keys(_ paths: String...) -> Set<DocumentKey> { Set(paths.map(key)) }

    static func query(_ collection: String) -> Query { try! Query(collection: collection) }

    /// A document at `path` with `version` and `fields`; `local` / `committed` set the
    /// pending-write flags.
    static func doc(
        _ path: String, _ version: Int64, _ fields: [String: Value] = [:], local: Bool = false,
        committed: Bool = false
    ) -> Document {
        Document(
            key: key(path), data: ObjectValue(fields), version: SnapshotVersion(microseconds: version),
            hasLocalMutations: local, hasCommittedMutations: committed)
    }

    /// `document` as a tombstone (a non-null `deletedAt`).
    static func tombstoned(_ document: Document, version: Int64) -> Document {
        var copy = document
        copy.data.fields[tombstoneField] = .timestamp(try! Timestamp(seconds: 100))
        copy.version = SnapshotVersion(microseconds: version)
        return copy
    }

    /// A hard delete of `path`.
    static func deleted(_ path: String, _ version: Int64) -> MaybeDocument {
        .noDocument(NoDocument(key: key(path), version: SnapshotVersion(microseconds: version)))
    }

    /// A change map holding `documents`.
    static func changes(_ documents: Document...) -> [DocumentKey: MaybeDocument] {
        Dictionary(uniqueKeysWithValues: documents.map { ($0.key, .document($0)) })
    }

    /// A target change marking the target current with `documents` added to it.
    static func ackTarget(_ documents: Document..., resumeToken: ResumeToken = []) -> TargetChange {
        TargetChange(resumeToken: resumeToken, current: true, addedDocuments: Set(documents.map(\.key)))
    }

    /// A target change marking the target current with nothing added.
    static func markCurrent(resumeToken: ResumeToken = []) -> TargetChange {
        TargetChange(resumeToken: resumeToken, current: true)
    }

    /// Computes and applies `documents` (and `targetChange`) to `view`; when the changes
    /// need a refill, re-runs them against `cache` (the whole local cache, as the sync engine
    /// re-runs the query on the local store). Returns the snapshot, if any.
    @discardableResult
    static func apply(
        _ view: View, _ documents: [Document], _ targetChange: TargetChange? = nil, cache: [Document]? = nil
    ) -> ViewSnapshot? {
        var changes = view.computeDocumentChanges(documents)
        if changes.needsRefill, let cache {
            changes = view.computeDocumentChanges(cache, previousChanges: changes)
        }
        return view.applyChanges(changes, targetChange: targetChange).snapshot
    }

    /// The keys of a snapshot's documents, in order, as strings.
    static func paths(_ set: DocumentSet) -> [String] { set.map(\.key.description) }

    /// A snapshot's changes as `kind:path` strings, in order.
    static func describe(_ changes: [DocumentViewChange]) -> [String] {
        changes.map { "\($0.kind):\($0.document.key)" }
    }
}

/// A fake sync engine recording what the event manager asks of it.
final class RecordingEventSource: QueryEventSource {
    enum Call: Equatable, CustomStringConvertible {
        case listen(String, remote: Bool)
        case stop(String, remote: Bool)
        case listenRemote(String)
        case stopRemote(String)

        var description: String {
            switch self {
            case .listen(let q, let remote): return "listen(\(q), remote: \(remote))"
            case .stop(let q, let remote): return "stop(\(q), remote: \(remote))"
            case .listenRemote(let q): return "listenRemote(\(q))"
            case .stopRemote(let q): return "stopRemote(\(q))"
            }
        }
    }

    private(set) var calls: [Call] = []
    private var nextTargetID: TargetID = 2
    /// When set, the next `listen` / `listenToRemoteStore` throws it.
    var failNextListen: DocError?
    /// Called inside `listen` (as the real sync engine reports the initial snapshot there).
    var onListen: ((Query) -> Void)?

    /// A short name for a query in the recorded calls: its path.
    private func name(_ query: Query) -> String { query.path.canonicalString }

    func listen(_ query: Query, shouldListenToRemote: Bool) throws(DocError) -> TargetID {
        if let error = failNextListen {
            failNextListen = nil
            throw error
        }
        calls.append(.listen(name(query), remote: shouldListenToRemote))
        onListen?(query)
        defer { nextTargetID += 2 }
        return nextTargetID
    }

    func stopListening(_ query: Query, shouldStopRemoteListening: Bool) {
        calls.append(.stop(name(query), remote: shouldStopRemoteListening))
    }

    func listenToRemoteStore(_ query: Query) throws(DocError) {
        if let error = failNextListen {
            failNextListen = nil
            throw error
        }
        calls.append(.listenRemote(name(query)))
    }

    func stopListeningToRemoteStoreOnly(_ query: Query) {
        calls.append(.stopRemote(name(query)))
    }
}

/// Collects what a query listener delivers.
final class EventRecorder {
    private(set) var snapshots: [ViewSnapshot] = []
    private(set) var errors: [DocError] = []

    var callback: QueryListener.Callback {
        { [self] result in
            switch result {
            case .success(let snapshot): snapshots.append(snapshot)
            case .failure(let error): errors.append(error)
            }
        }
    }
}

typealias SplitMixGenerator = SplitMix64

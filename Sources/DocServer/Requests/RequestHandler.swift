public import DocModel
public import Logging
internal import Synchronization

/// What a handler may read while it decides: documents of the request's tenant, at one
/// consistent point. Every document read is checked again when the handler's writes commit
/// (a change in between makes the processor run the handler again on the new state).
public struct RequestContext: Sendable {
    /// The request being processed.
    public let request: RequestDocument
    /// The tenant (database) of the request.
    public let tenant: String
    let reader: RequestReader
    /// The server's logger for this request: its lines carry `tenant`, `request_id` (the
    /// request document's path) and, when known, `request_batch` (the batch that wrote it).
    public let logger: Logger

    /// The document at `path`, or nil when it does not exist (a tombstone is returned: check
    /// `isTombstone`).
    public func document(_ path: String) async throws(DocError) -> Document? {
        try await reader.read(DocumentKey(path))
    }

    /// The document at `key`, or nil when it does not exist.
    public func document(_ key: DocumentKey) async throws(DocError) -> Document? {
        try await reader.read(key)
    }
}

/// A write a handler returns. Paths are relative to the tenant's database.
public enum RequestWrite: Sendable, Hashable {
    /// Replaces (or creates) the document.
    case set(String, [String: Value])
    /// Sets these fields (field paths) of an existing document.
    case update(String, [String: Value])
    /// Tombstones the document (`deletedAt`, `updatedAt`).
    case delete(String)

    var path: String {
        switch self {
        case .set(let path, _), .update(let path, _), .delete(let path): return path
        }
    }
}

/// A handler's decision.
public enum RequestDecision: Sendable {
    /// Apply these writes (all or nothing) and record `result` on the request.
    case apply([RequestWrite], result: Value)
    /// Reject the request with this error (recorded on the request; nothing else changes).
    case reject(DocError)
}

/// A registered handler: the collections it may write and the function that decides.
public struct RequestHandler: Sendable {
    /// The top-level collections the handler's writes may touch (e.g. `["accounts", "ledger"]`).
    /// A write elsewhere rejects the request with `permissionDenied`.
    public let scope: Set<String>
    /// Decides; throwing a `DocError` rejects the request with it.
    public let decide: @Sendable (RequestContext) async throws(DocError) -> RequestDecision

    /// A handler whose writes may touch only the top-level collections in `scope`, deciding with
    /// `decide`.
    public init(scope: Set<String>, decide: @escaping @Sendable (RequestContext) async throws(DocError) -> RequestDecision) {
        self.scope = scope
        self.decide = decide
    }

    /// Whether `key` is inside the handler's scope.
    func allows(_ key: DocumentKey) -> Bool {
        guard let top = key.path.segments.first else { return false }
        return scope.contains(top)
    }
}

/// Reads documents for a handler and remembers what it read (key → version, or missing).
final class RequestReader: Sendable {
    private let load: @Sendable (DocumentKey) async throws(DocError) -> Document?
    private let reads = Mutex<[DocumentKey: SnapshotVersion?]>([:])

    init(load: @escaping @Sendable (DocumentKey) async throws(DocError) -> Document?) {
        self.load = load
    }

    func read(_ key: DocumentKey) async throws(DocError) -> Document? {
        let document = try await load(key)
        // Not `$0[key] = document?.version`: for a missing document that assigns `nil` to the
        // subscript, which removes the key, and the read would never be verified at commit.
        reads.withLock { _ = $0.updateValue(document?.version, forKey: key) }
        return document
    }

    /// Every document read, with the version read (nil: it did not exist).
    var recorded: [DocumentKey: SnapshotVersion?] { reads.withLock { $0 } }
}

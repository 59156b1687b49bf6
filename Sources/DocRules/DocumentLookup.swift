public import DocModel

/// How the rules read other documents: `get()`, `exists()` (the stored state) and
/// `getAfter()`, `existsAfter()` (the state if the request, or the batch it belongs to,
/// commits).
///
/// The evaluator caches answers per request (or batch) and counts distinct documents against
/// Firestore's limits: 10 per single-document request, 20 per batch. A throwing lookup is an
/// evaluation error (the rule denies).
public protocol DocumentLookup {
    /// The stored document at `key`, or `nil` if there is none.
    func document(at key: DocumentKey) throws -> Document?
    /// The document at `key` after the pending writes. The request's own document is taken
    /// from the request itself; this is asked for the others. Defaults to ``document(at:)``.
    func documentAfter(at key: DocumentKey) throws -> Document?
}

extension DocumentLookup {
    /// The stored state: right for reads and for lookups outside the written documents.
    public func documentAfter(at key: DocumentKey) throws -> Document? { try document(at: key) }
}

/// A lookup over documents held in memory (tests, tools, the conformance runner).
public struct InMemoryDocumentLookup: DocumentLookup, Sendable {
    /// The stored documents.
    public var documents: [DocumentKey: Document]
    /// Documents that differ after the pending writes: a value of `nil` means deleted.
    public var after: [DocumentKey: Document?]

    /// A lookup over `documents`, with `after` overriding them for `getAfter()`/`existsAfter()`.
    public init(documents: [DocumentKey: Document] = [:], after: [DocumentKey: Document?] = [:]) {
        self.documents = documents
        self.after = after
    }

    /// The stored document at `key`.
    public func document(at key: DocumentKey) throws -> Document? { documents[key] }

    /// The document at `key` after the pending writes: `after[key]` when present, else stored.
    public func documentAfter(at key: DocumentKey) throws -> Document? {
        if let changed = after[key] { return changed }
        return documents[key]
    }
}

/// Counts and caches document lookups for one request; a batch shares a parent budget with
/// the batch-wide limit.
final class LookupBudget {
    /// Firestore's limits.
    static let singleRequestLimit = 10
    static let batchLimit = 20

    let limit: Int
    let parent: LookupBudget?
    /// Whether this is the budget of a whole batch (for messages).
    let isBatch: Bool
    private var cache: [CacheKey: Document?] = [:]

    private struct CacheKey: Hashable {
        var key: DocumentKey
        var after: Bool
    }

    init(limit: Int, parent: LookupBudget? = nil, isBatch: Bool = false) {
        self.limit = limit
        self.parent = parent
        self.isBatch = isBatch
    }

    /// Distinct documents read so far.
    var used: Int { cache.count }

    func fetch(_ key: DocumentKey, after: Bool, lookup: any DocumentLookup) throws(EvalError) -> Document? {
        let ck = CacheKey(key: key, after: after)
        if let hit = cache[ck] { return hit }
        guard cache.count < limit else {
            throw EvalError("more than \(limit) document lookups (get/exists/getAfter/existsAfter) in one \(isBatch ? "batch" : "request")")
        }
        let doc: Document?
        if let parent {
            doc = try parent.fetch(key, after: after, lookup: lookup)
        } else {
            do {
                doc = after ? try lookup.documentAfter(at: key) : try lookup.document(at: key)
            } catch {
                throw EvalError("lookup of \(key) failed: \(error)")
            }
        }
        cache[ck] = .some(doc)
        return doc
    }
}

extension Evaluator {
    /// Resolves `get()`-style path arguments and reads through the budget.
    func fetch(_ v: RulesValue, after: Bool) throws(EvalError) -> Document? {
        guard let request else {
            throw EvalError("get()/exists()/getAfter()/existsAfter() read Firestore documents, which storage rules cannot do")
        }
        guard case .path(let p) = v else {
            throw EvalError("get()/exists() need a path, not \(v.typeName)")
        }
        let s = p.segments
        guard s.count >= 5, s[0] == "databases", s[2] == "documents" else {
            throw EvalError("'\(p)' is not a document path of the form /databases/{database}/documents/…")
        }
        guard s[1] == database else {
            throw EvalError("'\(p)' names database '\(s[1])'; only '\(database)' can be read")
        }
        let rest = Array(s[3...])
        let key: DocumentKey
        do {
            key = try DocumentKey(path: try ResourcePath(segments: rest))
        } catch {
            throw EvalError("'\(p)' is not a document path: \(error.message)")
        }
        if after, key.path == request.path, request.method != .get, request.method != .list {
            return request.method == .delete ? nil : request.requestResource
        }
        return try budget.fetch(key, after: after, lookup: lookup)
    }
}

internal import DocModel
internal import DocRules

/// The documents the rules may read (`get()`, `exists()`, `getAfter()`, `existsAfter()`),
/// read from the tenant's store ahead of the decision.
///
/// The rules evaluator reads synchronously and the store is asynchronous, so a decision is
/// made in rounds (``resolve(reading:_:)``): the evaluator runs against the documents read so
/// far; a document it asks for and that has not been read yet fails that lookup (an
/// evaluation error, as if the rule could not read it) and is noted; the noted documents are
/// read in one store call and the decision is made again. Evaluation is deterministic, so
/// the last round — the one that asked for nothing unread — is the decision the rules make
/// with every document at hand. Lookups are limited (10 documents per request, 20 per batch),
/// so there are at most 21 rounds; most decisions take one (no lookups) or two.
///
/// Callers run inside their tenant hub's serialization (no commit of the tenant runs in
/// between), so every round sees the same stored state. Another server instance on the same
/// database may commit between the rounds, or before the batch's commit: a commit verifies
/// the versions of the documents read here (``fetched``) with its own.
final class PrefetchedLookup: DocumentLookup {
    /// Stored documents by key; `.some(nil)`: known not to exist.
    private var stored: [DocumentKey: Document?]
    /// The documents read from the store by ``resolve(reading:_:)`` (beyond those the lookup
    /// was given); `.some(nil)`: read as absent.
    private(set) var fetched: [DocumentKey: Document?] = [:]
    /// The state after the pending batch, for the documents it writes; `.some(nil)`: deleted.
    private let after: [DocumentKey: Document?]
    /// Documents asked for in this round that have not been read.
    private var missing: Set<DocumentKey> = []

    /// The most rounds of one decision (the lookup limits make 21 the most a decision needs).
    static let maxRounds = 32

    struct NotRead: Error, CustomStringConvertible {
        let key: DocumentKey
        var description: String { "\(key) was not read" }
    }

    /// A lookup that knows `stored` (absent documents as `nil`) and the batch's results `after`.
    init(stored: [DocumentKey: Document?] = [:], after: [DocumentKey: Document?] = [:]) {
        self.stored = stored
        self.after = after
    }

    func document(at key: DocumentKey) throws -> Document? {
        if let known = stored[key] { return known }
        missing.insert(key)
        throw NotRead(key: key)
    }

    func documentAfter(at key: DocumentKey) throws -> Document? {
        if let written = after[key] { return written }
        return try document(at: key)
    }

    /// Makes the decision `decide` in rounds, reading what each round asked for (see the type's
    /// documentation). Throws only when the store cannot be read.
    func resolve<Decision>(
        reading store: any TenantStore, _ decide: (PrefetchedLookup) -> Decision
    ) async throws(DocError) -> Decision {
        var round = 1
        while true {
            missing = []
            let decision = decide(self)
            guard !missing.isEmpty, round < Self.maxRounds else { return decision }
            let keys = missing.sorted()
            let read = try await store.documents(keys)
            for key in keys {
                stored.updateValue(read.documents[key], forKey: key)
                fetched.updateValue(read.documents[key], forKey: key)
            }
            round += 1
        }
    }
}

public import DocModel

/// A write batch the server rejected, kept on the device until the app retries, resolves or
/// discards it (``DocumentStore/failedWrites()``). The rejection still reverted the local view
/// at once, as Firestore does; this record is what lets the user get the work back.
///
/// Kept in the store's database in the transaction that removed the batch from the queue, so
/// it survives restarts and crashes; removed in the transaction that queues its retry, so the
/// write is never both pending and failed, nor lost between the two.
public struct FailedWrite: Sendable, Hashable, Identifiable {
    /// One write of the batch, as the user made it.
    public struct Write: Sendable, Hashable {
        /// What the write does.
        public let kind: PendingWrite.Kind
        /// The document's path.
        public let path: String
        /// The data written (a set's document, a merge's or update's fields), without
        /// transforms; `nil` for deletes.
        public let data: [String: Value]?
    }

    /// One field that differs between the user's version of a document and the server's.
    public struct FieldChange: Sendable, Hashable {
        /// The field path (`"address.city"`).
        public let field: String
        /// The value in the user's version (`nil`: absent).
        public let mine: Value?
        /// The value in the server's version (`nil`: absent).
        public let theirs: Value?
    }

    /// One document of the batch, side by side: what the user's writes make of the server's
    /// version, and that version — what a "keep mine / keep theirs / merge" screen shows.
    public struct Conflict: Sendable, Hashable {
        /// The document's path.
        public let path: String
        /// The document as the user's writes make it on top of the server's version, their
        /// preconditions left out (`nil`: they delete it, or leave no document).
        public let mine: [String: Value]?
        /// The server's version as this device last saw it — the remote document cache now, so
        /// a listen or a read after the rejection shows the newest (`nil`: no document there,
        /// or not known — see ``serverVersionKnown``).
        public let theirs: [String: Value]?
        /// The server's version's update time (`nil`: no document, or not known); a
        /// resolution is conditioned on it.
        public let theirsVersion: SnapshotVersion?
        /// Whether the device knows the server's version of the document (it was in the cache
        /// when the rejection arrived, or is now). When `false`, ``theirs`` is `nil` without
        /// meaning "no document", and the write cannot be resolved with ``Resolution/mine`` or
        /// ``Resolution/merged(_:)`` until the document is read (`getDocument(source: .server)`
        /// or a listener).
        public let serverVersionKnown: Bool
        /// The fields (leaves of nested maps; arrays as a whole) whose values differ.
        public let changedFields: [FieldChange]
    }

    /// How ``DocumentStore/resolveFailedWrite(_:keeping:)`` turns the user's choice into a
    /// write.
    public enum Resolution: Sendable {
        /// The user's writes again, applied to the server's version shown in the conflicts.
        case mine
        /// The server's version: nothing is written, and the failed write is discarded.
        case theirs
        /// This data replaces the document (a failed write of one document only).
        case merged([String: FieldValue])
    }

    /// The id (the rejected batch's id, unique in the store).
    public let id: Int
    /// When the user made the writes.
    public let localWriteTime: Timestamp
    /// When the rejection arrived.
    public let rejectedAt: Timestamp
    /// The server's reason: its code, message and location (which write, e.g. `write 1: …`).
    public let error: DocError
    /// How many times the batch was sent before the rejection.
    public let attempts: Int
    /// The writes, in order.
    public let writes: [Write]
    /// Every document of the batch, in the order of its first write.
    public let conflicts: [Conflict]

    /// The record's mutations (for a retry) and the server's versions (for a resolution).
    let record: FailedWriteRecord

    init(_ record: FailedWriteRecord) {
        self.record = record
        let batch = record.batch
        id = batch.batchID
        localWriteTime = batch.localWriteTime
        rejectedAt = record.rejectedAt
        error = record.error
        attempts = record.attempts
        writes = batch.mutations.map { mutation in
            let data: [String: Value]?
            switch mutation.kind {
            case .set(let object), .patch(let object, _): data = object.fields
            case .delete, .tombstone, .verify: data = nil
            }
            return Write(kind: PendingWrite.kind(of: mutation), path: mutation.key.description, data: data)
        }
        // The user's writes on the server's version, their preconditions left out (the
        // rejection was often one of them; "mine" is what the user wrote, applied).
        var unconditional = batch
        unconditional.mutations = batch.mutations.map { mutation in
            var mutation = mutation
            mutation.precondition = .none
            return mutation
        }
        conflicts = record.serverDocuments.map { key, server in
            let theirs = server?.document
            let mine = unconditional.applyToLocalView(server, for: key)?.document
            return Conflict(
                path: key.description, mine: mine?.data.fields, theirs: theirs?.data.fields,
                theirsVersion: theirs?.version, serverVersionKnown: server != nil,
                changedFields: Self.changes(mine?.data.fields ?? [:], theirs?.data.fields ?? [:], prefix: []))
        }
    }

    public static func == (a: Self, b: Self) -> Bool { a.record == b.record }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }

    /// The leaf fields whose values differ (maps compared field by field, also against a
    /// missing field; anything else whole).
    static func changes(_ mine: [String: Value], _ theirs: [String: Value], prefix: [String]) -> [FieldChange] {
        var out: [FieldChange] = []
        for name in Set(mine.keys).union(theirs.keys).sorted() {
            let path = prefix + [name]
            switch (mine[name], theirs[name]) {
            case (.map(let a)?, .map(let b)?):
                out += changes(a, b, prefix: path)
            // A map on one side only: its leaves, each against nothing (an empty map whole).
            case (.map(let a)?, nil) where !a.isEmpty:
                out += changes(a, [:], prefix: path)
            case (nil, .map(let b)?) where !b.isEmpty:
                out += changes([:], b, prefix: path)
            case let (a, b) where a != b:
                out.append(FieldChange(field: FieldPath(unchecked: path).canonicalString, mine: a, theirs: b))
            default:
                break
            }
        }
        return out
    }

    /// The mutations of a resolution: `nil` for ``Resolution/theirs`` (nothing to write).
    /// Each document's first write is conditioned on the server's version shown (its update
    /// time, or "must not exist"), so a change made on the server since is caught again.
    func mutations(resolving resolution: Resolution) throws(DocError) -> [Mutation]? {
        switch resolution {
        case .theirs:
            return nil
        case .mine:
            let preconditions = try serverPreconditions()
            var conditioned = Set<DocumentKey>()
            return record.batch.mutations.map { mutation in
                var mutation = mutation
                if conditioned.insert(mutation.key).inserted, let precondition = preconditions[mutation.key] {
                    mutation.precondition = precondition
                }
                return mutation
            }
        case .merged(let data):
            guard record.serverDocuments.count == 1, let (key, _) = record.serverDocuments.first else {
                throw DocError(.invalidArgument,
                               "a merged resolution replaces one document; failed write \(id) writes \(record.serverDocuments.count)",
                               at: "failed write \(id)")
            }
            let preconditions = try serverPreconditions()
            var mutation = try UserDataParser.set(key, data)
            mutation.precondition = preconditions[key] ?? .none
            return [mutation]
        }
    }

    /// Per document, the precondition "still the server's version shown"; `failedPrecondition`
    /// when a document's server version is not known on this device.
    private func serverPreconditions() throws(DocError) -> [DocumentKey: Precondition] {
        var preconditions: [DocumentKey: Precondition] = [:]
        for (key, server) in record.serverDocuments {
            guard let server else {
                throw DocError(.failedPrecondition,
                               "the server's version of \(key) is not known on this device: read it (get or listen) before resolving",
                               at: "failed write \(id)")
            }
            preconditions[key] = server.document.map { .updateTime($0.version) } ?? .exists(false)
        }
        return preconditions
    }
}

// Applying a mutation. One core (`effect(on:source:)`) writes the data, applies the mask and
// runs the transforms; the three contexts differ only in where transform values come from
// (`TransformSource`) and in how they treat preconditions, versions and flags.
//
// Transforms run on the data as the mutation wrote it (the server's order: the write, then its
// transforms), so a transform's previous value is the field after the set or patch. For a
// patch or a tombstone that is the base document's value (transforms may not target fields the
// patch writes); for a `set` it is nothing, so `set` + `increment(1)` yields 1, as the Firestore
// backend does. (Firestore's client reads the pre-set document for its local estimate and
// then corrects itself on acknowledgement; reading the written data keeps the local view and
// the server in agreement.)

/// Where the values of field transforms come from.
enum TransformSource {
    /// The local view: server timestamps are pending placeholders, the rest is computed.
    case localView(localWriteTime: Timestamp)
    /// The server's commit: server timestamps are the commit time, the rest is computed.
    case server(commitTime: Timestamp)
    /// An acknowledgement: the server's results, except array transforms, which the server
    /// does not report and the client recomputes.
    case acknowledged([Value])
}

extension TransformOperation {
    /// The value stored in the field, and the value reported in a ``MutationResult``.
    func apply(previous: Value?, source: TransformSource, index: Int) -> (stored: Value, reported: Value) {
        switch (self, source) {
        case (.serverTimestamp, .localView(let localWriteTime)):
            let pending = Value.pendingServerTimestamp(localWriteTime: localWriteTime, previous: previous)
            return (pending, pending)
        case (.serverTimestamp, .server(let commitTime)):
            return (.timestamp(commitTime), .timestamp(commitTime))
        case (.serverTimestamp, .acknowledged(let results)), (.increment, .acknowledged(let results)):
            // The server's value wins over any local estimate.
            return (results[index], results[index])
        case (.increment, .localView), (.increment, .server):
            let value = computed(from: previous)!
            return (value, value)
        case (.arrayUnion, .server), (.arrayRemove, .server):
            return (computed(from: previous)!, .null)
        case (.arrayUnion, _), (.arrayRemove, _):
            let value = computed(from: previous)!
            return (value, value)
        }
    }
}

extension Mutation {
    /// What the core decided.
    enum Effect {
        /// The document is left as it was (a verify).
        case unchanged
        /// The document is removed.
        case deleted
        /// The document exists with this data; one reported value per effective transform.
        case written(ObjectValue, transformResults: [Value])
    }

    /// The single implementation of a mutation's effect on data, shared by the local view, the
    /// server and acknowledgements. Preconditions are the caller's business.
    ///
    /// Returns `nil` only for an acknowledgement whose result list does not match the
    /// transforms (the resulting contents are then unknown).
    func effect(on base: MaybeDocument?, source: TransformSource) -> Effect? {
        var data: ObjectValue
        switch kind {
        case .verify:
            return .unchanged
        case .delete:
            return .deleted
        case .set(let value):
            data = value
        case .patch(let value, let mask):
            data = base?.document?.data ?? .empty
            for path in mask.paths {
                if let v = value[path] { data.set(v, at: path) } else { data.delete(at: path) }
            }
        case .tombstone:
            data = base?.document?.data ?? .empty
        }
        let transforms = effectiveTransforms
        if case .acknowledged(let results) = source, results.count != transforms.count { return nil }
        var results: [Value] = []
        results.reserveCapacity(transforms.count)
        for (index, transform) in transforms.enumerated() {
            let (stored, reported) = transform.operation.apply(
                previous: data[transform.path], source: source, index: index)
            data.set(stored, at: transform.path)
            results.append(reported)
        }
        return .written(data, transformResults: results)
    }

    // MARK: 1. Local view

    /// The document as the user sees it with this mutation applied locally, before the server
    /// has acknowledged it (latency compensation).
    ///
    /// - A failed precondition leaves `document` unchanged (as Firestore's local view), as does
    ///   a verify, and a document whose key is not ``key``.
    /// - A written document has `hasLocalMutations = true` and version `none` (its contents are
    ///   no committed version, as in Firestore); it keeps the base document's create time.
    /// - Server timestamps become ``Value/pendingServerTimestamp(localWriteTime:previous:)``;
    ///   increments and array transforms are computed from the local value.
    /// - A delete yields a ``NoDocument`` at version `none` with `hasLocalMutations = true`.
    public func applyToLocalView(_ document: MaybeDocument?, localWriteTime: Timestamp) -> MaybeDocument? {
        if let document, document.key != key { return document }
        guard precondition.isValid(for: document) else { return document }
        switch effect(on: document, source: .localView(localWriteTime: localWriteTime))! {
        case .unchanged:
            return document
        case .deleted:
            return .noDocument(NoDocument(key: key, version: SnapshotVersion.none, hasLocalMutations: true))
        case .written(let data, _):
            let base = document?.document
            return .document(Document(
                key: key, data: data, version: SnapshotVersion.none,
                createTime: base?.createTime ?? SnapshotVersion.none, hasLocalMutations: true))
        }
    }

    // MARK: 2. Server commit

    /// Commits the mutation on the server against the stored `document` (`nil` or a
    /// ``NoDocument`` when there is none) at `commitVersion`.
    ///
    /// Validates the mutation (``validate()``), checks the precondition, applies the mutation
    /// with server timestamps set to the commit time, and checks ``DocumentLimits`` on the
    /// result, all before returning anything to store. A written document has version
    /// `commitVersion`, keeps its create time when it existed and gets `commitVersion` as
    /// create time when new; a delete yields a ``NoDocument`` at `commitVersion`; a verify
    /// returns `document` unchanged.
    ///
    /// - Throws: `invalidArgument` for invalid mutations or results over the limits (and for a
    ///   document of another key); `notFound` when a document that must exist does not (e.g.
    ///   an update of a missing document); `alreadyExists` when one that must not exist does
    ///   (a create); `failedPrecondition` for an update-time mismatch; `internal` for an
    ///   ``UnknownDocument``, which a server never stores.
    public func applyOnServer(
        _ document: MaybeDocument?, commitVersion: SnapshotVersion
    ) throws(DocError) -> (MaybeDocument?, MutationResult) {
        if let document, document.key != key {
            throw DocError(.invalidArgument, "mutation of \(key) applied to document \(document.key)", at: key.description)
        }
        if case .unknown? = document {
            throw DocError(.internal, "the server has no unknown documents; \(key) must be stored or absent", at: key.description)
        }
        try validate()
        try checkPreconditionOnServer(document)
        let effect = effect(on: document, source: .server(commitTime: commitVersion.timestamp))!
        switch effect {
        case .unchanged:
            return (document, MutationResult(version: commitVersion))
        case .deleted:
            return (.noDocument(NoDocument(key: key, version: commitVersion)), MutationResult(version: commitVersion))
        case .written(let data, let results):
            try DocumentLimits.validate(data, for: key)
            let created = document?.document?.createTime ?? commitVersion
            let written = Document(key: key, data: data, version: commitVersion, createTime: created)
            return (.document(written), MutationResult(version: commitVersion, transformResults: results))
        }
    }

    private func checkPreconditionOnServer(_ document: MaybeDocument?) throws(DocError) {
        guard !precondition.isValid(for: document) else { return }
        let at = key.description
        switch precondition {
        case .exists(true):
            throw DocError(.notFound, "no document to update: \(key)", at: at)
        case .exists(false):
            throw DocError(.alreadyExists, "document already exists: \(key)", at: at)
        case .updateTime(let expected):
            let actual = document?.document.map { "update time \($0.version)" } ?? "no document"
            throw DocError(.failedPrecondition, "document \(key) does not have update time \(expected) (found \(actual))", at: at)
        case .none:
            return
        }
    }

    // MARK: 3. Acknowledgement

    /// The cached remote `document` once the server has acknowledged the mutation with
    /// `result`.
    ///
    /// The server accepted the write, so a set or delete applies whatever the cached state. A
    /// patch or tombstone whose precondition the cached document does not meet (e.g. an update
    /// of a document that is not cached) yields an ``UnknownDocument`` at `result.version`:
    /// the document exists but its contents are not known. So does a result whose transform
    /// results do not match the mutation. Server timestamps and increments take the server's
    /// values; array transforms are recomputed from the cached value (the server reports
    /// `null` for them). A written document has `version = result.version` and
    /// `hasCommittedMutations = true`; a delete yields a ``NoDocument`` with
    /// `hasCommittedMutations = true`; a verify leaves `document` unchanged.
    public func applyToRemoteDocument(_ document: MaybeDocument?, result: MutationResult) -> MaybeDocument? {
        if let document, document.key != key { return document }
        let unknown = MaybeDocument.unknown(UnknownDocument(key: key, version: result.version))
        switch kind {
        case .patch, .tombstone:
            guard precondition.isValid(for: document) else { return unknown }
        case .set, .delete, .verify:
            break
        }
        guard let effect = effect(on: document, source: .acknowledged(result.transformResults)) else {
            return unknown
        }
        switch effect {
        case .unchanged:
            return document
        case .deleted:
            return .noDocument(NoDocument(key: key, version: result.version, hasCommittedMutations: true))
        case .written(let data, _):
            let created = document?.document?.createTime ?? result.version
            return .document(Document(
                key: key, data: data, version: result.version, createTime: created,
                hasCommittedMutations: true))
        }
    }
}

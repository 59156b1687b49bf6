/// A write to one document, in the Firestore model: what it does (``Kind``), the field
/// transforms applied after it, and the precondition it needs.
///
/// One implementation applies a mutation in all three places it is applied:
/// - ``applyToLocalView(_:localWriteTime:)``: the latency-compensated local view, before the
///   server has seen the write;
/// - ``applyOnServer(_:commitVersion:)``: the server's commit;
/// - ``applyToRemoteDocument(_:result:)``: the client's cached document once the server has
///   acknowledged the write.
///
/// Equality is structural (data compared with ``Value/isIdentical(to:)``).
public struct Mutation: Sendable, Hashable, CustomStringConvertible {
    /// What a mutation does to its document.
    public enum Kind: Sendable, Hashable {
        /// Replaces the whole document with the data.
        case set(ObjectValue)
        /// Writes the fields in the mask: each masked path takes the data's value there, or is
        /// deleted when the data has none. Other fields are kept. A set-merge is a patch whose
        /// mask is the merge fields; `updateData` is a patch with precondition `exists(true)`.
        case patch(ObjectValue, FieldMask)
        /// Removes the document (a hard delete).
        case delete
        /// Soft-deletes the document: sets ``tombstoneField`` (`deletedAt`) and
        /// ``updatedAtField`` (`updatedAt`) to the commit time and keeps the other fields.
        /// Applied as a patch with an empty mask and two server-timestamp transforms (see
        /// ``Mutation/effectiveTransforms``), but kept as its own kind so the server and the
        /// API can tell a soft delete from an ordinary update.
        case tombstone
        /// Changes nothing; only checks the precondition (used by transactions for documents
        /// they read but do not write).
        case verify
    }

    /// The document written.
    public var key: DocumentKey
    /// What the mutation does.
    public var kind: Kind
    /// Transforms applied, in order, after the kind's data is written.
    public var fieldTransforms: [FieldTransform]
    /// What the document must satisfy for the mutation to apply.
    public var precondition: Precondition

    /// Whether the mutation's result does not depend on the document it applies to: a set
    /// without transforms or precondition (its local view is its data, whatever was there).
    package var replacesDocument: Bool {
        guard case .set = kind else { return false }
        return fieldTransforms.isEmpty && precondition == .none
    }

    /// Creates a mutation. The convenience constructors (``set(_:_:transforms:precondition:)``,
    /// ``setMerge(_:_:fields:transforms:)``, ``update(_:fields:deleting:transforms:)``,
    /// ``delete(_:precondition:)``, ``tombstone(_:transforms:precondition:)``,
    /// ``verify(_:_:)``) cover the usual cases.
    public init(
        key: DocumentKey, kind: Kind, fieldTransforms: [FieldTransform] = [],
        precondition: Precondition = .none
    ) {
        self.key = key
        self.kind = kind
        self.fieldTransforms = fieldTransforms
        self.precondition = precondition
    }

    // MARK: Convenience constructors

    /// Replaces the document with `data` (creating it if needed), then applies `transforms`.
    public static func set(
        _ key: DocumentKey, _ data: ObjectValue, transforms: [FieldTransform] = [],
        precondition: Precondition = .none
    ) -> Mutation {
        Mutation(key: key, kind: .set(data), fieldTransforms: transforms, precondition: precondition)
    }

    /// Creates the document with `data`; fails on the server if it already exists.
    public static func create(
        _ key: DocumentKey, _ data: ObjectValue, transforms: [FieldTransform] = []
    ) -> Mutation {
        set(key, data, transforms: transforms, precondition: .exists(false))
    }

    /// Merges `data` into the document (creating it if needed): a patch with precondition
    /// none.
    ///
    /// Without `fields`, the mask is every leaf path of `data` (nested maps merge field by
    /// field; an empty map is a leaf and replaces the field). With `fields`, only those paths
    /// are written, and a listed path that `data` lacks is deleted. Paths that are exactly the
    /// path of a transform are left out of the mask (the transform writes them).
    public static func setMerge(
        _ key: DocumentKey, _ data: ObjectValue, fields: [FieldPath]? = nil,
        transforms: [FieldTransform] = []
    ) -> Mutation {
        let transformed = Set(transforms.map(\.path))
        let paths = (fields ?? data.leafPaths).filter { !transformed.contains($0) }
        return Mutation(
            key: key, kind: .patch(data, FieldMask(paths)), fieldTransforms: transforms,
            precondition: .none)
    }

    /// Updates fields of an existing document (Firestore's `updateData`): a patch with
    /// precondition `exists(true)`. Each path in `fields` is set to its value, each path in
    /// `deleting` is removed; the rest of the document is kept.
    public static func update(
        _ key: DocumentKey, fields: [FieldPath: Value], deleting: [FieldPath] = [],
        transforms: [FieldTransform] = []
    ) -> Mutation {
        var data = ObjectValue()
        for path in fields.keys.sorted() { data.set(fields[path]!, at: path) }
        return Mutation(
            key: key, kind: .patch(data, FieldMask(Array(fields.keys) + deleting)),
            fieldTransforms: transforms, precondition: .exists(true))
    }

    /// Deletes the document (a hard delete). Succeeds on a missing document unless
    /// `precondition` says otherwise.
    public static func delete(_ key: DocumentKey, precondition: Precondition = .none) -> Mutation {
        Mutation(key: key, kind: .delete, precondition: precondition)
    }

    /// Soft-deletes the document: `deletedAt` and `updatedAt` become the commit time, the other
    /// fields stay. With precondition none a missing document becomes a tombstone holding
    /// only those two fields (so the soft delete is idempotent, like a delete).
    public static func tombstone(
        _ key: DocumentKey, transforms: [FieldTransform] = [], precondition: Precondition = .none
    ) -> Mutation {
        Mutation(key: key, kind: .tombstone, fieldTransforms: transforms, precondition: precondition)
    }

    /// Checks `precondition` without writing (for transactions).
    public static func verify(_ key: DocumentKey, _ precondition: Precondition) -> Mutation {
        Mutation(key: key, kind: .verify, precondition: precondition)
    }

    // MARK: Derived properties

    /// The transforms the mutation applies, in order: for a tombstone the implicit
    /// server timestamps of `deletedAt` and `updatedAt`, then ``fieldTransforms``.
    /// ``MutationResult/transformResults`` has one value per element, in this order.
    public var effectiveTransforms: [FieldTransform] {
        guard case .tombstone = kind else { return fieldTransforms }
        return Self.tombstoneTransforms + fieldTransforms
    }

    static let tombstoneTransforms = [
        FieldTransform.serverTimestamp(FieldPath(unchecked: [tombstoneField])),
        FieldTransform.serverTimestamp(FieldPath(unchecked: [updatedAtField])),
    ]

    /// Whether the mutation is a soft delete.
    public var isTombstone: Bool { if case .tombstone = kind { return true } else { return false } }

    /// Whether applying the mutation twice leaves the document as applying it once (it has no
    /// increment).
    public var isIdempotent: Bool { effectiveTransforms.allSatisfy(\.operation.isIdempotent) }

    /// The key, kind, data, transforms and precondition, for logs.
    public var description: String {
        var text: String
        switch kind {
        case .set(let data): text = "set(\(Value.map(data.fields).canonicalString))"
        case .patch(let data, let mask): text = "patch(\(Value.map(data.fields).canonicalString), mask: \(mask))"
        case .delete: text = "delete"
        case .tombstone: text = "tombstone"
        case .verify: text = "verify"
        }
        if !fieldTransforms.isEmpty { text += ", transforms: \(fieldTransforms)" }
        if !precondition.isNone { text += ", \(precondition)" }
        return "Mutation(\(key): \(text))"
    }
}

/// The server's answer to one mutation of a committed batch.
public struct MutationResult: Sendable, Hashable, CustomStringConvertible {
    /// The commit version of the write (the document's new update time).
    public var version: SnapshotVersion
    /// One value per ``Mutation/effectiveTransforms`` element: the commit time for a server
    /// timestamp, the new number for an increment, and `null` for array union and remove
    /// (as Firestore's backend sends; the client recomputes those).
    public var transformResults: [Value]

    /// Creates a result; `transformResults` defaults to none (mutations without transforms).
    public init(version: SnapshotVersion, transformResults: [Value] = []) {
        self.version = version
        self.transformResults = transformResults
    }

    /// The version and transform results, for logs.
    public var description: String {
        "MutationResult(version: \(version), transformResults: \(Value.array(transformResults).canonicalString))"
    }
}

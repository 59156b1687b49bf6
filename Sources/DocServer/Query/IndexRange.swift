package import DocModel

/// One end of a range of index values: an index encoding (``DocModel/Value/indexEncoded(descending:)``,
/// or a one-byte type tag that brackets every value of a type) and whether entries with
/// exactly that encoding are in the range. Encodings compare bytewise (`memcmp`, PostgreSQL
/// `bytea`), which is `Value.compare` order.
package struct IndexValueBound: Sendable, Hashable, CustomStringConvertible {
    /// The encoded end value.
    package var encoded: [UInt8]
    /// Whether entries whose value encoding equals ``encoded`` are included.
    package var inclusive: Bool

    package init(encoded: [UInt8], inclusive: Bool) {
        self.encoded = encoded
        self.inclusive = inclusive
    }

    /// A bound at `value`.
    package init(_ value: Value, inclusive: Bool) {
        self.init(encoded: value.indexEncoded(), inclusive: inclusive)
    }

    package var description: String {
        (inclusive ? "incl " : "excl ") + encoded.map { String($0, radix: 16) }.joined(separator: ".")
    }
}

/// The entries of one field index that a plan reads: documents directly in ``collection``
/// whose value (or array element, by ``kind``) at ``field`` has an encoding within the bounds.
/// An open end reaches every value of every type on that side.
package struct IndexRange: Sendable, Hashable, CustomStringConvertible {
    /// The collection whose index is read.
    package var collection: ResourcePath
    /// The indexed field (never `__name__`).
    package var field: FieldPath
    /// The field's value index or its array-element index.
    package var kind: IndexKind
    /// The lowest encodings in the range; `nil`: no lower end.
    package var lower: IndexValueBound?
    /// The highest encodings in the range; `nil`: no upper end.
    package var upper: IndexValueBound?

    package init(
        collection: ResourcePath, field: FieldPath, kind: IndexKind,
        lower: IndexValueBound? = nil, upper: IndexValueBound? = nil
    ) {
        self.collection = collection
        self.field = field
        self.kind = kind
        self.lower = lower
        self.upper = upper
    }

    /// The range of the entries equal to `value`.
    package init(collection: ResourcePath, field: FieldPath, kind: IndexKind, equalTo value: Value) {
        let bound = IndexValueBound(value, inclusive: true)
        self.init(collection: collection, field: field, kind: kind, lower: bound, upper: bound)
    }

    /// The one encoding the range holds, when it is a point (both ends that encoding,
    /// inclusive: ``init(collection:field:kind:equalTo:)``); else `nil`.
    package var pointEncoding: [UInt8]? {
        guard let lower, let upper, lower.inclusive, upper.inclusive, lower.encoded == upper.encoded else { return nil }
        return lower.encoded
    }

    /// Whether the range has a finite end on either side.
    package var isBounded: Bool { lower != nil || upper != nil }

    /// Whether no encoding can lie within the bounds.
    package var isEmpty: Bool {
        guard let lower, let upper else { return false }
        let c = OrderedCode.compare(lower.encoded, upper.encoded)
        return c > 0 || (c == 0 && !(lower.inclusive && upper.inclusive))
    }

    /// Narrows the lower end to `bound` where that is tighter (an exclusive end wins a tie).
    package mutating func restrict(lower bound: IndexValueBound) {
        guard let lower else { self.lower = bound; return }
        let c = OrderedCode.compare(bound.encoded, lower.encoded)
        if c > 0 || (c == 0 && !bound.inclusive) { self.lower = bound }
    }

    /// Narrows the upper end to `bound` where that is tighter (an exclusive end wins a tie).
    package mutating func restrict(upper bound: IndexValueBound) {
        guard let upper else { self.upper = bound; return }
        let c = OrderedCode.compare(bound.encoded, upper.encoded)
        if c < 0 || (c == 0 && !bound.inclusive) { self.upper = bound }
    }

    /// The range as value encodings `[lower, upper)` compared bytewise (`nil`: open on that
    /// side), the one rule both stores read an index by: an exclusive lower end and an
    /// inclusive upper end reach past every encoding that starts with the bound (a type tag
    /// brackets its whole type) by appending ``OrderedCode/infinity``, which sorts after any
    /// continuation.
    package func encodedBounds() -> (lower: [UInt8]?, upper: [UInt8]?) {
        (lower.map { $0.inclusive ? $0.encoded : $0.encoded + OrderedCode.infinity },
         upper.map { $0.inclusive ? $0.encoded + OrderedCode.infinity : $0.encoded })
    }

    /// Whether an entry whose value encoding is `encoded` lies within the bounds
    /// (``encodedBounds()``, compared as the stores compare them).
    package func contains(encoded: [UInt8]) -> Bool {
        let bounds = encodedBounds()
        if let lower = bounds.lower, OrderedCode.compare(encoded, lower) < 0 { return false }
        if let upper = bounds.upper, OrderedCode.compare(encoded, upper) >= 0 { return false }
        return true
    }

    /// Whether `entries` (a document's) hold an entry of this index within the bounds.
    package func holdsEntry(among entries: DocumentIndexEntries) -> Bool {
        let field = field.canonicalString
        return entries.entries.contains { $0.kind == kind && $0.field == field && contains(encoded: $0.value) }
    }

    package var description: String {
        "\(collection.canonicalString).\(field.canonicalString) \(kind) [\(lower?.description ?? "open"), \(upper?.description ?? "open")]"
    }
}

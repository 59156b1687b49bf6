package import DocModel

/// An entry a document must have for a query to match it: from an `==` or `array-contains`
/// filter, the filter value's encoding in the field's value (or array-element) index. A
/// document without that entry cannot match, so an index walk skips it without reading it.
package struct IndexProbe: Sendable, Hashable, CustomStringConvertible {
    /// The field.
    package var field: FieldPath
    /// The field's value index (`==`) or its array-element index (`array-contains`).
    package var kind: IndexKind
    /// The filter value's index encoding (at most ``DocumentIndexEntries/maxEncodedValueBytes``).
    package var value: [UInt8]

    package init(field: FieldPath, kind: IndexKind, value: [UInt8]) {
        self.field = field
        self.kind = kind
        self.value = value
    }

    /// Whether `entries` (a document's) hold the probed entry.
    package func isHeld(among entries: DocumentIndexEntries) -> Bool {
        let field = field.canonicalString
        return entries.entries.contains { $0.kind == kind && $0.field == field && $0.value == value }
    }

    package var description: String { "\(field.canonicalString) \(kind) has \(value.count) bytes" }
}

/// One page of an index walk
/// (``QueryIndexReader/walkPage(_:requiring:after:descending:limit:maxMatches:)``): how far it
/// read, and the documents of the entries read that have every required entry.
package struct IndexWalkPage: Sendable {
    /// The entries read that have every required entry, with their documents, in the order
    /// read.
    package var matches: [(entry: IndexPosition, document: Document)]
    /// The number of entries read: the page's limit, or fewer when the page stopped at its
    /// most matches or the range ended.
    package var examined: Int
    /// The last entry read, where the next page starts (`nil`: none read).
    package var last: IndexPosition?

    package init(matches: [(entry: IndexPosition, document: Document)], examined: Int, last: IndexPosition?) {
        self.matches = matches
        self.examined = examined
        self.last = last
    }
}

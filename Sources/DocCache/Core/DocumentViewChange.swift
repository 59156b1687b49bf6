package import DocModel

/// A change to one document with respect to a view.
package struct DocumentViewChange: Sendable, Hashable, CustomStringConvertible {
    /// What happened to the document. The declaration order is the order changes are
    /// reported in (removals first), except that ``metadata`` sorts with ``modified``.
    package enum Kind: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// The document left the view; the change carries the document as it was.
        case removed
        /// The document entered the view.
        case added
        /// The document's contents changed (it stayed in the view).
        case modified
        /// Only the document's pending-write state changed (user-facing: `modified`, and only
        /// for listeners that asked for metadata changes).
        case metadata

        /// The rank used to order a snapshot's changes: removed, added, then modified and
        /// metadata together.
        package var sortRank: Int {
            switch self {
            case .removed: return 0
            case .added: return 1
            case .modified, .metadata: return 2
            }
        }

        package var description: String {
            switch self {
            case .removed: return "removed"
            case .added: return "added"
            case .modified: return "modified"
            case .metadata: return "metadata"
            }
        }
    }

    package var kind: Kind
    /// The new document (for ``Kind/removed``, the document that left the view).
    package var document: Document

    package init(_ kind: Kind, _ document: Document) {
        self.kind = kind
        self.document = document
    }

    package var description: String { "\(kind)(\(document.key))" }
}

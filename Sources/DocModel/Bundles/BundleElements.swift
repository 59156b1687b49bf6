// The elements of a Firestore data bundle, as this package reads and writes them.
//
// A bundle is a sequence of elements, each written as its length in UTF-8 bytes (decimal
// ASCII digits) followed by that many bytes of JSON: one object with a single member naming
// the element's kind. The first element is the `metadata`; then come `namedQuery` elements and,
// for every document, a `documentMetadata` element followed by the `document` itself when the
// document exists. BundleReader.swift reads them, BundleWriter.swift writes them, and
// docs/bundles.md describes the format and what loading one does.

/// The first element of a bundle: which bundle it is, when it was built, and its totals.
public struct BundleMetadata: Sendable, Hashable {
    /// The bundle's id: with ``createTime``, what tells whether a client already loaded it.
    public var id: String
    /// When the bundle was built (the server's snapshot version, in microseconds).
    public var createTime: SnapshotVersion
    /// The schema version of the bundle format (1 for every bundle Firestore and this package write).
    public var version: Int
    /// How many documents (found or deleted) the bundle holds.
    public var totalDocuments: Int
    /// The bytes of every element after the metadata element, length prefixes included.
    public var totalBytes: Int64

    /// Creates metadata as given; ``BundleReader`` checks the totals against the elements that
    /// follow.
    public init(id: String, createTime: SnapshotVersion, version: Int = 1, totalDocuments: Int, totalBytes: Int64) {
        self.id = id
        self.createTime = createTime
        self.version = version
        self.totalDocuments = totalDocuments
        self.totalBytes = totalBytes
    }
}

/// A query saved under a name in a bundle (Firestore's `NamedQuery`), with the time its results
/// were read: the bundle's documents that list this name are its results at `readTime`.
public struct BundleNamedQuery: Sendable, Hashable {
    /// The query's name, as documents list it in ``BundledDocumentMetadata/queries``; a reader
    /// refuses an empty name or one used twice in a bundle.
    public var name: String
    /// The query as the user wrote it (a `limit(toLast:)` query keeps its own order and cursors).
    public var query: Query
    /// When the query's results were read on the server.
    public var readTime: SnapshotVersion

    /// Creates a named query as given (not checked here).
    public init(name: String, query: Query, readTime: SnapshotVersion) {
        self.name = name
        self.query = query
        self.readTime = readTime
    }
}

/// What a bundle says about one document before the document itself: its key, when it was
/// read, whether it exists, and the named queries whose results it belongs to.
public struct BundledDocumentMetadata: Sendable, Hashable {
    /// The document's path.
    public var key: DocumentKey
    /// When the document was read on the server (a deleted document is known absent then).
    public var readTime: SnapshotVersion
    /// Whether the document exists; when it does, a `document` element follows.
    public var exists: Bool
    /// The names of the bundle's named queries whose results include the document.
    public var queries: [String]

    /// Creates a document's metadata as given.
    public init(key: DocumentKey, readTime: SnapshotVersion, exists: Bool, queries: [String] = []) {
        self.key = key
        self.readTime = readTime
        self.exists = exists
        self.queries = queries
    }
}

/// One element of a bundle.
public enum BundleElement: Sendable, Hashable {
    /// The bundle's metadata; a bundle has exactly one, as its first element.
    case metadata(BundleMetadata)
    /// A query saved under a name.
    case namedQuery(BundleNamedQuery)
    /// What the bundle says about one document; followed by ``document(_:)`` when it exists.
    case documentMetadata(BundledDocumentMetadata)
    /// A document's contents; its version is its `updateTime`.
    case document(Document)

    /// The element's kind as the format names it (`metadata`, `namedQuery`, …).
    public var kind: String {
        switch self {
        case .metadata: return BundleElementKind.metadata
        case .namedQuery: return BundleElementKind.namedQuery
        case .documentMetadata: return BundleElementKind.documentMetadata
        case .document: return BundleElementKind.document
        }
    }
}

/// The member names of the four element kinds.
enum BundleElementKind {
    static let metadata = "metadata"
    static let namedQuery = "namedQuery"
    static let documentMetadata = "documentMetadata"
    static let document = "document"
    static let all = [metadata, namedQuery, documentMetadata, document]
}

/// One document of a bundle: its metadata and, when it exists, its contents.
public struct BundledDocument: Sendable, Hashable {
    /// The document's key, read time, existence and named queries.
    public var metadata: BundledDocumentMetadata
    /// The document, or `nil` when the bundle says it does not exist.
    public var document: Document?

    /// Pairs a document's metadata with its contents (`nil` for a document that does not exist).
    public init(metadata: BundledDocumentMetadata, document: Document?) {
        self.metadata = metadata
        self.document = document
    }

    /// The document's path, from its metadata.
    public var key: DocumentKey { metadata.key }

    /// The document as a cache stores it: found at its update time, or known absent at the
    /// bundle's read time.
    public var maybeDocument: MaybeDocument {
        if let document { return .document(document) }
        return .noDocument(NoDocument(key: metadata.key, version: metadata.readTime))
    }
}

/// A whole bundle, read and checked (``init(bytes:)``): its metadata, its named queries and
/// its documents, in the order the bundle lists them.
public struct DocumentBundle: Sendable, Hashable {
    /// The bundle's first element: its id, creation time and totals.
    public var metadata: BundleMetadata
    /// The named queries, in bundle order.
    public var namedQueries: [BundleNamedQuery]
    /// Every document, found or deleted, in bundle order.
    public var documents: [BundledDocument]

    /// Assembles a bundle from its parts without checking them (``init(bytes:)`` reads and checks).
    public init(metadata: BundleMetadata, namedQueries: [BundleNamedQuery], documents: [BundledDocument]) {
        self.metadata = metadata
        self.namedQueries = namedQueries
        self.documents = documents
    }

    /// Reads and checks a whole bundle (see ``BundleReader``): the first error is an
    /// `invalidArgument` naming the element and its byte offset.
    public init(bytes: [UInt8]) throws(DocError) {
        var reader = BundleReader(bytes)
        _ = try reader.readMetadata()
        while try reader.next() != nil {}
        self = try reader.finish()
    }

    /// The keys of the documents that belong to the named query `name`.
    public func documentKeys(ofQuery name: String) -> [DocumentKey] {
        documents.filter { $0.metadata.queries.contains(name) }.map(\.key)
    }
}

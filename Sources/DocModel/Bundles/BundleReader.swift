/// Reads a bundle element by element, checking it as it goes (Firestore's `BundleReader` and
/// `BundleLoader` in one).
///
/// Framing: an element is its length prefix (decimal ASCII digits, at most 16, optionally
/// surrounded by ASCII whitespace) followed by exactly that many bytes of JSON, which must be
/// one object with a single member: `metadata`, `namedQuery`, `documentMetadata` or
/// `document`. Whitespace after the last element is allowed.
///
/// Order: the metadata comes first and only once; named queries may come anywhere after it
/// (their names unique); a `documentMetadata` that says the document exists is followed by
/// that document's `document` element, and by nothing else; no document is listed twice.
/// At the end the counts must equal the metadata's `totalDocuments` and `totalBytes` (the bytes
/// of every element after the metadata, length prefixes included).
///
/// Every problem is a `DocError(.invalidArgument, …)` whose location names the element (counted
/// from 1, the metadata being element 1) and the byte offset where it starts, or the end of
/// the bundle for the totals. Reading has no side effects: a caller applies a bundle only after
/// ``finish()`` succeeded, so a bad bundle applies nothing.
public struct BundleReader {
    private let bytes: [UInt8]
    private var position = 0
    /// Elements read so far (the metadata included).
    public private(set) var elementsRead = 0
    /// The metadata, once ``readMetadata()`` has read it.
    public private(set) var metadata: BundleMetadata?
    /// Documents complete so far: a deleted one at its metadata, a found one at its contents.
    public private(set) var documentsRead = 0
    /// Bytes of the elements read after the metadata (what ``BundleMetadata/totalBytes`` counts).
    public private(set) var bytesRead: Int64 = 0

    private var namedQueries: [BundleNamedQuery] = []
    private var queryNames: Set<String> = []
    private var documents: [BundledDocument] = []
    private var documentKeys: Set<DocumentKey> = []
    /// The metadata of a found document whose contents must come next.
    private var awaiting: (metadata: BundledDocumentMetadata, element: Int, offset: Int)?

    /// The longest length prefix accepted (16 digits already mean a petabyte).
    static let maxPrefixDigits = 16

    /// A reader of the whole bundle `bytes`; nothing is read or checked until ``readMetadata()``
    /// or ``next()``.
    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Reads the first element, which must be the metadata.
    public mutating func readMetadata() throws(DocError) -> BundleMetadata {
        if let metadata { return metadata }
        guard let (element, index, offset, _) = try readElement() else {
            throw DocError(.invalidArgument, "the bundle is empty: it must start with a metadata element",
                           at: "bundle element 1 at byte offset 0")
        }
        guard case .metadata(let m) = element else {
            throw Self.error("the first element of a bundle must be the metadata, not a \(element.kind)", index, offset)
        }
        metadata = m
        return m
    }

    /// Reads the next element after the metadata (reading the metadata first if needed);
    /// `nil` at the end of the bundle. Documents and named queries are kept for ``finish()``.
    @discardableResult
    public mutating func next() throws(DocError) -> BundleElement? {
        _ = try readMetadata()
        guard let (element, index, offset, size) = try readElement() else { return nil }
        bytesRead += Int64(size)
        switch element {
        case .metadata:
            throw Self.error("a bundle has one metadata element, at its start; this is a second one", index, offset)
        case .namedQuery(let query):
            try checkNoDocumentAwaited(before: element, index, offset)
            guard queryNames.insert(query.name).inserted else {
                throw Self.error("the named query \"\(query.name)\" appears twice", index, offset)
            }
            namedQueries.append(query)
        case .documentMetadata(let m):
            try checkNoDocumentAwaited(before: element, index, offset)
            guard documentKeys.insert(m.key).inserted else {
                throw Self.error("the document \(m.key) appears twice", index, offset)
            }
            if m.exists {
                awaiting = (m, index, offset)
            } else {
                documents.append(BundledDocument(metadata: m, document: nil))
                documentsRead += 1
            }
        case .document(let document):
            guard let (m, _, _) = awaiting else {
                throw Self.error("the document \(document.key) is not preceded by its documentMetadata element", index, offset)
            }
            guard m.key == document.key else {
                throw Self.error("the document \(document.key) follows the documentMetadata of \(m.key)", index, offset)
            }
            awaiting = nil
            documents.append(BundledDocument(metadata: m, document: document))
            documentsRead += 1
        }
        return element
    }

    /// After the last element: checks that nothing is missing and that the totals agree, and
    /// returns the bundle.
    public mutating func finish() throws(DocError) -> DocumentBundle {
        let metadata = try readMetadata()
        let end = "end of bundle (byte offset \(bytes.count))"
        if let (m, index, offset) = awaiting {
            throw DocError(.invalidArgument,
                "the bundle ends after the documentMetadata of \(m.key), which says the document exists, without the document",
                at: "bundle element \(index) at byte offset \(offset)")
        }
        guard position >= bytes.count || bytes[position...].allSatisfy(Self.isWhitespace) else {
            throw DocError(.invalidArgument, "finish() was called before the last element was read", at: end)
        }
        guard documentsRead == metadata.totalDocuments else {
            throw DocError(.invalidArgument,
                "the metadata says the bundle holds \(metadata.totalDocuments) document\(metadata.totalDocuments == 1 ? "" : "s"), but it holds \(documentsRead)",
                at: end)
        }
        guard bytesRead == metadata.totalBytes else {
            throw DocError(.invalidArgument,
                "the metadata says the elements after it take \(metadata.totalBytes) bytes, but they take \(bytesRead)",
                at: end)
        }
        return DocumentBundle(metadata: metadata, namedQueries: namedQueries, documents: documents)
    }

    // MARK: Framing

    private func checkNoDocumentAwaited(before element: BundleElement, _ index: Int, _ offset: Int) throws(DocError) {
        if let (m, _, _) = awaiting {
            throw Self.error("expected the document \(m.key) after its documentMetadata (which says it exists), found a \(element.kind) element", index, offset)
        }
    }

    static func isWhitespace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }

    static func error(_ message: String, _ index: Int, _ offset: Int) -> DocError {
        DocError(.invalidArgument, message, at: "bundle element \(index) at byte offset \(offset)")
    }

    /// The next element, its number, the byte offset where it starts and its size in bytes
    /// (prefix and JSON); `nil` at the end.
    private mutating func readElement() throws(DocError) -> (BundleElement, Int, Int, Int)? {
        let start = position
        var i = position
        while i < bytes.count, Self.isWhitespace(bytes[i]) { i += 1 }
        if i == bytes.count {
            position = i
            return nil
        }
        let index = elementsRead + 1
        var length: UInt64 = 0
        var digits = 0
        while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") {
            digits += 1
            guard digits <= Self.maxPrefixDigits else {
                throw Self.error("the length prefix has more than \(Self.maxPrefixDigits) digits", index, start)
            }
            length = length * 10 + UInt64(bytes[i] - UInt8(ascii: "0"))
            i += 1
        }
        while i < bytes.count, Self.isWhitespace(bytes[i]) { i += 1 }
        guard i < bytes.count else {
            throw Self.error(digits == 0 ? "expected a length prefix, found the end of the bundle"
                                         : "the bundle ends after the length prefix, before its JSON", index, start)
        }
        guard bytes[i] == UInt8(ascii: "{") else {
            let found = JSONReader.describe(byte: bytes[i])
            if digits == 0 {
                throw Self.error("the length prefix is not a number: expected decimal digits, found \(found)", index, start)
            }
            throw Self.error("expected a JSON object after the length prefix \(length), found \(found)", index, start)
        }
        guard digits > 0 else {
            throw Self.error("the element has no length prefix: expected decimal digits before '{'", index, start)
        }
        let jsonStart = i
        let available = bytes.count - jsonStart
        guard length <= UInt64(available) else {
            throw Self.error("the element is truncated: its length prefix says \(length) bytes, but only \(available) remain", index, start)
        }
        let jsonEnd = jsonStart + Int(length)
        let json = Array(bytes[jsonStart..<jsonEnd])
        let node: JSONNode
        do {
            node = try JSONReader.parse(json, maxDepth: BundleJSON.maxJSONDepth)
        } catch {
            var detail = error.message
            if detail.hasPrefix("invalid JSON: ") { detail.removeFirst("invalid JSON: ".count) }
            throw Self.error("the element is not valid JSON: \(detail) (at \(error.location ?? "?") of the element's JSON)", index, start)
        }
        guard case .object(let members) = node.kind else {
            throw Self.error("the element is not a JSON object", index, start)
        }
        guard members.count == 1, let member = members.first else {
            throw Self.error("an element is an object with exactly one member (\(BundleElementKind.all.joined(separator: ", "))); this one has \(members.count)", index, start)
        }
        let element: BundleElement
        do {
            element = try BundleJSON.decodeElement(kind: member.key, BundleJSON.Node(member.value, path: member.key))
        } catch {
            throw Self.error(error.message, index, start)
        }
        position = jsonEnd
        elementsRead = index
        return (element, index, start, jsonEnd - start)
    }
}

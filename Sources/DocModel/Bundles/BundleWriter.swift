/// Builds a bundle in Firestore's format (see BundleReader.swift): the metadata, then every
/// named query, then every document (its `documentMetadata`, and its `document` when it
/// exists). The metadata's totals are computed when the bytes are made.
///
/// Values are written in Firestore's typed JSON (`integerValue` as a decimal string, doubles as
/// numbers or `"NaN"` / `"Infinity"` / `"-Infinity"`, timestamps in RFC 3339, bytes in
/// base64); an attachment reference, which Firestore has no kind for, is written as
/// `{"attachmentValue": "<hex id>"}` (Firestore's clients would refuse such a bundle).
///
/// ```swift
/// var writer = BundleWriter(id: "latest-prices", createTime: readTime)
/// try writer.add(BundleNamedQuery(name: "latest-prices", query: query, readTime: readTime))
/// for document in results { writer.add(document, readTime: readTime, queries: ["latest-prices"]) }
/// let bytes = writer.bytes()
/// ```
public struct BundleWriter: Sendable {
    /// The database part of the resource names written when none is given.
    public static let defaultDatabase = ResourceName.defaultDatabase

    /// The bundle's id, written in the metadata (a reader refuses an empty one).
    public var id: String
    /// When the bundle was built, written in the metadata.
    public var createTime: SnapshotVersion
    /// `projects/{project}/databases/{database}`: the prefix of every resource name written.
    public var database: String
    private var queries: [[UInt8]] = []
    private var documents: [[UInt8]] = []
    private var documentCount = 0

    /// Starts an empty bundle; `database` prefixes every resource name written.
    public init(id: String, createTime: SnapshotVersion, database: String = BundleWriter.defaultDatabase) {
        self.id = id
        self.createTime = createTime
        self.database = database
    }

    /// Adds a named query; a query of a single document has no `StructuredQuery` form and is
    /// refused (`invalidArgument`).
    public mutating func add(_ query: BundleNamedQuery) throws(DocError) {
        try checkWritable(query.query)
        queries.append(Self.frame(element(BundleElementKind.namedQuery) { Self.write(query, database: database, to: &$0) }))
    }

    /// Adds a document that exists, read at `readTime`, in the results of the named queries `queries`.
    public mutating func add(_ document: Document, readTime: SnapshotVersion, queries: [String] = []) {
        let metadata = BundledDocumentMetadata(key: document.key, readTime: readTime, exists: true, queries: queries)
        documents.append(Self.frame(element(BundleElementKind.documentMetadata) { Self.write(metadata, database: database, to: &$0) }))
        documents.append(Self.frame(element(BundleElementKind.document) { Self.write(document, database: database, to: &$0) }))
        documentCount += 1
    }

    /// Adds a document known not to exist at `readTime`.
    public mutating func addDeleted(_ key: DocumentKey, readTime: SnapshotVersion, queries: [String] = []) {
        let metadata = BundledDocumentMetadata(key: key, readTime: readTime, exists: false, queries: queries)
        documents.append(Self.frame(element(BundleElementKind.documentMetadata) { Self.write(metadata, database: database, to: &$0) }))
        documentCount += 1
    }

    /// The bundle's metadata as ``bytes()`` writes it.
    public var metadata: BundleMetadata {
        let total = (queries + documents).reduce(0) { $0 + $1.count }
        return BundleMetadata(id: id, createTime: createTime, version: 1, totalDocuments: documentCount, totalBytes: Int64(total))
    }

    /// The bundle.
    public func bytes() -> [UInt8] {
        let meta = metadata
        var out = Self.frame(element(BundleElementKind.metadata) { w in
            Self.members(&w, [
                ("id", { $0.writeString(meta.id) }),
                ("createTime", { $0.writeString(meta.createTime.timestamp.rfc3339) }),
                ("version", { $0.writeInteger(Int64(meta.version)) }),
                ("totalDocuments", { $0.writeInteger(Int64(meta.totalDocuments)) }),
                ("totalBytes", { $0.writeInteger(meta.totalBytes) }),
            ])
        })
        for element in queries { out += element }
        for element in documents { out += element }
        return out
    }

    // MARK: Elements

    private func checkWritable(_ query: Query) throws(DocError) {
        if query.collectionGroup == nil && query.path.count % 2 == 0 {
            throw DocError(.invalidArgument, "a named query must query a collection or a collection group, not a single document",
                           at: "query \(query.path)")
        }
    }

    /// `{"<kind>": <body>}`.
    private func element(_ kind: String, _ body: (inout JSONWriter) -> Void) -> [UInt8] {
        var w = JSONWriter()
        withoutActuallyEscaping(body) { Self.members(&w, [(kind, $0)]) }
        return w.bytes
    }

    /// The length prefix and the JSON.
    static func frame(_ json: [UInt8]) -> [UInt8] { Array(String(json.count).utf8) + json }

    /// Writes an object with the given members in order.
    static func members(_ w: inout JSONWriter, _ members: [(String, (inout JSONWriter) -> Void)]) {
        w.open(UInt8(ascii: "{"))
        for (i, (key, body)) in members.enumerated() {
            w.item(first: i == 0)
            w.key(key)
            body(&w)
        }
        w.close(UInt8(ascii: "}"), empty: members.isEmpty)
    }

    /// Writes an array of `items`, each written by `body`.
    static func array<Items: Collection>(_ w: inout JSONWriter, _ items: Items, _ body: (inout JSONWriter, Items.Element) -> Void) {
        w.open(UInt8(ascii: "["))
        for (i, item) in items.enumerated() {
            w.item(first: i == 0)
            body(&w, item)
        }
        w.close(UInt8(ascii: "]"), empty: items.isEmpty)
    }

    static func write(_ metadata: BundledDocumentMetadata, database: String, to w: inout JSONWriter) {
        var members: [(String, (inout JSONWriter) -> Void)] = [
            ("name", { $0.writeString(ResourceName.of(metadata.key.path, database: database)) }),
            ("readTime", { $0.writeString(metadata.readTime.timestamp.rfc3339) }),
            ("exists", { $0.writeBool(metadata.exists) }),
        ]
        if !metadata.queries.isEmpty {
            members.append(("queries", { w in
                array(&w, metadata.queries) { w, q in
                    w.writeString(q)
                }
            }))
        }
        Self.members(&w, members)
    }

    static func write(_ document: Document, database: String, to w: inout JSONWriter) {
        var fields: [(String, (inout JSONWriter) -> Void)] = [
            ("name", { $0.writeString(ResourceName.of(document.key.path, database: database)) }),
            ("fields", { writeFields(document.data.fields, database: database, to: &$0) }),
        ]
        if document.createTime != .none {
            fields.append(("createTime", { $0.writeString(document.createTime.timestamp.rfc3339) }))
        }
        fields.append(("updateTime", { $0.writeString(document.version.timestamp.rfc3339) }))
        members(&w, fields)
    }

    static func write(_ query: BundleNamedQuery, database: String, to w: inout JSONWriter) {
        members(&w, [
            ("name", { $0.writeString(query.name) }),
            ("bundledQuery", { writeBundledQuery(query.query, database: database, to: &$0) }),
            ("readTime", { $0.writeString(query.readTime.timestamp.rfc3339) }),
        ])
    }

    static func writeBundledQuery(_ query: Query, database: String, to w: inout JSONWriter) {
        let parent = query.collectionGroup == nil ? ResourcePath(unchecked: Array(query.path.segments.dropLast())) : query.path
        let collectionID = query.collectionGroup ?? query.path.lastSegment ?? ""
        var structured: [(String, (inout JSONWriter) -> Void)] = [
            ("from", { w in
                var source: [(String, (inout JSONWriter) -> Void)] = [("collectionId", { $0.writeString(collectionID) })]
                if query.collectionGroup != nil { source.append(("allDescendants", { $0.writeBool(true) })) }
                array(&w, [source]) { w, source in members(&w, source) }
            }),
        ]
        if !query.filters.isEmpty {
            let top: Filter = query.filters.count == 1 ? query.filters[0] : .and(query.filters)
            structured.append(("where", { writeFilter(top, database: database, to: &$0) }))
        }
        if !query.explicitOrderBys.isEmpty {
            structured.append(("orderBy", { w in
                array(&w, query.explicitOrderBys) { w, orderBy in
                    members(&w, [
                        ("field", { writeFieldReference(orderBy.field, to: &$0) }),
                        ("direction", { $0.writeString(orderBy.isDescending ? "DESCENDING" : "ASCENDING") }),
                    ])
                }
            }))
        }
        for (key, bound, before) in [("startAt", query.startAt, query.startAt?.inclusive == true),
                                     ("endAt", query.endAt, query.endAt?.inclusive == false)] {
            guard let bound else { continue }
            structured.append((key, { w in
                members(&w, [
                    ("values", { w in
                        array(&w, bound.position) { w, v in
                            writeValue(v, database: database, to: &w)
                        }
                    }),
                    ("before", { $0.writeBool(before) }),
                ])
            }))
        }
        if let limit = query.limit {
            structured.append(("limit", { $0.writeInteger(Int64(limit)) }))
        }
        var bundled: [(String, (inout JSONWriter) -> Void)] = [
            ("parent", { $0.writeString(ResourceName.of(parent, database: database)) }),
            ("structuredQuery", { members(&$0, structured) }),
            ("limitType", { $0.writeString(query.limit != nil && query.limitType == .last ? "LAST" : "FIRST") }),
        ]
        if query.includeDeleted { bundled.append(("includeDeleted", { $0.writeBool(true) })) }
        members(&w, bundled)
    }

    static func writeFieldReference(_ field: FieldPath, to w: inout JSONWriter) {
        members(&w, [("fieldPath", { $0.writeString(field.canonicalString) })])
    }

    static func writeFilter(_ filter: Filter, database: String, to w: inout JSONWriter) {
        switch filter {
        case .field(let f):
            let unary: String?
            switch (f.op, f.value) {
            case (.equal, .null): unary = "IS_NULL"
            case (.notEqual, .null): unary = "IS_NOT_NULL"
            case (.equal, let v) where v.isNaN: unary = "IS_NAN"
            case (.notEqual, let v) where v.isNaN: unary = "IS_NOT_NAN"
            default: unary = nil
            }
            if let unary {
                members(&w, [("unaryFilter", { w in
                    members(&w, [("field", { writeFieldReference(f.field, to: &$0) }), ("op", { $0.writeString(unary) })])
                })])
            } else {
                members(&w, [("fieldFilter", { w in
                    members(&w, [
                        ("field", { writeFieldReference(f.field, to: &$0) }),
                        ("op", { $0.writeString(BundleQueryJSON.operatorName(f.op)) }),
                        ("value", { writeValue(f.value, database: database, to: &$0) }),
                    ])
                })])
            }
        case .composite(let c):
            members(&w, [("compositeFilter", { w in
                members(&w, [
                    ("op", { $0.writeString(c.op == .and ? "AND" : "OR") }),
                    ("filters", { w in
                        array(&w, c.filters) { w, member in
                            writeFilter(member, database: database, to: &w)
                        }
                    }),
                ])
            })])
        }
    }

    /// `{"key": <typed value>, …}` in key order.
    static func writeFields(_ fields: [String: Value], database: String, to w: inout JSONWriter) {
        w.open(UInt8(ascii: "{"))
        for (i, key) in fields.keys.sorted().enumerated() {
            w.item(first: i == 0)
            w.key(key)
            writeValue(fields[key]!, database: database, to: &w)
        }
        w.close(UInt8(ascii: "}"), empty: fields.isEmpty)
    }

    static func writeValue(_ value: Value, database: String, to w: inout JSONWriter) {
        func one(_ kind: String, _ body: (inout JSONWriter) -> Void) {
            withoutActuallyEscaping(body) { members(&w, [(kind, $0)]) }
        }
        switch value {
        case .null: one("nullValue") { $0.writeNull() }
        case .boolean(let b): one("booleanValue") { $0.writeBool(b) }
        case .integer(let i): one("integerValue") { $0.writeString(String(i)) }
        case .double(let d):
            one("doubleValue") { w in
                if d.isNaN { w.writeString("NaN") } else if d.isInfinite { w.writeString(d < 0 ? "-Infinity" : "Infinity") } else { w.writeDouble(d) }
            }
        case .timestamp(let t): one("timestampValue") { $0.writeString(t.rfc3339) }
        case .string(let s): one("stringValue") { $0.writeString(s) }
        case .bytes(let b): one("bytesValue") { $0.writeString(Base64.encode(b)) }
        case .reference(let key): one("referenceValue") { $0.writeString(ResourceName.of(key.path, database: database)) }
        case .attachment(let id): one(BundleJSON.attachmentValue) { $0.writeString(id.hex) }
        case .geoPoint(let g):
            one("geoPointValue") { w in
                members(&w, [("latitude", { $0.writeDouble(g.latitude) }), ("longitude", { $0.writeDouble(g.longitude) })])
            }
        case .array(let values):
            one("arrayValue") { w in
                if values.isEmpty {
                    members(&w, [])
                    return
                }
                members(&w, [("values", { w in
                    array(&w, values) { w, v in
                        writeValue(v, database: database, to: &w)
                    }
                })])
            }
        case .map(let fields):
            one("mapValue") { w in
                if fields.isEmpty {
                    members(&w, [])
                    return
                }
                members(&w, [("fields", { writeFields(fields, database: database, to: &$0) })])
            }
        }
    }
}

extension BundleNamedQuery {
    /// The named query as the JSON body of a `namedQuery` element (how a client store keeps
    /// it); read back with ``init(encodedJSON:)``.
    package var encodedJSON: [UInt8] {
        var w = JSONWriter()
        BundleWriter.write(self, database: BundleWriter.defaultDatabase, to: &w)
        return w.bytes
    }

    /// Reads what ``encodedJSON`` wrote.
    package init(encodedJSON bytes: [UInt8]) throws(DocError) {
        let node = try JSONReader.parse(bytes, maxDepth: BundleJSON.maxJSONDepth)
        self = try BundleJSON.namedQuery(BundleJSON.Node(node, path: BundleElementKind.namedQuery))
    }
}

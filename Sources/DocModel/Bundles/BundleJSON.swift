/// Firestore's JSON forms inside bundle elements, read into the data model: resource names,
/// timestamps, typed values (`stringValue`, `integerValue`, `mapValue`, …) and documents.
/// Queries are in BundleQueryJSON.swift; the writing side is in BundleWriter.swift.
///
/// Members this package does not know are ignored (Firestore ignores them too), but a known
/// member of the wrong type is an error naming its path in the element
/// (`document.fields.price.integerValue: …`).
enum BundleJSON {
    /// The deepest JSON nesting of an element: every value is wrapped in two or three objects
    /// (`{"mapValue": {"fields": {…}}}`), so a document at the model's depth limit nests far
    /// deeper than plain JSON.
    static let maxJSONDepth = 4 * Value.maxDepth + 8

    /// The extension member for attachment references, which Firestore's value has no kind for.
    static let attachmentValue = "attachmentValue"

    /// A JSON node and where it is in the element, for messages.
    struct Node {
        let node: JSONNode
        let path: String

        init(_ node: JSONNode, path: String) {
            self.node = node
            self.path = path
        }

        func fail(_ message: String) -> DocError { DocError(.invalidArgument, "\(path): \(message)") }

        var typeName: String {
            switch node.kind {
            case .null: return "null"
            case .bool: return "a boolean"
            case .integer, .double: return "a number"
            case .string: return "a string"
            case .array: return "an array"
            case .object: return "an object"
            }
        }

        var isNull: Bool { if case .null = node.kind { return true } else { return false } }

        func members() throws(DocError) -> [(String, Node)] {
            guard case .object(let members) = node.kind else { throw fail("expected an object, found \(typeName)") }
            return members.map { ($0.key, Node($0.value, path: path + "." + $0.key)) }
        }

        /// The member `key`, or `nil` when absent (or, for optional members, null).
        func member(_ key: String) throws(DocError) -> Node? {
            guard case .object(let members) = node.kind else { throw fail("expected an object, found \(typeName)") }
            guard let m = members.first(where: { $0.key == key }) else { return nil }
            return Node(m.value, path: path + "." + key)
        }

        func optional(_ key: String) throws(DocError) -> Node? {
            guard let m = try member(key), !m.isNull else { return nil }
            return m
        }

        func required(_ key: String) throws(DocError) -> Node {
            guard let m = try optional(key) else { throw DocError(.invalidArgument, "\(path).\(key): missing") }
            return m
        }

        func string() throws(DocError) -> String {
            guard case .string(let s) = node.kind else { throw fail("expected a string, found \(typeName)") }
            return s
        }

        func bool() throws(DocError) -> Bool {
            guard case .bool(let b) = node.kind else { throw fail("expected a boolean, found \(typeName)") }
            return b
        }

        func array() throws(DocError) -> [Node] {
            guard case .array(let items) = node.kind else { throw fail("expected an array, found \(typeName)") }
            return items.enumerated().map { Node($1, path: "\(path)[\($0)]") }
        }

        /// A 64-bit integer written as a JSON number or, as Protobuf's JSON writes 64-bit
        /// integers, as a decimal string.
        func int64() throws(DocError) -> Int64 {
            switch node.kind {
            case .integer(let i): return i
            case .string(let s):
                guard let i = Int64(s), !s.hasPrefix("+") else { throw fail("\"\(s)\" is not a 64-bit integer") }
                return i
            default: throw fail("expected an integer (a number or a decimal string), found \(typeName)")
            }
        }

        /// An integer in `range`.
        func int(in range: ClosedRange<Int64>) throws(DocError) -> Int64 {
            let i = try int64()
            guard range.contains(i) else { throw fail("\(i) is outside \(range.lowerBound)…\(range.upperBound)") }
            return i
        }

        /// A double: a JSON number, or `"NaN"`, `"Infinity"`, `"-Infinity"` (Protobuf's JSON for
        /// the non-finite values).
        func double() throws(DocError) -> Double {
            switch node.kind {
            case .integer(let i): return Double(i)
            case .double(let d): return d
            case .string("NaN"): return .nan
            case .string("Infinity"): return .infinity
            case .string("-Infinity"): return -.infinity
            default: throw fail("expected a number (or \"NaN\", \"Infinity\", \"-Infinity\"), found \(typeName)")
            }
        }
    }

    // MARK: Elements

    static func decodeElement(kind: String, _ body: Node) throws(DocError) -> BundleElement {
        switch kind {
        case BundleElementKind.metadata: return .metadata(try metadata(body))
        case BundleElementKind.namedQuery: return .namedQuery(try namedQuery(body))
        case BundleElementKind.documentMetadata: return .documentMetadata(try documentMetadata(body))
        case BundleElementKind.document: return .document(try document(body))
        default:
            throw DocError(.invalidArgument,
                "unknown bundle element \"\(kind)\" (expected \(BundleElementKind.all.joined(separator: ", ")))")
        }
    }

    static func metadata(_ body: Node) throws(DocError) -> BundleMetadata {
        let id = try body.required("id").string()
        guard !id.isEmpty else { throw DocError(.invalidArgument, "metadata.id: must not be empty") }
        let createTime = try version(body.required("createTime"))
        let version = try body.required("version").int(in: 0...Int64(UInt32.max))
        let documents = try body.optional("totalDocuments")?.int(in: 0...Int64(UInt32.max)) ?? 0
        let bytes = try body.optional("totalBytes")?.int(in: 0...Int64.max) ?? 0
        return BundleMetadata(id: id, createTime: createTime, version: Int(version), totalDocuments: Int(documents), totalBytes: bytes)
    }

    static func namedQuery(_ body: Node) throws(DocError) -> BundleNamedQuery {
        let name = try body.required("name").string()
        guard !name.isEmpty else { throw DocError(.invalidArgument, "namedQuery.name: must not be empty") }
        let query = try BundleQueryJSON.bundledQuery(body.required("bundledQuery"))
        let readTime = try version(body.required("readTime"))
        return BundleNamedQuery(name: name, query: query, readTime: readTime)
    }

    static func documentMetadata(_ body: Node) throws(DocError) -> BundledDocumentMetadata {
        let key = try documentKey(body.required("name"))
        let readTime = try version(body.required("readTime"))
        let exists = try body.optional("exists")?.bool() ?? false
        var queries: [String] = []
        for item in try body.optional("queries")?.array() ?? [] { queries.append(try item.string()) }
        return BundledDocumentMetadata(key: key, readTime: readTime, exists: exists, queries: queries)
    }

    static func document(_ body: Node) throws(DocError) -> Document {
        let key = try documentKey(body.required("name"))
        let updateTime = try version(body.required("updateTime"))
        // The create time is informational (Firestore's clients drop it): any timestamp is read.
        let createTime = try body.optional("createTime").map { n throws(DocError) in
            SnapshotVersion(microseconds: max(0, try timestamp(n).microseconds))
        }
        let fields = try mapFields(body)
        return Document(key: key, data: ObjectValue(fields), version: updateTime, createTime: createTime)
    }

    // MARK: Times and names

    /// A timestamp: an RFC 3339 string, or `{"seconds": S, "nanos": N}` (both optional).
    static func timestamp(_ node: Node) throws(DocError) -> Timestamp {
        if case .string(let text) = node.node.kind {
            do {
                return try Timestamp(rfc3339: text)
            } catch {
                throw node.fail(error.message)
            }
        }
        guard case .object = node.node.kind else {
            throw node.fail("expected a timestamp (an RFC 3339 string or {\"seconds\", \"nanos\"}), found \(node.typeName)")
        }
        let seconds = try node.optional("seconds")?.int64() ?? 0
        let nanos = try node.optional("nanos")?.int(in: 0...999_999_999) ?? 0
        do {
            return try Timestamp(seconds: seconds, nanos: Int32(nanos))
        } catch {
            throw node.fail(error.message)
        }
    }

    /// A snapshot version (read, update and create times): a timestamp after the epoch, in
    /// whole microseconds (finer digits are dropped, as versions are microseconds here).
    static func version(_ node: Node) throws(DocError) -> SnapshotVersion {
        let time = try timestamp(node)
        guard time.microseconds > 0 else { throw node.fail("a version must be after 1970-01-01T00:00:00Z, got \(time)") }
        return SnapshotVersion(microseconds: time.microseconds)
    }

    /// The path inside the database of a resource name
    /// `projects/{project}/databases/{database}/documents[/path]`. The project and database
    /// may be anything: a bundle is not tied to a tenant (the app chooses what it loads).
    static func resourcePath(_ node: Node) throws(DocError) -> ResourcePath {
        let name = try node.string()
        let segments = name.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard segments.count >= 5, segments[0] == "projects", !segments[1].isEmpty, segments[2] == "databases",
              !segments[3].isEmpty, segments[4] == "documents" else {
            throw node.fail("\"\(name)\" is not a resource name of the form projects/P/databases/D/documents/…")
        }
        do {
            return try ResourcePath(segments: Array(segments.dropFirst(5)))
        } catch {
            throw node.fail("\"\(name)\": \(error.message)")
        }
    }

    static func documentKey(_ node: Node) throws(DocError) -> DocumentKey {
        let path = try resourcePath(node)
        do {
            return try DocumentKey(path: path)
        } catch {
            throw node.fail("not a document name: \(error.message)")
        }
    }

    // MARK: Values

    /// The `fields` of a document or `mapValue` (absent for an empty map).
    static func mapFields(_ node: Node) throws(DocError) -> [String: Value] {
        guard let fields = try node.optional("fields") else { return [:] }
        var out: [String: Value] = [:]
        for (key, value) in try fields.members() { out[key] = try self.value(value) }
        return out
    }

    /// A typed value: an object with one of Firestore's value members.
    static func value(_ node: Node) throws(DocError) -> Value {
        let members = try node.members()
        let known = members.filter { valueKinds.contains($0.0) }
        guard known.count == 1, let (kind, body) = known.first else {
            if known.isEmpty {
                throw node.fail("a value needs one of \(valueKinds.sorted().joined(separator: ", "))")
            }
            throw node.fail("a value has one kind, this one has \(known.count): \(known.map(\.0).joined(separator: ", "))")
        }
        switch kind {
        case "nullValue": return .null
        case "booleanValue": return .boolean(try body.bool())
        case "integerValue": return .integer(try body.int64())
        case "doubleValue": return .double(try body.double())
        case "timestampValue": return .timestamp(try timestamp(body))
        case "stringValue": return .string(try body.string())
        case "bytesValue": return .bytes(try bytes(body))
        case "referenceValue": return .reference(try documentKey(body))
        case "geoPointValue":
            let latitude = try body.optional("latitude")?.double() ?? 0
            let longitude = try body.optional("longitude")?.double() ?? 0
            do {
                return .geoPoint(try GeoPoint(latitude: latitude, longitude: longitude))
            } catch {
                throw body.fail(error.message)
            }
        case "arrayValue":
            var values: [Value] = []
            for item in try body.optional("values")?.array() ?? [] { values.append(try value(item)) }
            return .array(values)
        case "mapValue":
            return .map(try mapFields(body))
        case attachmentValue:
            do {
                return .attachment(try AttachmentID(try body.string()))
            } catch {
                throw body.fail(error.message)
            }
        default:
            throw node.fail("unknown value kind \(kind)")
        }
    }

    static let valueKinds: Set<String> = [
        "nullValue", "booleanValue", "integerValue", "doubleValue", "timestampValue", "stringValue", "bytesValue",
        "referenceValue", "geoPointValue", "arrayValue", "mapValue", attachmentValue,
    ]

    /// Base64, standard or URL-safe, padded or not (Protobuf's JSON reader accepts all four).
    static func bytes(_ node: Node) throws(DocError) -> [UInt8] {
        switch Base64.decodeURLSafe(try node.string()) {
        case .success(let bytes): return bytes
        case .failure(let error): throw node.fail("not base64: \(error.message)")
        }
    }
}

/// Firestore's limits on documents, checked before anything is stored.
///
/// Sizes follow Firestore's documented storage-size rules: a string is its UTF-8 length + 1,
/// booleans and nulls 1, numbers and timestamps 8, geo points 16, bytes their length, a
/// reference its path size, arrays and maps the sum of their parts (map keys as strings), and a
/// document its path size + its fields + 32.
public enum DocumentLimits {
    /// The largest document, in storage bytes (1 MiB).
    public static let maxDocumentBytes = 1_048_576
    /// The deepest nesting of maps and arrays.
    public static let maxDepth = Value.maxDepth
    /// The longest field path, in UTF-8 bytes.
    public static let maxFieldPathBytes = FieldPath.maxBytes

    /// Checks user data for a document: size, depth, field names. Throws `invalidArgument`
    /// naming the offending field.
    public static func validate(_ data: ObjectValue, for key: DocumentKey) throws(DocError) {
        for (name, value) in data.fields {
            try validate(field: name, value: value, path: [name], depth: 1, key: key)
        }
        let size = storageSize(of: data, key: key)
        guard size <= maxDocumentBytes else {
            throw .invalid("document is \(size) bytes; the limit is \(maxDocumentBytes) (1 MiB)", at: key.description)
        }
    }

    private static func validate(field name: String, value: Value, path: [String], depth: Int, key: DocumentKey) throws(DocError) {
        let fieldPath = FieldPath(unchecked: path)
        // The location is only formatted when something is wrong (this runs for every field).
        var at: String { "\(key) field \(fieldPath)" }
        if name.isEmpty { throw .invalid("field names must not be empty", at: at) }
        if name.utf8.count > 4, name.hasPrefix("__"), name.hasSuffix("__") {
            throw .invalid("field name \"\(name)\" is reserved (names matching __.*__ are)", at: at)
        }
        if fieldPath.canonicalByteCount > maxFieldPathBytes {
            throw .invalid("field path is longer than \(maxFieldPathBytes) bytes", at: key.description)
        }
        switch value {
        case .map(let m):
            if value.isServerTimestamp { return }
            guard depth < maxDepth else {
                throw .invalid("document nesting is deeper than \(maxDepth) levels", at: at)
            }
            for (k, v) in m { try validate(field: k, value: v, path: path + [k], depth: depth + 1, key: key) }
        case .array(let a):
            guard depth < maxDepth else {
                throw .invalid("document nesting is deeper than \(maxDepth) levels", at: at)
            }
            for v in a {
                if case .array = v { throw .invalid("arrays cannot directly contain arrays", at: at) }
                try validate(field: name, value: v, path: path, depth: depth + 1, key: key)
            }
        case .double, .integer, .null, .boolean, .string, .bytes, .timestamp, .geoPoint, .reference:
            return
        }
    }

    /// The storage size of a document in bytes, by Firestore's rules.
    public static func storageSize(of data: ObjectValue, key: DocumentKey) -> Int {
        storageSize(of: key.path) + data.fields.reduce(0) { $0 + $1.key.utf8.count + 1 + storageSize(of: $1.value) } + 32
    }

    /// The storage size of one value, by Firestore's rules.
    public static func storageSize(of value: Value) -> Int {
        switch value {
        case .null, .boolean: return 1
        case .integer, .double, .timestamp: return 8
        case .geoPoint: return 16
        case .string(let s): return s.utf8.count + 1
        case .bytes(let b): return b.count
        case .reference(let k): return storageSize(of: k.path)
        case .array(let a): return a.reduce(0) { $0 + storageSize(of: $1) }
        case .map(let m): return m.reduce(0) { $0 + $1.key.utf8.count + 1 + storageSize(of: $1.value) }
        }
    }

    static func storageSize(of path: ResourcePath) -> Int {
        path.segments.reduce(16) { $0 + $1.utf8.count + 1 }
    }
}

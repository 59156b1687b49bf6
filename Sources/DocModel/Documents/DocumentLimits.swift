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
        try validate(data, for: key, allowingPendingServerTimestamps: true)
    }

    /// ``validate(_:for:)``; without `allowingPendingServerTimestamps`, a pending server
    /// timestamp anywhere in the data is refused as well, in the same walk (user data writes
    /// server timestamps with a transform, never as a value).
    package static func validate(_ data: ObjectValue, for key: DocumentKey, allowingPendingServerTimestamps: Bool) throws(DocError) {
        // One walk checks every field and adds up the storage size (as `storageSize(of:key:)`).
        // The path of the field being checked is kept in one array (pushed and popped, not
        // copied per field) with its canonical length; it is only formatted when something
        // is wrong.
        var path: [String] = []
        path.reserveCapacity(4)
        var size = storageSize(of: key.path) + 32
        for (name, value) in data.fields {
            path.append(name)
            size += name.utf8.count + 1
                + (try validate(field: name, value: value, path: &path, pathBytes: FieldPath.canonicalByteCount(ofSegment: name),
                                depth: 1, key: key, pendingServerTimestamps: allowingPendingServerTimestamps))
            path.removeLast()
        }
        guard size <= maxDocumentBytes else {
            throw .invalid("document is \(size) bytes; the limit is \(maxDocumentBytes) (1 MiB)", at: key.description)
        }
    }

    /// Checks the field `name` (the last segment of `path`, whose canonical length is
    /// `pathBytes`) holding `value`, and returns the value's storage size.
    private static func validate(
        field name: String, value: Value, path: inout [String], pathBytes: Int, depth: Int, key: DocumentKey,
        pendingServerTimestamps allowed: Bool
    ) throws(DocError) -> Int {
        // The location is only formatted when something is wrong (this runs for every field).
        func at(_ path: [String]) -> String { "\(key) field \(FieldPath(unchecked: path))" }
        if name.isEmpty { throw .invalid("field names must not be empty", at: at(path)) }
        if isReservedName(name) {
            throw .invalid("field name \"\(name)\" is reserved (names matching __.*__ are)", at: at(path))
        }
        if pathBytes > maxFieldPathBytes {
            throw .invalid("field path is longer than \(maxFieldPathBytes) bytes", at: key.description)
        }
        switch value {
        case .map(let m):
            if value.isServerTimestamp {
                guard allowed else {
                    throw .invalid("a pending server timestamp cannot be written as data; use a serverTimestamp transform", at: at(path))
                }
                return storageSize(of: value)
            }
            guard depth < maxDepth else {
                throw .invalid("document nesting is deeper than \(maxDepth) levels", at: at(path))
            }
            var size = 0
            for (k, v) in m {
                path.append(k)
                size += k.utf8.count + 1
                    + (try validate(field: k, value: v, path: &path, pathBytes: pathBytes + 1 + FieldPath.canonicalByteCount(ofSegment: k),
                                    depth: depth + 1, key: key, pendingServerTimestamps: allowed))
                path.removeLast()
            }
            return size
        case .array(let a):
            guard depth < maxDepth else {
                throw .invalid("document nesting is deeper than \(maxDepth) levels", at: at(path))
            }
            var size = 0
            for v in a {
                if case .array = v { throw .invalid("arrays cannot directly contain arrays", at: at(path)) }
                size += try validate(field: name, value: v, path: &path, pathBytes: pathBytes, depth: depth + 1, key: key,
                                     pendingServerTimestamps: allowed)
            }
            return size
        case .double, .integer, .null, .boolean, .string, .bytes, .timestamp, .geoPoint, .reference:
            return storageSize(of: value)
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

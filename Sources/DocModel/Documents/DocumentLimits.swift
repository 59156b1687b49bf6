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
    /// The most writes in one batch (as Firestore; the server refuses larger batches).
    public static let maxWritesPerBatch = 500
    /// The most field transforms in one write (as Firestore): checking them against each other
    /// and the data stays cheap.
    public static let maxFieldTransforms = 500
    /// The most documents a request document's `base` may name (docs/request-documents.md):
    /// the commit that applies the request verifies each, within a batch's 500 writes beside
    /// the handler's own.
    public static let maxRequestBaseEntries = 400

    /// Checks the number of writes in a batch: 1 … ``maxWritesPerBatch``.
    ///
    /// - Throws: `invalidArgument` saying how many writes the batch has.
    public static func validateBatchSize(_ count: Int) throws(DocError) {
        guard count >= 1 else { throw DocError(.invalidArgument, "a write batch needs at least one write") }
        guard count <= maxWritesPerBatch else {
            throw DocError(.invalidArgument, "a write batch may have at most \(maxWritesPerBatch) writes, this one has \(count): split it into several batches")
        }
    }

    /// Checks user data for a document: size, depth, field names. Throws `invalidArgument`
    /// naming the offending field.
    public static func validate(_ data: ObjectValue, for key: DocumentKey) throws(DocError) {
        try validate(data, for: key, allowingPendingServerTimestamps: true)
    }

    /// ``validate(_:for:)``; without `allowingPendingServerTimestamps` (user data), a pending
    /// server timestamp anywhere in the data is refused as well, in the same walk (user data
    /// writes server timestamps with a transform, never as a value), and so is a timestamp
    /// outside 0001-01-01 … 9999-12-31 (``Timestamp/isInValidRange``).
    package static func validate(_ data: ObjectValue, for key: DocumentKey, allowingPendingServerTimestamps: Bool) throws(DocError) {
        var walk = LimitWalk(key: key, allowingPendingServerTimestamps: allowingPendingServerTimestamps, encoding: false)
        try walk.document(data)
    }

    /// Checks data written by a user to `key` as ``validate(_:for:allowingPendingServerTimestamps:)``
    /// does with pending server timestamps refused, and returns its storage encoding
    /// (``ObjectValue/binaryEncoded()``), made in the same walk: a local write checks and
    /// encodes its data once.
    package static func validatedEncoding(of data: ObjectValue, for key: DocumentKey) throws(DocError) -> [UInt8] {
        var walk = LimitWalk(key: key, allowingPendingServerTimestamps: false, encoding: true)
        try walk.document(data)
        return walk.writer!.bytes
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
        case .attachment: return AttachmentID.length + 1
        case .array(let a): return a.reduce(0) { $0 + storageSize(of: $1) }
        case .map(let m): return m.reduce(0) { $0 + $1.key.utf8.count + 1 + storageSize(of: $1.value) }
        }
    }

    static func storageSize(of path: ResourcePath) -> Int {
        path.segments.reduce(16) { $0 + $1.utf8.count + 1 }
    }
}

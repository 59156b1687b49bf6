/// One walk over a document's data that checks it against ``DocumentLimits`` (field names,
/// field-path length, nesting, size; for user data, also no pending server timestamps and no
/// timestamp outside 0001 … 9999) and, when encoding, writes its binary storage encoding on
/// the way (``ObjectValue/binaryEncoded()``).
///
/// Map entries are visited in key order, the order of the encoding; it also makes the first
/// problem found, the one reported, the same in every process whatever the dictionaries' hash
/// seeds. The walk keeps no path of the field it is in: a problem's field path is collected
/// as the walk unwinds from it. Field-path lengths are bounded from above (a segment's
/// canonical form is at most twice its bytes, backquoted) and only worked out exactly, in a
/// second walk, when a bound is over the limit.
struct LimitWalk {
    let key: DocumentKey
    let allowingPendingServerTimestamps: Bool
    /// The encoding so far; `nil` when the walk only checks.
    private(set) var writer: BinaryWriter?
    /// Whether field-path lengths are worked out exactly rather than bounded.
    private var exactPaths = false

    /// A problem found by the walk.
    private enum Failure: Error {
        /// About a field: the message and the field's path, innermost segment first.
        case field(String, reversedPath: [String])
        /// About the whole document.
        case document(String)
        /// A field path's upper bound is over the limit: walk again with exact lengths.
        case pathMayBeTooLong
    }

    init(key: DocumentKey, allowingPendingServerTimestamps: Bool, encoding: Bool) {
        self.key = key
        self.allowingPendingServerTimestamps = allowingPendingServerTimestamps
        if encoding { writer = Self.emptyEncoding() }
    }

    private static func emptyEncoding() -> BinaryWriter { BinaryWriter(prefix: [], kind: .object, capacity: 256) }

    /// Checks (and encodes) every field of `data`, then the document's total size.
    mutating func document(_ data: ObjectValue) throws(DocError) {
        do throws(Failure) {
            try walk(data)
        } catch .pathMayBeTooLong {
            if writer != nil { writer = Self.emptyEncoding() }
            exactPaths = true
            do throws(Failure) { try walk(data) } catch { throw docError(error) }
        } catch {
            throw docError(error)
        }
    }

    private mutating func walk(_ data: ObjectValue) throws(Failure) {
        let size = DocumentLimits.storageSize(of: key.path) + 32
            + (try mapEntries(data.fields, parentPathLength: -1, depth: 1))
        guard size <= DocumentLimits.maxDocumentBytes else {
            throw .document("document is \(size) bytes; the limit is \(DocumentLimits.maxDocumentBytes) (1 MiB)")
        }
    }

    private func docError(_ failure: Failure) -> DocError {
        switch failure {
        case .field(let message, let reversedPath):
            return .invalid(message, at: "\(key) field \(FieldPath(unchecked: reversedPath.reversed()))")
        case .document(let message):
            return .invalid(message, at: key.description)
        case .pathMayBeTooLong:
            // Not thrown when lengths are exact (the only walk whose failures get here).
            return .invalid("field path is longer than \(DocumentLimits.maxFieldPathBytes) bytes", at: key.description)
        }
    }

    /// The entries of a map, in key order; returns their storage size. `parentPathLength` is
    /// the canonical length of the map's own field path, or its upper bound (-1 for the
    /// document's top level).
    private mutating func mapEntries(_ m: [String: Value], parentPathLength: Int, depth: Int) throws(Failure) -> Int {
        var size = 0
        writer?.varint(UInt64(m.count))
        try BinaryWriter.forEachInKeyOrder(m) { (name, value) throws(Failure) in
            writer?.string(name)
            do throws(Failure) {
                size += try entry(name, value, parentPathLength: parentPathLength, depth: depth)
            } catch .field(let message, var path) {
                path.append(name)
                throw .field(message, reversedPath: path)
            }
        }
        return size
    }

    /// The field `name` holding `value`; returns its storage size (name and value).
    /// Problems with it are thrown with an empty path (the caller adds `name`).
    private mutating func entry(_ name: String, _ value: Value, parentPathLength: Int, depth: Int) throws(Failure) -> Int {
        if name.isEmpty { throw .field("field names must not be empty", reversedPath: []) }
        if isReservedName(name) {
            throw .field("field name \"\(name)\" is reserved (names matching __.*__ are)", reversedPath: [])
        }
        let pathLength: Int
        if exactPaths {
            pathLength = parentPathLength + 1 + FieldPath.canonicalByteCount(ofSegment: name)
            if pathLength > DocumentLimits.maxFieldPathBytes {
                throw .document("field path is longer than \(DocumentLimits.maxFieldPathBytes) bytes")
            }
        } else {
            pathLength = parentPathLength + 1 + 2 + 2 * name.utf8.count
            if pathLength > DocumentLimits.maxFieldPathBytes { throw .pathMayBeTooLong }
        }
        return name.utf8.count + 1 + (try self.value(value, pathLength: pathLength, depth: depth))
    }

    /// A value `depth` levels into the document, at a field path of (at most) `pathLength`
    /// bytes; returns its storage size.
    private mutating func value(_ value: Value, pathLength: Int, depth: Int) throws(Failure) -> Int {
        switch value {
        case .map(let m):
            if value.isServerTimestamp {
                guard allowingPendingServerTimestamps else {
                    throw .field("a pending server timestamp cannot be written as data; use a serverTimestamp transform", reversedPath: [])
                }
                writer?.value(value)
                return DocumentLimits.storageSize(of: value)
            }
            guard depth < DocumentLimits.maxDepth else {
                throw .field("document nesting is deeper than \(DocumentLimits.maxDepth) levels", reversedPath: [])
            }
            writer?.bytes.append(BinaryEncoding.Tag.map)
            return try mapEntries(m, parentPathLength: pathLength, depth: depth + 1)
        case .array(let a):
            guard depth < DocumentLimits.maxDepth else {
                throw .field("document nesting is deeper than \(DocumentLimits.maxDepth) levels", reversedPath: [])
            }
            writer?.bytes.append(BinaryEncoding.Tag.array)
            writer?.varint(UInt64(a.count))
            var size = 0
            for element in a {
                if case .array = element { throw .field("arrays cannot directly contain arrays", reversedPath: []) }
                size += try self.value(element, pathLength: pathLength, depth: depth + 1)
            }
            return size
        case .timestamp(let t) where !allowingPendingServerTimestamps && !t.isInValidRange:
            // User data (as Firestore): a timestamp the calendar functions and `Date` can hold.
            throw .field("timestamp (\(t.seconds) s) is outside 0001-01-01 … 9999-12-31", reversedPath: [])
        case .double, .integer, .null, .boolean, .string, .bytes, .timestamp, .geoPoint, .reference, .attachment:
            writer?.value(value)
            return DocumentLimits.storageSize(of: value)
        }
    }
}

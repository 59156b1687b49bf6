/// A slash-separated path to a collection or a document, relative to the database root:
/// `users/alice/orders`.
///
/// Segments are compared by their UTF-8 bytes, so paths sort the same way in memory and in
/// LevelDB.
public struct ResourcePath: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The path's segments from the root, each validated; empty for ``root``.
    public private(set) var segments: [String]

    /// The longest path segment in UTF-8 bytes (Firestore's limit).
    public static let maxSegmentBytes = 1_500

    /// Parses and validates a path such as `users/alice`. A leading or trailing `/` is
    /// accepted; empty segments (`a//b`), `.`, `..` and reserved names (`__x__`) are not.
    public init(_ path: String) throws(DocError) {
        // Split on the "/" byte, not the Character: "/" followed by a combining mark is one
        // Character, but still separates segments.
        let slash = UInt8(ascii: "/")
        var trimmed = path.utf8[...]
        if trimmed.first == slash { trimmed = trimmed.dropFirst() }
        if trimmed.last == slash { trimmed = trimmed.dropLast() }
        if trimmed.isEmpty {
            self = ResourcePath(unchecked: [])
            return
        }
        let parts = trimmed.split(separator: slash, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        try self.init(validating: parts, display: path)
    }

    /// Validates the given segments.
    public init(segments: [String]) throws(DocError) {
        try self.init(validating: segments, display: segments.joined(separator: "/"))
    }

    /// `display` (the path as written) is spelled only for an error.
    private init(validating parts: [String], display: @autoclosure () -> String) throws(DocError) {
        for (i, part) in parts.enumerated() {
            try Self.validate(segment: part, index: i, in: display())
        }
        self.segments = parts
    }

    /// Creates a path without validation, for segments that come from a trusted encoding.
    package init(unchecked segments: [String]) {
        self.segments = segments
    }

    /// The empty path: the database root.
    public static let root = ResourcePath(unchecked: [])

    /// Checks one segment; `path` (the whole path, for the error's location) is spelled only
    /// for an error.
    static func validate(segment: String, index: Int, in path: @autoclosure () -> String) throws(DocError) {
        var at: String { "path \"\(path())\", segment \(index + 1)" }
        if segment.isEmpty {
            throw .invalid("path segments must not be empty", at: at)
        }
        if segment == "." || segment == ".." {
            throw .invalid("path segment \"\(segment)\" is not allowed", at: at)
        }
        if segment.utf8.count > maxSegmentBytes {
            throw .invalid("path segment is \(segment.utf8.count) bytes; the limit is \(maxSegmentBytes)", at: at)
        }
        if segment.utf8.contains(UInt8(ascii: "/")) {   // bytes: "/" + a combining mark is one Character
            throw .invalid("path segment \"\(segment)\" contains '/'", at: at)
        }
        if isReservedName(segment) {
            throw .invalid("path segment \"\(segment)\" is reserved (names matching __.*__ are)", at: at)
        }
    }

    /// The number of segments: odd for a collection, even (and non-zero) for a document.
    public var count: Int { segments.count }
    /// Whether this is ``root``.
    public var isEmpty: Bool { segments.isEmpty }
    /// The last segment (a document or collection id); `nil` for ``root``.
    public var lastSegment: String? { segments.last }
    /// The first segment (a top-level collection id); `nil` for ``root``.
    public var firstSegment: String? { segments.first }

    /// This path with `segment` appended (validated).
    public func appending(_ segment: String) throws(DocError) -> ResourcePath {
        try Self.validate(segment: segment, index: segments.count, in: canonicalString + "/" + segment)
        return ResourcePath(unchecked: segments + [segment])
    }

    /// This path with the segments of `other` appended.
    public func appending(_ other: ResourcePath) -> ResourcePath {
        ResourcePath(unchecked: segments + other.segments)
    }

    /// The path without its last segment.
    public var parent: ResourcePath? {
        segments.isEmpty ? nil : ResourcePath(unchecked: Array(segments.dropLast()))
    }

    /// Whether `self` is a prefix of (or equal to) `other`.
    public func isPrefix(of other: ResourcePath) -> Bool {
        segments.count <= other.segments.count && zip(segments, other.segments).allSatisfy { equalUTF8($0, $1) }
    }

    /// Whether `other` is a direct child of `self`.
    public func isImmediateParent(of other: ResourcePath) -> Bool {
        segments.count + 1 == other.segments.count && isPrefix(of: other)
    }

    /// The segments joined with `/`, without leading or trailing slash (`users/alice`).
    public var canonicalString: String { segments.joined(separator: "/") }
    public var description: String { canonicalString }

    public static func == (a: ResourcePath, b: ResourcePath) -> Bool {
        guard a.segments.count == b.segments.count else { return false }
        // Two paths made from one another usually share their segments' storage.
        let shared = a.segments.withUnsafeBufferPointer { x in
            b.segments.withUnsafeBufferPointer { y in x.baseAddress == y.baseAddress }
        }
        return shared || zip(a.segments, b.segments).allSatisfy { equalUTF8($0, $1) }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(segments.count)
        for s in segments { hashUTF8(s, into: &hasher) }
    }

    public static func < (a: ResourcePath, b: ResourcePath) -> Bool { a.compare(b) < 0 }

    /// -1, 0 or 1 as this path sorts before, equal to or after `other` (segment by segment,
    /// by UTF-8 bytes; a path before its extensions): one pass, where `==` then `<` take two.
    public func compare(_ other: ResourcePath) -> Int {
        for (x, y) in zip(segments, other.segments) {
            let c = compareUTF8(x, y)
            if c != 0 { return c < 0 ? -1 : 1 }
        }
        return segments.count == other.segments.count ? 0 : (segments.count < other.segments.count ? -1 : 1)
    }
}

/// Whether two strings have the same UTF-8 bytes (not Unicode canonical equivalence, which
/// `==` of `String` uses).
@inlinable
package func equalUTF8(_ a: String, _ b: String) -> Bool {
    a.utf8.count == b.utf8.count && compareUTF8(a, b) == 0
}

/// Feeds a string's UTF-8 bytes (and their count) to `hasher`: equal bytes, equal hashes,
/// whether the string is stored natively or not.
@inlinable
package func hashUTF8(_ s: String, into hasher: inout Hasher) {
    hasher.combine(s.utf8.count)
    let done: Void? = s.utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    if done == nil { Array(s.utf8).withUnsafeBytes { hasher.combine(bytes: $0) } }
}

/// Compares two strings by their UTF-8 bytes: -1, 0 or 1.
@inlinable
package func compareUTF8(_ a: String, _ b: String) -> Int {
    // Native strings: compare the stored bytes directly.
    let direct = a.utf8.withContiguousStorageIfAvailable { x in
        b.utf8.withContiguousStorageIfAvailable { y -> Int in
            let n = min(x.count, y.count)
            var i = 0
            while i < n {
                if x[i] != y[i] { return x[i] < y[i] ? -1 : 1 }
                i += 1
            }
            return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
        }
    }
    if let direct, let result = direct { return result }
    var ia = a.utf8.makeIterator(), ib = b.utf8.makeIterator()
    while true {
        switch (ia.next(), ib.next()) {
        case (nil, nil): return 0
        case (nil, _): return -1
        case (_, nil): return 1
        case let (x?, y?):
            if x != y { return x < y ? -1 : 1 }
        }
    }
}

/// Whether `name` has the reserved form `__…__`: more than four UTF-8 bytes, the first two
/// and the last two underscores. Checked on bytes (a `String` prefix test compares whole
/// characters, which costs more and lets "_" plus a combining mark slip through).
@inlinable
package func isReservedName(_ name: String) -> Bool {
    let utf8 = name.utf8
    guard utf8.count > 4 else { return false }
    let underscore = UInt8(ascii: "_")
    let second = utf8.index(after: utf8.startIndex)
    let last = utf8.index(before: utf8.endIndex)
    return utf8[utf8.startIndex] == underscore && utf8[second] == underscore
        && utf8[last] == underscore && utf8[utf8.index(before: last)] == underscore
}

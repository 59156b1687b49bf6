internal import DocModel
internal import PostgresNIO

/// The `bytea` keys of the PostgreSQL store: ordered code (``KeyEncoder``), compared bytewise
/// by the database (`bytea` order is memcmp order in PostgreSQL, CockroachDB and YugabyteDB,
/// whatever the database's collation), so a range of keys is a range of the index.
///
/// Two encodings of a document key, as the embedded store's two key spaces:
/// - ``key(_:)``, `doc_key`: `path(collection) ‖ string(document id)` (`TenantKeys.document`
///   without the tenant prefix). The documents directly in a collection are exactly the keys
///   that start with `path(collection)`, in document id order.
/// - ``path(_:)``, `path_key`: `path(document)` (`KeyEncoder.append(key:)`, as in the change
///   log and the group index of `TenantKeys`): bytewise order is `DocumentKey` order across
///   collections too (`g/a/g/c` before `g/b`, which `doc_key` orders the other way). The
///   documents at any depth under a path `P` are the path keys that start with `path(P)` minus
///   its end byte: a collection group's parent.
enum DocumentKeyBytes {
    /// The key of a document: `collectionPrefix(collection) ‖ documentID(id)`.
    static func key(_ key: DocumentKey) -> [UInt8] {
        var e = KeyEncoder()
        e.append(pathSegments: key.path.segments.dropLast())
        e.append(string: key.documentID)
        return e.bytes
    }

    /// A document id as its key ends (`string(id)`): the index rows' `doc_id`, so that
    /// `collection ‖ doc_id` is the document's `doc_key`, and bytewise order is id order.
    static func documentID(_ id: String) -> [UInt8] {
        var e = KeyEncoder()
        e.append(string: id)
        return e.bytes
    }

    /// The id of a ``documentID(_:)`` encoding.
    static func documentID(decoding bytes: [UInt8]) throws(DocError) -> String {
        var d = KeyDecoder(bytes)
        let id = try d.readString()
        try d.finish()
        return id
    }

    /// The path key of a document (`DocumentKey` order).
    static func path(_ key: DocumentKey) -> [UInt8] {
        var e = KeyEncoder()
        e.append(key: key)
        return e.bytes
    }

    /// The prefix of the keys of the documents directly in `collection`.
    static func collectionPrefix(_ collection: ResourcePath) -> [UInt8] {
        var e = KeyEncoder()
        e.append(path: collection)
        return e.bytes
    }

    /// The prefix of the path keys of every document at any depth under `parent` (the empty
    /// prefix for the root).
    static func descendantsPrefix(_ parent: ResourcePath) -> [UInt8] {
        var bytes = collectionPrefix(parent)
        bytes.removeLast()   // the path's end byte
        return bytes
    }

    /// The end of the keys starting with `prefix`: the keys with it are exactly
    /// `[prefix, prefixEnd(prefix))`; `nil` for the empty prefix (every key, no end).
    static func prefixEnd(_ prefix: [UInt8]) -> [UInt8]? {
        guard !prefix.isEmpty else { return nil }
        return OrderedCode.prefixSuccessor(prefix)
    }

    /// A collection group's name as stored: its UTF-8 bytes (`bytea`: path segments may hold
    /// any character, NUL included, which `text` cannot).
    static func group(_ name: String) -> [UInt8] { Array(name.utf8) }
}

// Binds of `bytea` values are `ByteBuffer`s: a `[UInt8]` would bind as a `char[]`.
extension ByteBuffer {
    /// The readable bytes.
    var bytes: [UInt8] { Array(readableBytesView) }
}

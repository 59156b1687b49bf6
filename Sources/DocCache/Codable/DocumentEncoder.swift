public import DocModel

/// Encodes an `Encodable` model into document fields, for
/// ``DocumentReference/setData(from:merge:encoder:)`` and the other `from:` writes.
///
/// How Swift values are stored (docs/codable.md has the full table):
///
/// - `Bool`, `String`; every integer width as `.integer` (Int64) — a `UInt64` above
///   `Int64.max` is an error, never a wrap; `Double`/`Float` as `.double`.
/// - `Date` as `.timestamp`, to the nanosecond; `Timestamp` as itself.
/// - `Data` as `.bytes`; `URL` as its absolute string.
/// - `Decimal` as a string of its exact decimal digits (`"12345678901234567890.12"`): money
///   never passes through a `Double`. NaN is an error.
/// - `DocumentKey` as a `.reference`, `GeoPoint` and `AttachmentID` as themselves.
/// - Structs and `[String: T]` as maps, arrays as arrays, enums with raw values as the raw
///   value; dictionaries with other keys are an error.
/// - `nil` optionals are left out (``NilEncodingStrategy/omit``) unless
///   ``nilEncodingStrategy`` is ``NilEncodingStrategy/null``.
/// - `@DocumentID` properties are never written; a `@ServerTimestamp` holding `nil` is written
///   as ``FieldValue/serverTimestamp()``.
///
/// Every error is `invalidArgument` with the field's path as its location
/// (`invoices/i1 field lines[2].amount`). The limits (document size, nesting depth, names) are
/// checked when the fields are written, as for ``DocumentReference/setData(_:merge:)``.
public struct DocumentEncoder: Sendable {
    /// What a `nil` optional property writes.
    public enum NilEncodingStrategy: Sendable, Hashable {
        /// Nothing: the field is left out (Firestore's behaviour). With `merge: true` the stored
        /// field keeps its value; without merge the document has no such field.
        case omit
        /// An explicit `null`: with `merge: true` it overwrites the stored value.
        case null
    }

    /// What a `nil` optional property writes; ``NilEncodingStrategy/omit`` by default.
    public var nilEncodingStrategy: NilEncodingStrategy = .omit

    /// Given to the values' `encode(to:)` as `encoder.userInfo`.
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

    /// An encoder that omits `nil` properties, with no `userInfo`.
    public init() {}

    /// The document fields of `value`, which must encode as a map (a struct, a class, a
    /// `[String: T]`).
    ///
    /// - Throws: `invalidArgument` naming the field that could not be encoded.
    public func encode<T: Encodable>(_ value: T) throws(DocError) -> [String: FieldValue] {
        try encode(value, for: nil)
    }

    /// One value as a ``Value``, e.g. to compare a field with a model's enum or `Date` in a
    /// query: `whereField("status", isEqualTo: try encoder.encodeValue(Status.paid))`.
    ///
    /// - Throws: `invalidArgument` for what cannot be stored, and for a `@ServerTimestamp`
    ///   holding nil (a sentinel is not a value).
    public func encodeValue<T: Encodable>(_ value: T) throws(DocError) -> Value {
        let context = EncodingContext(options: self, documentKey: nil)
        let node = try context.node(for: value, parent: [], key: nil)
        return try node.plainValue(at: [], in: nil)
    }

    /// ``encode(_:)`` for the document at `key` (named in errors).
    func encode<T: Encodable>(_ value: T, for key: DocumentKey?) throws(DocError) -> [String: FieldValue] {
        let context = EncodingContext(options: self, documentKey: key)
        let node = try context.node(for: value, parent: [], key: nil)
        guard case .map(let box) = node else {
            throw CodingSite(documentKey: key, parent: []).error(
                "\(T.self) encodes as \(node.kindDescription), but a document is a map: encode a struct, a class or a [String: T]")
        }
        return try box.fieldValues(at: [], in: key)
    }
}

extension EncodedNode {
    var kindDescription: String {
        switch self {
        case .value(let v): return "a single \(v.typeName)"
        case .serverTimestamp: return "a server timestamp"
        case .map: return "a map"
        case .array: return "an array"
        case .deferred: return "a value"
        }
    }
}

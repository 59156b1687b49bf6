public import DocModel

/// Decodes document fields into a `Decodable` model, for
/// ``DocumentSnapshot/data(as:serverTimestamps:decoder:)`` and the other `as:` reads.
///
/// Each stored type is read as ``DocumentEncoder`` writes it (docs/codable.md has the table),
/// and exactly: an integer that does not fit the property (300 into an `Int8`) is an error, a
/// `Decimal` is read from a decimal string (or an integer), never from a double, a `Date` from
/// a timestamp. A missing or `null` field is `nil` for an optional property and an error for
/// any other; fields the type does not declare are ignored. `@DocumentID` properties get the
/// document's id (its path's last segment, or its ``DocumentKey``), whatever the fields hold.
///
/// Every error is `invalidArgument` with the field's path as its location
/// (`invoices/i1 field lines[2].amount`).
public struct DocumentDecoder: Sendable {
    /// Given to the values' `init(from:)` as `decoder.userInfo`.
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

    /// A decoder with no `userInfo`.
    public init() {}

    /// A `T` from a document's fields. `documentKey` fills `@DocumentID` properties (they stay
    /// nil without it) and is named in errors.
    ///
    /// - Throws: `invalidArgument` naming the field that could not be decoded.
    public func decode<T: Decodable>(_ type: T.Type, from fields: [String: Value], documentKey: DocumentKey? = nil) throws(DocError) -> T {
        let context = DecodingContext(options: self, documentKey: documentKey)
        return try context.decode(type, from: .map(fields), parent: [], key: nil)
    }

    /// A `T` from one value (the inverse of ``DocumentEncoder/encodeValue(_:)``).
    ///
    /// - Throws: `invalidArgument` when the value does not fit `T`.
    public func decodeValue<T: Decodable>(_ type: T.Type, from value: Value) throws(DocError) -> T {
        let context = DecodingContext(options: self, documentKey: nil)
        return try context.decode(type, from: value, parent: [], key: nil)
    }
}

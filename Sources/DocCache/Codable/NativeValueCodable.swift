import DocModel

/// A type the document coders write as one ``Value`` of their own, instead of calling its
/// `encode(to:)` / `init(from:)`: numbers, strings, booleans, `Date`, `Data`, `URL`, `Decimal`
/// and the model's `Timestamp`, `GeoPoint`, `DocumentKey` and `AttachmentID`.
///
/// Both directions check exactly: an integer that does not fit (in Int64 when written, in the
/// property's width when read) is an error, never a wrap; a value of another type is an error
/// naming what was found.
protocol NativeValueCodable {
    /// The value to store.
    func nativeValue(at site: CodingSite) throws(DocError) -> Value
    /// The property's value read from `value`.
    static func decodeNative(_ value: Value, at site: CodingSite) throws(DocError) -> Self
}

extension NativeValueCodable {
    /// The error for a stored value of the wrong type.
    static func mismatch(_ value: Value, expected: String, at site: CodingSite) -> DocError {
        if value.isNull { return site.error("expected \(expected) for \(Self.self), found null") }
        return site.error("expected \(expected) for \(Self.self), found \(value.typeName)")
    }
}

// MARK: - Booleans and strings

extension Bool: NativeValueCodable {
    func nativeValue(at site: CodingSite) throws(DocError) -> Value { .boolean(self) }

    static func decodeNative(_ value: Value, at site: CodingSite) throws(DocError) -> Bool {
        guard case .boolean(let b) = value else { throw mismatch(value, expected: "a boolean", at: site) }
        return b
    }
}

extension String: NativeValueCodable {
    func nativeValue(at site: CodingSite) throws(DocError) -> Value { .string(self) }

    static func decodeNative(_ value: Value, at site: CodingSite) throws(DocError) -> String {
        guard case .string(let s) = value else { throw mismatch(value, expected: "a string", at: site) }
        return s
    }
}

// MARK: - Model types

extension Timestamp: NativeValueCodable {
    func nativeValue(at site: CodingSite) throws(DocError) -> Value { .timestamp(self) }

    static func decodeNative(_ value: Value, at site: CodingSite) throws(DocError) -> Timestamp {
        guard case .timestamp(let t) = value else { throw mismatch(value, expected: "a timestamp", at: site) }
        return t
    }
}

extension GeoPoint: NativeValueCodable {
    func nativeValue(at site: CodingSite) throws(DocError) -> Value { .geoPoint(self) }

    static func decodeNative(_ value: Value, at site: CodingSite) throws(DocError) -> GeoPoint {
        guard case .geoPoint(let g) = value else { throw mismatch(value, expected: "a geo point", at: site) }
        return g
    }
}

extension DocumentKey: NativeValueCodable {
    func nativeValue(at site: CodingSite) throws(DocError) -> Value { .reference(self) }

    static func decodeNative(_ value: Value, at site: CodingSite) throws(DocError) -> DocumentKey {
        guard case .reference(let k) = value else { throw mismatch(value, expected: "a reference", at: site) }
        return k
    }
}

extension AttachmentID: NativeValueCodable {
    func nativeValue(at site: CodingSite) throws(DocError) -> Value { .attachment(self) }

    static func decodeNative(_ value: Value, at site: CodingSite) throws(DocError) -> AttachmentID {
        guard case .attachment(let id) = value else { throw mismatch(value, expected: "an attachment", at: site) }
        return id
    }
}

import DocModel

/// What every decoder of one `DocumentDecoder.decode` call shares: the document (for
/// `@DocumentID` and error locations) and the user info.
final class DecodingContext {
    let documentKey: DocumentKey?
    let userInfo: [CodingUserInfoKey: Any]

    init(options: DocumentDecoder, documentKey: DocumentKey?) {
        self.documentKey = documentKey
        self.userInfo = options.userInfo.mapValues { $0 as Any }
    }

    func site(_ parent: [any CodingKey], _ key: (any CodingKey)? = nil) -> CodingSite {
        CodingSite(documentKey: documentKey, parent: parent, key: key)
    }

    /// A `T` read from `value` at `parent` + `key`: the model's own value types directly,
    /// `@DocumentID` from the document's path, everything else by decoding itself.
    func decode<T: Decodable>(_ type: T.Type, from value: Value, parent: [any CodingKey], key: (any CodingKey)?) throws(DocError) -> T {
        let site = site(parent, key)
        if let native = T.self as? any NativeValueCodable.Type {
            return try native.decodeNative(value, at: site) as! T
        }
        if let id = T.self as? any DocumentIDMarker.Type {
            return id.init(documentKey: documentKey) as! T
        }
        if let dictionary = T.self as? any DictionaryKeyCheck.Type, !dictionary.hasStringKeys {
            throw site.error("\(T.self) cannot be read: a map's keys are strings "
                + "(decode a [String: T], or an enum with String raw values that is CodingKeyRepresentable)")
        }
        do {
            return try T(from: DocumentDecoding(value: value, codingPath: site.path, context: self))
        } catch {
            throw site.converting(error)
        }
    }
}

/// The `Decoder` a value decodes itself from: one stored value at one coding path.
struct DocumentDecoding: Decoder {
    let value: Value
    let codingPath: [any CodingKey]
    let context: DecodingContext

    var userInfo: [CodingUserInfoKey: Any] { context.userInfo }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .map(let fields) = value else {
            throw context.site(codingPath).error("expected a map, found \(value.typeName)")
        }
        return KeyedDecodingContainer(DocumentKeyedDecodingContainer<Key>(context: context, fields: fields, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else {
            throw context.site(codingPath).error("expected an array, found \(value.typeName)")
        }
        return DocumentUnkeyedDecodingContainer(context: context, elements: elements, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        DocumentSingleValueDecodingContainer(decoder: self)
    }
}

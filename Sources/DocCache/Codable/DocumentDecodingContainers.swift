import DocModel

/// A map's fields, read by key.
///
/// A missing field is an error for a non-optional property and `nil` for an optional one
/// (`decodeIfPresent`); so is a stored `null`. Fields the type does not declare are ignored.
struct DocumentKeyedDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let context: DecodingContext
    let fields: [String: Value]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { fields.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { fields[key.stringValue] != nil }

    private func missing(_ key: Key) -> DocError {
        context.site(codingPath, key).error("the field is missing")
    }

    private func stored(_ key: Key) throws(DocError) -> Value {
        guard let value = fields[key.stringValue] else { throw missing(key) }
        return value
    }

    private func native<T: NativeValueCodable>(_ type: T.Type, _ key: Key) throws(DocError) -> T {
        try T.decodeNative(try stored(key), at: context.site(codingPath, key))
    }

    func decodeNil(forKey key: Key) throws -> Bool { try stored(key).isNull }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try native(type, key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try native(type, key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try native(type, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try native(type, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try native(type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try native(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try native(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try native(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try native(type, key) }
    func decode(_ type: Int128.Type, forKey key: Key) throws -> Int128 { try native(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try native(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try native(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try native(type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try native(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try native(type, key) }
    func decode(_ type: UInt128.Type, forKey key: Key) throws -> UInt128 { try native(type, key) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        if let id = T.self as? any DocumentIDMarker.Type { return id.init(documentKey: context.documentKey) as! T }
        guard let value = fields[key.stringValue] else {
            if let wrapper = T.self as? any OptionalValueWrapper.Type { return wrapper.absent as! T }
            throw missing(key)
        }
        return try context.decode(type, from: value, parent: codingPath, key: key)
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        if let id = T.self as? any DocumentIDMarker.Type { return id.init(documentKey: context.documentKey) as? T }
        guard let value = fields[key.stringValue], !value.isNull else { return nil }
        return try context.decode(type, from: value, parent: codingPath, key: key)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try DocumentDecoding(value: try stored(key), codingPath: codingPath + [key], context: context).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try DocumentDecoding(value: try stored(key), codingPath: codingPath + [key], context: context).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        DocumentDecoding(value: fields[NameKey.super.stringValue] ?? .null, codingPath: codingPath + [NameKey.super], context: context)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        DocumentDecoding(value: fields[key.stringValue] ?? .null, codingPath: codingPath + [key], context: context)
    }
}

/// An array's elements, read in order.
struct DocumentUnkeyedDecodingContainer: UnkeyedDecodingContainer {
    let context: DecodingContext
    let elements: [Value]
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0

    init(context: DecodingContext, elements: [Value], codingPath: [any CodingKey]) {
        self.context = context
        self.elements = elements
        self.codingPath = codingPath
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private var site: CodingSite { context.site(codingPath, IndexKey(currentIndex)) }

    private func current() throws(DocError) -> Value {
        guard currentIndex < elements.count else {
            throw site.error("the array has only \(elements.count) elements")
        }
        return elements[currentIndex]
    }

    private mutating func native<T: NativeValueCodable>(_ type: T.Type) throws(DocError) -> T {
        let value = try T.decodeNative(try current(), at: site)
        currentIndex += 1
        return value
    }

    mutating func decodeNil() throws -> Bool {
        guard try current().isNull else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try native(type) }
    mutating func decode(_ type: String.Type) throws -> String { try native(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try native(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try native(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try native(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try native(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try native(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try native(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try native(type) }
    mutating func decode(_ type: Int128.Type) throws -> Int128 { try native(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try native(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try native(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try native(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try native(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try native(type) }
    mutating func decode(_ type: UInt128.Type) throws -> UInt128 { try native(type) }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let value = try context.decode(type, from: try current(), parent: codingPath, key: IndexKey(currentIndex))
        currentIndex += 1
        return value
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let container = try DocumentDecoding(value: try current(), codingPath: codingPath + [IndexKey(currentIndex)], context: context)
            .container(keyedBy: type)
        currentIndex += 1
        return container
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let container = try DocumentDecoding(value: try current(), codingPath: codingPath + [IndexKey(currentIndex)], context: context)
            .unkeyedContainer()
        currentIndex += 1
        return container
    }

    mutating func superDecoder() throws -> any Decoder {
        let decoder = DocumentDecoding(value: try current(), codingPath: codingPath + [IndexKey(currentIndex)], context: context)
        currentIndex += 1
        return decoder
    }
}

/// One value (a raw value, an `Optional`, a wrapper's content).
struct DocumentSingleValueDecodingContainer: SingleValueDecodingContainer {
    let decoder: DocumentDecoding

    var codingPath: [any CodingKey] { decoder.codingPath }

    private func native<T: NativeValueCodable>(_ type: T.Type) throws(DocError) -> T {
        try T.decodeNative(decoder.value, at: decoder.context.site(codingPath))
    }

    func decodeNil() -> Bool { decoder.value.isNull }
    func decode(_ type: Bool.Type) throws -> Bool { try native(type) }
    func decode(_ type: String.Type) throws -> String { try native(type) }
    func decode(_ type: Double.Type) throws -> Double { try native(type) }
    func decode(_ type: Float.Type) throws -> Float { try native(type) }
    func decode(_ type: Int.Type) throws -> Int { try native(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try native(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try native(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try native(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try native(type) }
    func decode(_ type: Int128.Type) throws -> Int128 { try native(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try native(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try native(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try native(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try native(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try native(type) }
    func decode(_ type: UInt128.Type) throws -> UInt128 { try native(type) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try decoder.context.decode(type, from: decoder.value, parent: codingPath, key: nil)
    }
}

import DocModel

/// A struct's (or a `[String: T]`'s) fields, written into a map box in place.
///
/// `nil` optionals: the synthesized `encode(to:)` calls `encodeIfPresent`, which leaves the
/// field out (``DocumentEncoder/NilEncodingStrategy/omit``, the default) or writes `null`
/// (``DocumentEncoder/NilEncodingStrategy/null``). `encodeNil(forKey:)` always writes `null`.
/// A `@DocumentID` property is never written.
struct DocumentKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let context: EncodingContext
    let box: MapBox
    let codingPath: [any CodingKey]

    private func put(_ value: some NativeValueCodable, _ key: Key) throws(DocError) {
        let site = CodingSite(documentKey: context.documentKey, parent: codingPath, key: key)
        box.fields[key.stringValue] = .value(try value.nativeValue(at: site))
    }

    private func putIfPresent(_ value: (some NativeValueCodable)?, _ key: Key) throws(DocError) {
        if let value {
            try put(value, key)
        } else if context.options.nilEncodingStrategy == .null {
            box.fields[key.stringValue] = .value(.null)
        }
    }

    mutating func encodeNil(forKey key: Key) throws { box.fields[key.stringValue] = .value(.null) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { box.fields[key.stringValue] = .value(.boolean(value)) }
    mutating func encode(_ value: String, forKey key: Key) throws { box.fields[key.stringValue] = .value(.string(value)) }
    mutating func encode(_ value: Double, forKey key: Key) throws { box.fields[key.stringValue] = .value(.double(value)) }
    mutating func encode(_ value: Float, forKey key: Key) throws { box.fields[key.stringValue] = .value(.double(Double(value))) }
    mutating func encode(_ value: Int, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { box.fields[key.stringValue] = .value(.integer(value)) }
    mutating func encode(_ value: Int128, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: UInt128, forKey key: Key) throws { try put(value, key) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        // The document's id comes from its path: it is never a field.
        if value is any DocumentIDMarker { return }
        box.fields[key.stringValue] = try context.node(for: value, parent: codingPath, key: key)
    }

    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { try putIfPresent(value, key) }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { try putIfPresent(value, key) }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws { try putIfPresent(value, key) }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws { try putIfPresent(value, key) }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { try putIfPresent(value, key) }
    mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws { try putIfPresent(value, key) }
    mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws { try putIfPresent(value, key) }
    mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws { try putIfPresent(value, key) }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { try putIfPresent(value, key) }
    mutating func encodeIfPresent(_ value: Int128?, forKey key: Key) throws { try putIfPresent(value, key) }
    mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws { try putIfPresent(value, key) }
    mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws { try putIfPresent(value, key) }
    mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws { try putIfPresent(value, key) }
    mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws { try putIfPresent(value, key) }
    mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws { try putIfPresent(value, key) }
    mutating func encodeIfPresent(_ value: UInt128?, forKey key: Key) throws { try putIfPresent(value, key) }

    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value {
            try encode(value, forKey: key)
        } else if context.options.nilEncodingStrategy == .null {
            box.fields[key.stringValue] = .value(.null)
        }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let nested: MapBox
        if case .map(let existing)? = box.fields[key.stringValue] {
            nested = existing
        } else {
            nested = MapBox()
            box.fields[key.stringValue] = .map(nested)
        }
        let path = codingPath + [key]
        return KeyedEncodingContainer(DocumentKeyedEncodingContainer<NestedKey>(context: context, box: nested, codingPath: path))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested: ArrayBox
        if case .array(let existing)? = box.fields[key.stringValue] {
            nested = existing
        } else {
            nested = ArrayBox()
            box.fields[key.stringValue] = .array(nested)
        }
        return DocumentUnkeyedEncodingContainer(context: context, box: nested, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder { superEncoder(named: NameKey.super) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(named: key) }

    private func superEncoder(named key: any CodingKey) -> any Encoder {
        let slot = NodeSlot()
        box.fields[key.stringValue] = .deferred(slot)
        return DocumentEncoding(codingPath: codingPath + [key], context: context, slot: slot)
    }
}

/// An array's elements, appended to an array box in place.
struct DocumentUnkeyedEncodingContainer: UnkeyedEncodingContainer {
    let context: EncodingContext
    let box: ArrayBox
    let codingPath: [any CodingKey]

    var count: Int { box.elements.count }

    private func append(_ value: some NativeValueCodable) throws(DocError) {
        let site = CodingSite(documentKey: context.documentKey, parent: codingPath, key: IndexKey(box.elements.count))
        box.elements.append(.value(try value.nativeValue(at: site)))
    }

    mutating func encodeNil() throws { box.elements.append(.value(.null)) }
    mutating func encode(_ value: Bool) throws { box.elements.append(.value(.boolean(value))) }
    mutating func encode(_ value: String) throws { box.elements.append(.value(.string(value))) }
    mutating func encode(_ value: Double) throws { box.elements.append(.value(.double(value))) }
    mutating func encode(_ value: Float) throws { box.elements.append(.value(.double(Double(value)))) }
    mutating func encode(_ value: Int) throws { try append(value) }
    mutating func encode(_ value: Int8) throws { try append(value) }
    mutating func encode(_ value: Int16) throws { try append(value) }
    mutating func encode(_ value: Int32) throws { try append(value) }
    mutating func encode(_ value: Int64) throws { box.elements.append(.value(.integer(value))) }
    mutating func encode(_ value: Int128) throws { try append(value) }
    mutating func encode(_ value: UInt) throws { try append(value) }
    mutating func encode(_ value: UInt8) throws { try append(value) }
    mutating func encode(_ value: UInt16) throws { try append(value) }
    mutating func encode(_ value: UInt32) throws { try append(value) }
    mutating func encode(_ value: UInt64) throws { try append(value) }
    mutating func encode(_ value: UInt128) throws { try append(value) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        box.elements.append(try context.node(for: value, parent: codingPath, key: IndexKey(box.elements.count)))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let nested = MapBox()
        let path = codingPath + [IndexKey(box.elements.count)]
        box.elements.append(.map(nested))
        return KeyedEncodingContainer(DocumentKeyedEncodingContainer<NestedKey>(context: context, box: nested, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let nested = ArrayBox()
        let path = codingPath + [IndexKey(box.elements.count)]
        box.elements.append(.array(nested))
        return DocumentUnkeyedEncodingContainer(context: context, box: nested, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        let slot = NodeSlot()
        let path = codingPath + [IndexKey(box.elements.count)]
        box.elements.append(.deferred(slot))
        return DocumentEncoding(codingPath: path, context: context, slot: slot)
    }
}

/// One value (a `RawRepresentable` enum's raw value, an `Optional`, a wrapper's content).
struct DocumentSingleValueEncodingContainer: SingleValueEncodingContainer {
    let encoder: DocumentEncoding

    var codingPath: [any CodingKey] { encoder.codingPath }

    private func set(_ node: EncodedNode) {
        guard encoder.slot.node == nil else {
            encoder.context.record("a single value was encoded where something was already encoded", at: codingPath)
            return
        }
        encoder.slot.node = node
    }

    private func put(_ value: some NativeValueCodable) throws(DocError) {
        set(.value(try value.nativeValue(at: CodingSite(documentKey: encoder.context.documentKey, parent: codingPath))))
    }

    mutating func encodeNil() throws { set(.value(.null)) }
    mutating func encode(_ value: Bool) throws { set(.value(.boolean(value))) }
    mutating func encode(_ value: String) throws { set(.value(.string(value))) }
    mutating func encode(_ value: Double) throws { set(.value(.double(value))) }
    mutating func encode(_ value: Float) throws { set(.value(.double(Double(value)))) }
    mutating func encode(_ value: Int) throws { try put(value) }
    mutating func encode(_ value: Int8) throws { try put(value) }
    mutating func encode(_ value: Int16) throws { try put(value) }
    mutating func encode(_ value: Int32) throws { try put(value) }
    mutating func encode(_ value: Int64) throws { set(.value(.integer(value))) }
    mutating func encode(_ value: Int128) throws { try put(value) }
    mutating func encode(_ value: UInt) throws { try put(value) }
    mutating func encode(_ value: UInt8) throws { try put(value) }
    mutating func encode(_ value: UInt16) throws { try put(value) }
    mutating func encode(_ value: UInt32) throws { try put(value) }
    mutating func encode(_ value: UInt64) throws { try put(value) }
    mutating func encode(_ value: UInt128) throws { try put(value) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        set(try encoder.context.node(for: value, parent: codingPath, key: nil))
    }
}

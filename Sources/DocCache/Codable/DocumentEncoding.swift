import DocModel

/// What every encoder of one `DocumentEncoder.encode` call shares: the options, the document
/// (for error locations) and the first misuse a container could not throw for.
final class EncodingContext {
    let options: DocumentEncoder
    let documentKey: DocumentKey?
    let userInfo: [CodingUserInfoKey: Any]
    /// The first error of a call that cannot throw (`container(keyedBy:)` after a single value).
    var failure: DocError?

    /// Deeper than any document may be (``DocumentLimits/maxDepth``), so a value that refers to
    /// itself fails with an error instead of overflowing the stack.
    static let maxCodingDepth = 4 * DocumentLimits.maxDepth

    init(options: DocumentEncoder, documentKey: DocumentKey?) {
        self.options = options
        self.documentKey = documentKey
        self.userInfo = options.userInfo.mapValues { $0 as Any }
    }

    func record(_ message: String, at path: [any CodingKey]) {
        if failure == nil { failure = CodingSite(documentKey: documentKey, parent: path).error(message) }
    }

    /// The node for `value` at `parent` + `key`: the model's own value types and the property
    /// wrappers directly, everything else by letting it encode itself into a child encoder.
    func node<T: Encodable>(for value: T, parent: [any CodingKey], key: (any CodingKey)?) throws(DocError) -> EncodedNode {
        let site = CodingSite(documentKey: documentKey, parent: parent, key: key)
        if let native = value as? any NativeValueCodable { return .value(try native.nativeValue(at: site)) }
        if let wrapper = value as? any ServerTimestampEncoding { return try wrapper.encodedNode(at: site) }
        if let dictionary = value as? any DictionaryKeyCheck, !type(of: dictionary).hasStringKeys {
            throw site.error("\(T.self) cannot be stored: a map's keys must be strings "
                + "(String, or an enum with String raw values that is CodingKeyRepresentable)")
        }
        let path = site.path
        guard path.count <= Self.maxCodingDepth else {
            throw site.error("the value nests deeper than \(Self.maxCodingDepth) levels (does it refer to itself?)")
        }
        let child = DocumentEncoding(codingPath: path, context: self)
        do {
            try value.encode(to: child)
        } catch {
            throw site.converting(error)
        }
        if let failure { throw failure }
        // A value that encoded nothing is an empty map, as JSONEncoder writes `{}`.
        return child.slot.node ?? .map(MapBox())
    }
}

/// The `Encoder` a value encodes itself into, at one coding path.
final class DocumentEncoding: Encoder {
    let codingPath: [any CodingKey]
    let context: EncodingContext
    let slot: NodeSlot

    var userInfo: [CodingUserInfoKey: Any] { context.userInfo }

    init(codingPath: [any CodingKey], context: EncodingContext, slot: NodeSlot = NodeSlot()) {
        self.codingPath = codingPath
        self.context = context
        self.slot = slot
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let box: MapBox
        switch slot.node {
        case .map(let existing)?:
            box = existing
        case nil:
            box = MapBox()
            slot.node = .map(box)
        default:
            context.record("a keyed container was asked for where a value was already encoded", at: codingPath)
            box = MapBox()
        }
        return KeyedEncodingContainer(DocumentKeyedEncodingContainer<Key>(context: context, box: box, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let box: ArrayBox
        switch slot.node {
        case .array(let existing)?:
            box = existing
        case nil:
            box = ArrayBox()
            slot.node = .array(box)
        default:
            context.record("an unkeyed container was asked for where a value was already encoded", at: codingPath)
            box = ArrayBox()
        }
        return DocumentUnkeyedEncodingContainer(context: context, box: box, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        DocumentSingleValueEncodingContainer(encoder: self)
    }
}

import DocModel

/// What the document encoder builds while a value encodes itself: a tree whose maps and
/// arrays are reference-typed boxes, so a nested container writes into its parent in place
/// (appending to an array or setting a field never copies what was encoded before). The tree
/// becomes a ``FieldValue`` once, at the end.
enum EncodedNode {
    case value(Value)
    /// `@ServerTimestamp` holding nil: the server-timestamp sentinel.
    case serverTimestamp
    case map(MapBox)
    case array(ArrayBox)
    /// An encoder handed out by `superEncoder()`: whatever it encodes, whenever it does.
    case deferred(NodeSlot)
}

final class MapBox {
    var fields: [String: EncodedNode] = [:]
}

final class ArrayBox {
    var elements: [EncodedNode] = []
}

/// Where an encoder puts what it encodes (a single value, or the box of its container).
final class NodeSlot {
    var node: EncodedNode?
}

extension EncodedNode {
    /// The node as a field value: a server timestamp becomes the sentinel, maps stay
    /// `FieldValue.map` (as a dictionary literal given to `setData` does, so `merge: true`
    /// merges them key by key), everything else becomes a plain `Value`.
    ///
    /// - Throws: `invalidArgument` for a server timestamp inside an array (Firestore's rule: an
    ///   array element cannot be a transform), naming its path.
    func fieldValue(at path: [any CodingKey], in documentKey: DocumentKey?) throws(DocError) -> FieldValue {
        switch self {
        case .value(let v): return .value(v)
        case .serverTimestamp: return .serverTimestampSentinel
        case .map(let box): return .map(try box.fieldValues(at: path, in: documentKey))
        case .array(let box): return .value(try box.value(at: path, in: documentKey))
        case .deferred(let slot): return try (slot.node ?? .map(MapBox())).fieldValue(at: path, in: documentKey)
        }
    }

    /// The node as a plain value (inside an array, where a sentinel cannot be).
    func plainValue(at path: [any CodingKey], in documentKey: DocumentKey?) throws(DocError) -> Value {
        switch self {
        case .value(let v):
            return v
        case .serverTimestamp:
            throw CodingSite(documentKey: documentKey, parent: path).error(
                "a server timestamp (@ServerTimestamp holding nil) cannot be inside an array")
        case .map(let box):
            var fields: [String: Value] = [:]
            fields.reserveCapacity(box.fields.count)
            for (name, node) in box.fields {
                if case .value(let v) = node { fields[name] = v; continue }
                fields[name] = try node.plainValue(at: path + [NameKey(name)], in: documentKey)
            }
            return .map(fields)
        case .array(let box):
            return try box.value(at: path, in: documentKey)
        case .deferred(let slot):
            return try (slot.node ?? .map(MapBox())).plainValue(at: path, in: documentKey)
        }
    }
}

extension MapBox {
    /// The fields as field values (a document's top level, or a nested map).
    func fieldValues(at path: [any CodingKey], in documentKey: DocumentKey?) throws(DocError) -> [String: FieldValue] {
        var out: [String: FieldValue] = [:]
        out.reserveCapacity(fields.count)
        for (name, node) in fields {
            if case .value(let v) = node { out[name] = .value(v); continue }
            out[name] = try node.fieldValue(at: path + [NameKey(name)], in: documentKey)
        }
        return out
    }
}

extension ArrayBox {
    func value(at path: [any CodingKey], in documentKey: DocumentKey?) throws(DocError) -> Value {
        var values: [Value] = []
        values.reserveCapacity(elements.count)
        for (index, node) in elements.enumerated() {
            if case .value(let v) = node { values.append(v); continue }
            values.append(try node.plainValue(at: path + [IndexKey(index)], in: documentKey))
        }
        return .array(values)
    }
}

package import DocModel

/// Turns what a user passes to `setData` / `updateData` into a ``Mutation``: plain values
/// become document data, sentinels become field transforms or deletions. It refuses what only
/// it can see (`FieldValue.delete()` outside an update or merge, an empty update, overlapping
/// update fields, bad sentinel field paths); the limits (size, depth, field names) and the
/// transforms are checked by `Mutation.validate` in `LocalStore.writeLocally`, before anything
/// is written.
package enum UserDataParser {
    /// `setData(data)`: replaces the document.
    package static func set(_ key: DocumentKey, _ data: [String: FieldValue]) throws(DocError) -> Mutation {
        // The same result as walking with `Parsed` (which also collects a mask, which a set
        // does not need), built directly: nested maps as values, not field by field.
        // Data without sentinels (the usual case) converts map by map with `mapValues`, which
        // keeps each dictionary's hash table instead of hashing every key again.
        if let plain = plainValues(data) { return .set(key, ObjectValue(plain), transforms: []) }
        var transforms: [FieldTransform] = []
        var path: [String] = []
        let fields = try setFields(data, path: &path, transforms: &transforms, key: key)
        return .set(key, ObjectValue(fields), transforms: transforms)
    }

    /// `data` as plain values, or nil when it holds a sentinel anywhere (a transform or a
    /// delete, which `setFields` handles). An empty map is a value, as in `setFields`.
    private static func plainValues(_ data: [String: FieldValue]) -> [String: Value]? {
        var plain = true
        let values = data.mapValues { field -> Value in
            switch field {
            case .value(let value):
                return value
            case .map(let nested):
                if plain, let inner = plainValues(nested) { return .map(inner) }
                plain = false
                return .null
            default:
                plain = false
                return .null
            }
        }
        return plain ? values : nil
    }

    /// The fields of `data` (at `path`) for a `set`; sentinels become `transforms`.
    private static func setFields(
        _ data: [String: FieldValue], path: inout [String], transforms: inout [FieldTransform], key: DocumentKey
    ) throws(DocError) -> [String: Value] {
        var fields: [String: Value] = [:]
        fields.reserveCapacity(data.count)
        for (name, value) in data {
            // Plain values: names, depth and size are checked once for the whole document by
            // `Mutation.validate` (DocumentLimits), so no per-field path validation here.
            if case .value(let v) = value {
                fields[name] = v
                continue
            }
            path.append(name)
            defer { path.removeLast() }
            let fieldPath = try FieldPath(segments: path)
            switch value {
            case .value:
                break
            case .map(let m):
                // A map of only sentinels writes nothing itself; an empty map is a value.
                let nested = try setFields(m, path: &path, transforms: &transforms, key: key)
                if !nested.isEmpty || m.isEmpty { fields[name] = .map(nested) }
            case .serverTimestampSentinel:
                transforms.append(.serverTimestamp(fieldPath))
            case .incrementSentinel(let n):
                transforms.append(.increment(fieldPath, by: n))
            case .arrayUnionSentinel(let elements):
                transforms.append(.arrayUnion(fieldPath, elements))
            case .arrayRemoveSentinel(let elements):
                transforms.append(.arrayRemove(fieldPath, elements))
            case .deleteSentinel:
                throw DocError(.invalidArgument, "FieldValue.delete() is only allowed in updateData and setData(merge: true), not in setData",
                               at: "\(key) field \(fieldPath)")
            }
        }
        return fields
    }

    /// `setData(data, merge: true)`: writes only the given fields (nested maps merge too).
    package static func setMerge(_ key: DocumentKey, _ data: [String: FieldValue]) throws(DocError) -> Mutation {
        var parsed = Parsed()
        try parsed.walk(data, prefix: [], key: key, allowDelete: true, operation: "setData(merge:)")
        return .setMerge(key, parsed.object, fields: parsed.maskPaths, transforms: parsed.transforms)
    }

    /// `updateData(fields)`: keys are field paths (`"address.city"`); the document must exist.
    package static func update(
        _ key: DocumentKey, _ fields: [String: FieldValue], precondition: Precondition = .exists(true)
    ) throws(DocError) -> Mutation {
        guard !fields.isEmpty else {
            throw DocError(.invalidArgument, "updateData needs at least one field", at: key.description)
        }
        var parsed = Parsed()
        var seen: [FieldPath] = []
        for (text, value) in fields {
            let path = try FieldPath(text)
            if let clash = seen.first(where: { $0.isPrefix(of: path) || path.isPrefix(of: $0) }) {
                throw DocError(.invalidArgument, "field \(path) overlaps field \(clash) in the same update", at: key.description)
            }
            seen.append(path)
            try parsed.add(value, at: path.segments, key: key, allowDelete: true, operation: "updateData", topLevelMask: true)
        }
        return Mutation(key: key, kind: .patch(parsed.object, FieldMask(parsed.maskPaths)),
                        fieldTransforms: parsed.transforms, precondition: precondition)
    }

    private struct Parsed {
        var object = ObjectValue()
        var transforms: [FieldTransform] = []
        var maskPaths: [FieldPath] = []

        mutating func walk(
            _ data: [String: FieldValue], prefix: [String], key: DocumentKey, allowDelete: Bool, operation: String
        ) throws(DocError) {
            if data.isEmpty, !prefix.isEmpty {
                object.set(.map([:]), at: FieldPath(unchecked: prefix))
                maskPaths.append(FieldPath(unchecked: prefix))
            }
            for (name, value) in data {
                try add(value, at: prefix + [name], key: key, allowDelete: allowDelete, operation: operation, topLevelMask: false)
            }
        }

        mutating func add(
            _ value: FieldValue, at segments: [String], key: DocumentKey, allowDelete: Bool, operation: String,
            topLevelMask: Bool
        ) throws(DocError) {
            if case .value(let v) = value {
                // Plain values: names, depth and size are checked once for the whole document by
                // `Mutation.validate` (DocumentLimits), so no per-field path validation here.
                let path = FieldPath(unchecked: segments)
                if segments.count == 1 { object.fields[segments[0]] = v } else { object.set(v, at: path) }
                maskPaths.append(path)
                return
            }
            let path = try FieldPath(segments: segments)
            var at: String { "\(key) field \(path)" }
            switch value {
            case .value:
                return
            case .map(let m):
                if topLevelMask {
                    // updateData replaces the map at this path as a whole.
                    var nested = Parsed()
                    try nested.walk(m, prefix: [], key: key, allowDelete: false, operation: operation)
                    object.set(.map(nested.object.fields), at: path)
                    maskPaths.append(path)
                    transforms += nested.transforms.map { FieldTransform(FieldPath(unchecked: segments + $0.path.segments), $0.operation) }
                } else {
                    try walk(m, prefix: segments, key: key, allowDelete: allowDelete, operation: operation)
                }
            case .serverTimestampSentinel:
                transforms.append(.serverTimestamp(path))
            case .incrementSentinel(let n):
                transforms.append(.increment(path, by: n))
            case .arrayUnionSentinel(let elements):
                transforms.append(.arrayUnion(path, elements))
            case .arrayRemoveSentinel(let elements):
                transforms.append(.arrayRemove(path, elements))
            case .deleteSentinel:
                guard allowDelete else {
                    throw DocError(.invalidArgument, "FieldValue.delete() is only allowed in updateData and setData(merge: true), not in \(operation)", at: at)
                }
                maskPaths.append(path)
            }
        }
    }
}

/// The fields of a document: a map from field names to values, addressed by ``FieldPath``.
///
/// Equality is structural (``Value/isIdentical(to:)``): it answers "did the stored data
/// change", so integer `1` and double `1.0` differ here although they compare equal in queries.
public struct ObjectValue: Sendable, Hashable {
    public static func == (a: ObjectValue, b: ObjectValue) -> Bool { a.isIdentical(to: b) }

    public func hash(into hasher: inout Hasher) { hasher.combine(Value.map(fields)) }

    /// The top-level fields by name; nested fields live in `.map` values.
    public var fields: [String: Value]

    /// Wraps top-level fields as given (not validated; see ``DocumentLimits/validate(_:for:)``).
    public init(_ fields: [String: Value] = [:]) { self.fields = fields }

    /// A document with no fields.
    public static let empty = ObjectValue()

    /// The value at `path`, or `nil` when any segment is missing or crosses a non-map.
    public subscript(path: FieldPath) -> Value? {
        // Most paths are one top-level field: one lookup, no copy of the map.
        if path.segments.count == 1 { return fields[path.segments[0]] }
        var current: [String: Value] = fields
        for (i, segment) in path.segments.enumerated() {
            guard let v = current[segment] else { return nil }
            if i == path.count - 1 { return v }
            guard case .map(let m) = v else { return nil }
            current = m
        }
        return nil
    }

    /// The value of a top-level field.
    public subscript(field: String) -> Value? { fields[field] }

    /// Sets `value` at `path`, creating intermediate maps and replacing non-map values on the way.
    public mutating func set(_ value: Value, at path: FieldPath) {
        Self.set(value, at: path.segments[...], in: &fields)
    }

    /// Removes the field at `path`; missing paths are ignored.
    public mutating func delete(at path: FieldPath) {
        Self.delete(at: path.segments[...], in: &fields)
    }

    private static func set(_ value: Value, at segments: ArraySlice<String>, in map: inout [String: Value]) {
        let head = segments.first!
        if segments.count == 1 {
            map[head] = value
            return
        }
        var child: [String: Value]
        if case .map(let m)? = map[head], !(map[head]!.isServerTimestamp) { child = m } else { child = [:] }
        map[head] = nil   // release the old reference so the child map is uniquely owned
        set(value, at: segments.dropFirst(), in: &child)
        map[head] = .map(child)
    }

    private static func delete(at segments: ArraySlice<String>, in map: inout [String: Value]) {
        let head = segments.first!
        if segments.count == 1 {
            map[head] = nil
            return
        }
        guard case .map(var child)? = map[head], !(map[head]!.isServerTimestamp) else { return }
        map[head] = nil
        delete(at: segments.dropFirst(), in: &child)
        map[head] = .map(child)
    }

    /// Every leaf field path (maps are descended; empty maps count as leaves). This is the
    /// field mask of a full `set`.
    public var leafPaths: [FieldPath] {
        var out: [FieldPath] = []
        func walk(_ map: [String: Value], _ prefix: [String]) {
            for (k, v) in map {
                if case .map(let m) = v, !m.isEmpty, !v.isServerTimestamp {
                    walk(m, prefix + [k])
                } else {
                    out.append(FieldPath(unchecked: prefix + [k]))
                }
            }
        }
        walk(fields, [])
        return out.sorted()
    }

    /// Structural identity (see ``Value/isIdentical(to:)``).
    public func isIdentical(to other: ObjectValue) -> Bool {
        Value.map(fields).isIdentical(to: .map(other.fields))
    }

    /// The nesting depth of the document (1 for a flat document of scalars).
    public var depth: Int { Value.map(fields).depth }
}

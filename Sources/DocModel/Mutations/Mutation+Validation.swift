// Checks of user input, run before a mutation is queued and again by the server.

extension Mutation {
    /// Checks the mutation as user input, throwing `invalidArgument` naming the document and
    /// the field at fault:
    /// - the data of a set or patch passes ``DocumentLimits/validate(_:for:)`` and holds no
    ///   pending server timestamps (those are written with a ``TransformOperation/serverTimestamp``
    ///   transform);
    /// - a patch's mask names no reserved field and no path inside another masked path;
    /// - each transform is valid (``FieldTransform/validate(for:)``), no field is transformed
    ///   twice or inside another transformed field (a tombstone transforms `deletedAt` and
    ///   `updatedAt` itself), and no transform targets a field the data writes;
    /// - a delete or verify has no transforms.
    public func validate() throws(DocError) {
        _ = try check(encoding: false)
    }

    /// Checks the mutation as ``validate()`` does and returns the storage encoding of its data
    /// (``ObjectValue/binaryEncoded()``; `nil` for a mutation without data), made in the same
    /// walk as the data's checks.
    package func validatedDataEncoding() throws(DocError) -> [UInt8]? {
        try check(encoding: true)
    }

    private func check(encoding: Bool) throws(DocError) -> [UInt8]? {
        guard fieldTransforms.count <= DocumentLimits.maxFieldTransforms else {
            throw .invalid("a write has \(fieldTransforms.count) field transforms; the limit is \(DocumentLimits.maxFieldTransforms)",
                           at: key.description)
        }
        var encoded: [UInt8]?
        switch kind {
        case .set(let data):
            encoded = try Self.checkData(data, key: key, encoding: encoding)
        case .patch(let data, let mask):
            encoded = try Self.checkData(data, key: key, encoding: encoding)
            for (i, path) in mask.paths.enumerated() {
                try Self.checkWritable(path, key: key, what: "the field mask")
                if i > 0, mask.paths[i - 1].isPrefix(of: path) {
                    throw .invalid(
                        "field \(path) lies inside field \(mask.paths[i - 1]), which the mask also writes",
                        at: Self.location(key, path))
                }
            }
        case .delete, .verify:
            if !fieldTransforms.isEmpty {
                throw .invalid("a \(kind == .delete ? "delete" : "verify") cannot have field transforms",
                               at: key.description)
            }
        case .tombstone:
            for transform in fieldTransforms {
                let path = transform.path
                if path.firstSegment == tombstoneField || path.firstSegment == updatedAtField {
                    throw .invalid("a tombstone sets \(path.firstSegment) itself; it cannot also be transformed",
                                   at: Self.location(key, path))
                }
            }
        }
        let transforms = effectiveTransforms
        for (i, transform) in transforms.enumerated() {
            try transform.validate(for: key)
            for earlier in transforms[..<i] {
                if earlier.path == transform.path {
                    throw .invalid("field \(transform.path) is transformed twice", at: Self.location(key, transform.path))
                }
                if earlier.path.isPrefix(of: transform.path) || transform.path.isPrefix(of: earlier.path) {
                    throw .invalid("transforms of \(earlier.path) and \(transform.path) overlap",
                                   at: Self.location(key, transform.path))
                }
            }
            if let conflict = dataConflict(with: transform.path) {
                throw .invalid(
                    "field \(transform.path) is transformed and also written by the data (at \(conflict))",
                    at: Self.location(key, transform.path))
            }
        }
        return encoded
    }

    /// Checks the data of a set or patch; returns its encoding when `encoding`.
    private static func checkData(_ data: ObjectValue, key: DocumentKey, encoding: Bool) throws(DocError) -> [UInt8]? {
        if encoding { return try DocumentLimits.validatedEncoding(of: data, for: key) }
        try DocumentLimits.validate(data, for: key, allowingPendingServerTimestamps: false)
        return nil
    }

    /// The path of the data written by the mutation that a transform of `path` would collide
    /// with: a value at `path` itself or inside it, or a non-map value on the way to it.
    func dataConflict(with path: FieldPath) -> FieldPath? {
        switch kind {
        case .set(let data):
            return Self.conflict(of: path, in: data, below: 0)
        case .patch(let data, let mask):
            // The mask is sorted: its prefixes of `path` (shortest first, as they sort) are looked
            // up one by one, then the paths inside `path` follow it in the mask. Binary searches,
            // so a long mask costs a transform little.
            for length in 1...path.count {
                let masked = length == path.count ? path : FieldPath(unchecked: Array(path.segments.prefix(length)))
                guard mask.contains(masked) else { continue }
                if masked == path { return masked }
                // The patch writes `masked` (or deletes it when the data has no value there).
                if case .none = data[masked] { return masked }
                if let conflict = Self.conflict(of: path, in: data, below: masked.count - 1) { return conflict }
            }
            let next = mask.firstIndex(notBefore: path)
            if next < mask.paths.count, path.isPrefix(of: mask.paths[next]) { return mask.paths[next] }
            return nil
        case .delete, .tombstone, .verify:
            return nil
        }
    }

    /// A conflict for a transform of `path` in `data`, looking at prefixes of at least
    /// `below + 1` segments.
    private static func conflict(of path: FieldPath, in data: ObjectValue, below: Int) -> FieldPath? {
        if case .some = data[path] { return path }
        for length in (below + 1)..<path.count {
            let prefix = FieldPath(unchecked: Array(path.segments.prefix(length)))
            if let v = data[prefix], v.mapValue == nil || v.isServerTimestamp { return prefix }
        }
        return nil
    }

    static func rejectPendingServerTimestamps(in value: Value, path: [String], key: DocumentKey) throws(DocError) {
        var path = path
        try rejectPendingServerTimestamps(in: value, path: &path, key: key)
    }

    /// The walk of ``rejectPendingServerTimestamps(in:path:key:)``: `path` is pushed and
    /// popped, not copied per field.
    private static func rejectPendingServerTimestamps(in value: Value, path: inout [String], key: DocumentKey) throws(DocError) {
        switch value {
        case .map(let m):
            if value.isServerTimestamp {
                throw .invalid("a pending server timestamp cannot be written as data; use a serverTimestamp transform",
                               at: location(key, FieldPath(unchecked: path)))
            }
            for (k, v) in m {
                path.append(k)
                try rejectPendingServerTimestamps(in: v, path: &path, key: key)
                path.removeLast()
            }
        case .array(let a):
            for v in a { try rejectPendingServerTimestamps(in: v, path: &path, key: key) }
        default:
            break
        }
    }

    static func checkWritable(_ path: FieldPath, key: DocumentKey, what: String) throws(DocError) {
        if path.isDocumentID {
            throw .invalid("\(what) cannot name the document id (__name__)", at: location(key, path))
        }
        for segment in path.segments where isReservedName(segment) {
            throw .invalid("field name \"\(segment)\" is reserved (names matching __.*__ are)", at: location(key, path))
        }
    }

    static func location(_ key: DocumentKey, _ path: FieldPath) -> String { "\(key) field \(path)" }
}

extension FieldTransform {
    /// Checks the transform as user input, throwing `invalidArgument` naming the document and
    /// field: the path must not be the document id or a reserved name; an increment's operand
    /// must be an integer or a double; array union and remove operands must not be arrays
    /// themselves (arrays cannot directly contain arrays), must not be pending server
    /// timestamps, and must pass ``DocumentLimits`` as the field's value.
    public func validate(for key: DocumentKey) throws(DocError) {
        try Mutation.checkWritable(path, key: key, what: "a field transform")
        let at = Mutation.location(key, path)
        switch operation {
        case .serverTimestamp:
            return
        case .increment(let operand):
            guard operand.isNumber else {
                throw .invalid("increment needs an integer or double operand, got \(operand.typeName)", at: at)
            }
        case .arrayUnion(let elements), .arrayRemove(let elements):
            let name = if case .arrayUnion = operation { "arrayUnion" } else { "arrayRemove" }
            for element in elements {
                if case .array = element {
                    throw .invalid("\(name) elements cannot be arrays (arrays cannot directly contain arrays)", at: at)
                }
            }
            try Mutation.rejectPendingServerTimestamps(in: .array(elements), path: path.segments, key: key)
            var probe = ObjectValue()
            probe.set(.array(elements), at: path)
            try DocumentLimits.validate(probe, for: key, allowingPendingServerTimestamps: false)
        }
    }
}

/// A server-side transformation of one field's value, as in Firestore's `FieldValue`
/// sentinels.
///
/// Equality is structural (``Value/isIdentical(to:)``): `increment(1)` and `increment(1.0)`
/// are different operations, as are `arrayUnion([1])` and `arrayUnion([1.0])`.
public enum TransformOperation: Sendable, Hashable, CustomStringConvertible {
    /// Sets the field to the commit time. Locally, until acknowledged, the field holds a
    /// pending server timestamp (``Value/pendingServerTimestamp(localWriteTime:previous:)``).
    case serverTimestamp
    /// Adds the operand (an integer or a double) to the field. A field that is not a number
    /// counts as integer `0`. Integer + integer is integer addition saturating at
    /// `Int64.min` / `Int64.max`; when either side is a double the result is a double.
    case increment(Value)
    /// Appends each element not already present (compared with
    /// ``Value/isIdentical(to:)``, so `1` and `1.0` are distinct). A field that is not an
    /// array counts as `[]`.
    case arrayUnion([Value])
    /// Removes every element identical to one of the operands. A field that is not an array
    /// counts as `[]`.
    case arrayRemove([Value])

    /// Structural equality: operands compared with ``Value/isIdentical(to:)``.
    public static func == (a: TransformOperation, b: TransformOperation) -> Bool {
        switch (a, b) {
        case (.serverTimestamp, .serverTimestamp): return true
        case let (.increment(x), .increment(y)): return x.isIdentical(to: y)
        case let (.arrayUnion(x), .arrayUnion(y)), let (.arrayRemove(x), .arrayRemove(y)):
            return Value.array(x).isIdentical(to: .array(y))
        default: return false
        }
    }

    /// Hashing consistent with the structural `==`.
    public func hash(into hasher: inout Hasher) {
        // Identical values are semantically equal, so `Value`'s hash is consistent with `==`.
        switch self {
        case .serverTimestamp: hasher.combine(0)
        case .increment(let v): hasher.combine(1); hasher.combine(v)
        case .arrayUnion(let v): hasher.combine(2); hasher.combine(v)
        case .arrayRemove(let v): hasher.combine(3); hasher.combine(v)
        }
    }

    /// The operation and its operands in canonical form: `increment(1)`.
    public var description: String {
        switch self {
        case .serverTimestamp: return "serverTimestamp"
        case .increment(let v): return "increment(\(v.canonicalString))"
        case .arrayUnion(let v): return "arrayUnion(\(Value.array(v).canonicalString))"
        case .arrayRemove(let v): return "arrayRemove(\(Value.array(v).canonicalString))"
        }
    }

    /// Whether applying the operation twice gives the same value as applying it once
    /// (everything but ``increment(_:)``).
    public var isIdempotent: Bool {
        if case .increment = self { return false }
        return true
    }

    // MARK: Value computations shared by every context

    /// The field's new value computed from its `previous` value, for the operations the
    /// client can compute itself (increment, array union and remove).
    ///
    /// Server timestamps are not computable from the previous value; for them this returns
    /// `nil`.
    func computed(from previous: Value?) -> Value? {
        switch self {
        case .serverTimestamp:
            return nil
        case .increment(let operand):
            return Self.increment(previous, by: operand)
        case .arrayUnion(let elements):
            var array = previous?.arrayValue ?? []
            var present = Set(array.map { Self.identity(of: $0) })
            for element in elements where present.insert(Self.identity(of: element)).inserted {
                array.append(element)
            }
            return .array(array)
        case .arrayRemove(let elements):
            let removing = Set(elements.map { Self.identity(of: $0) })
            return .array((previous?.arrayValue ?? []).filter { !removing.contains(Self.identity(of: $0)) })
        }
    }

    /// A key equal for two values exactly when they are identical (``Value/isIdentical(to:)``):
    /// the bytes of the canonical string (bytes, not `String`, whose equality would merge
    /// canonically equivalent strings). Union and remove look elements up in a set of these,
    /// so their cost grows with the array and the operands, not with their product.
    private static func identity(of value: Value) -> [UInt8] { Array(value.canonicalString.utf8) }

    static func increment(_ previous: Value?, by operand: Value) -> Value {
        // (Careful: `Value` is nil-literal expressible, so no `? $0 : nil` shortcuts here.)
        let base: Value
        if let previous, previous.isNumber { base = previous } else { base = .integer(0) }
        switch (base, operand) {
        case let (.integer(x), .integer(y)):
            let (sum, overflow) = x.addingReportingOverflow(y)
            return .integer(overflow ? (y > 0 ? .max : .min) : sum)
        case let (.integer(x), .double(y)):
            return .double(Double(x) + y)
        case let (.double(x), .integer(y)):
            return .double(x + Double(y))
        case let (.double(x), .double(y)):
            return .double(x + y)
        default:
            // A non-number operand is rejected by validation; here it leaves the base as is.
            return base
        }
    }
}

/// A transformation applied to one field of a document: a path and an operation.
public struct FieldTransform: Sendable, Hashable, CustomStringConvertible {
    /// The field transformed.
    public var path: FieldPath
    /// What is done to it.
    public var operation: TransformOperation

    /// Creates a transform of `path`.
    public init(_ path: FieldPath, _ operation: TransformOperation) {
        self.path = path
        self.operation = operation
    }

    /// Sets `path` to the commit time.
    public static func serverTimestamp(_ path: FieldPath) -> FieldTransform {
        FieldTransform(path, .serverTimestamp)
    }

    /// Adds `operand` (an integer or a double) to the number at `path`.
    public static func increment(_ path: FieldPath, by operand: Value) -> FieldTransform {
        FieldTransform(path, .increment(operand))
    }

    /// Adds `elements` not already present to the array at `path`.
    public static func arrayUnion(_ path: FieldPath, _ elements: [Value]) -> FieldTransform {
        FieldTransform(path, .arrayUnion(elements))
    }

    /// Removes `elements` from the array at `path`.
    public static func arrayRemove(_ path: FieldPath, _ elements: [Value]) -> FieldTransform {
        FieldTransform(path, .arrayRemove(elements))
    }

    /// `path: operation`.
    public var description: String { "\(path): \(operation)" }
}

public import DocModel

/// A value to write into a document field: a plain ``Value``, a nested map that may itself
/// hold sentinels, or one of the special operations resolved when the write is applied
/// (``serverTimestamp()``, ``increment(_:)-(Int64)``, ``arrayUnion(_:)``, ``arrayRemove(_:)``,
/// ``delete()``).
///
/// Literals work directly: `["name": "Ada", "visits": .increment(1), "seen": .serverTimestamp()]`.
public indirect enum FieldValue: Sendable, Hashable {
    case value(Value)
    case map([String: FieldValue])
    case serverTimestampSentinel
    case incrementSentinel(Value)
    case arrayUnionSentinel([Value])
    case arrayRemoveSentinel([Value])
    case deleteSentinel

    /// The server's commit time. Until the server has it, readers see a pending server
    /// timestamp (its local estimate, or the previous value, by ``ServerTimestampBehavior``).
    public static func serverTimestamp() -> FieldValue { .serverTimestampSentinel }

    /// A reference to an attachment (``DocumentStore/Attachments/add(file:contentType:)``):
    /// the write is sent to the server only after the attachment is uploaded.
    public static func attachment(_ id: AttachmentID) -> FieldValue { .value(.attachment(id)) }
    /// Adds `n` to the field (a missing or non-numeric field counts as 0); integer addition
    /// saturates at the Int64 bounds.
    public static func increment(_ n: Int64) -> FieldValue { .incrementSentinel(.integer(n)) }
    /// Adds `x` to the field as a double.
    @_disfavoredOverload
    public static func increment(_ x: Double) -> FieldValue { .incrementSentinel(.double(x)) }
    /// Appends each element not already present (a missing field counts as `[]`).
    public static func arrayUnion(_ elements: [Value]) -> FieldValue { .arrayUnionSentinel(elements) }
    /// Removes every element equal to one of `elements`.
    public static func arrayRemove(_ elements: [Value]) -> FieldValue { .arrayRemoveSentinel(elements) }
    /// Removes the field (in `updateData` and merging `setData` only).
    public static func delete() -> FieldValue { .deleteSentinel }
}

extension FieldValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .value(.null) }
    public init(booleanLiteral value: Bool) { self = .value(.boolean(value)) }
    public init(integerLiteral value: Int64) { self = .value(.integer(value)) }
    public init(floatLiteral value: Double) { self = .value(.double(value)) }
    public init(stringLiteral value: String) { self = .value(.string(value)) }
    public init(arrayLiteral elements: Value...) { self = .value(.array(elements)) }
    public init(dictionaryLiteral elements: (String, FieldValue)...) {
        self = .map(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

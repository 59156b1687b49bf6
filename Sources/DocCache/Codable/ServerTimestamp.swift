public import DocModel
public import Foundation

/// A type a ``ServerTimestamp`` property can hold: `Date` or ``Timestamp``.
public protocol ServerTimestampWrappable: Codable, Sendable {
    /// The value of a timestamp read from a document.
    static func wrap(_ timestamp: Timestamp) -> Self
    /// The timestamp to write.
    ///
    /// - Throws: `invalidArgument` when the value is outside the timestamp range.
    func unwrap() throws(DocError) -> Timestamp
}

extension Date: ServerTimestampWrappable {
    /// The timestamp as a `Date` (its resolution: about 0.1 µs for today's dates).
    public static func wrap(_ timestamp: Timestamp) -> Date { timestamp.dateValue }
    /// The date as a timestamp, to the nearest nanosecond.
    public func unwrap() throws(DocError) -> Timestamp { try Timestamp(date: self) }
}

extension Timestamp: ServerTimestampWrappable {
    /// The timestamp itself.
    public static func wrap(_ timestamp: Timestamp) -> Timestamp { timestamp }
    /// The timestamp itself (never throws).
    public func unwrap() throws(DocError) -> Timestamp { self }
}

/// A time the server sets when the write commits.
///
/// ```swift
/// struct Invoice: Codable {
///     var number: String
///     @ServerTimestamp var updatedAt: Date?
/// }
/// ```
///
/// - Writing (``DocumentEncoder``): `nil` is written as ``FieldValue/serverTimestamp()``, so
///   the server stores its commit time; a value is written as that timestamp. Like every
///   server timestamp it cannot be inside an array.
/// - Reading: the stored timestamp, or `nil` when the field is missing or `null`. Until the
///   server has committed the write, the field is a pending server timestamp, read as the
///   ``ServerTimestampBehavior`` given to ``DocumentSnapshot/data(as:serverTimestamps:decoder:)``
///   says: `nil` (`.none`, the default), the local estimate (`.estimate`) or the previous value
///   (`.previous`).
/// - Other coders (`JSONEncoder`) see it as an optional of its wrapped type.
@propertyWrapper
public struct ServerTimestamp<Wrapped: ServerTimestampWrappable>: OptionalValueWrapper, Sendable {
    /// The timestamp; `nil` writes the server's commit time.
    public var wrappedValue: Wrapped?

    /// A property holding `wrappedValue` (usually `nil`, for the server to set).
    public init(wrappedValue: Wrapped?) {
        self.wrappedValue = wrappedValue
    }
}

extension ServerTimestamp: Equatable where Wrapped: Equatable {}
extension ServerTimestamp: Hashable where Wrapped: Hashable {}

/// How ``DocumentEncoder`` writes a ``ServerTimestamp`` of any wrapped type.
protocol ServerTimestampEncoding {
    func encodedNode(at site: CodingSite) throws(DocError) -> EncodedNode
}

extension ServerTimestamp: ServerTimestampEncoding {
    func encodedNode(at site: CodingSite) throws(DocError) -> EncodedNode {
        guard let wrappedValue else { return .serverTimestamp }
        do {
            return .value(.timestamp(try wrappedValue.unwrap()))
        } catch {
            throw site.error(error.message)
        }
    }
}


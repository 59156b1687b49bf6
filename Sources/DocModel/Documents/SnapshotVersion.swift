/// A server commit version: microseconds since the Unix epoch, strictly increasing per
/// database. `none` (0) means "no version yet".
public struct SnapshotVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Microseconds since the Unix epoch; 0 for ``none``.
    public let microseconds: Int64

    /// A version from microseconds since the Unix epoch (not checked: any value is accepted).
    public init(microseconds: Int64) { self.microseconds = microseconds }

    /// No version: a document or target the server has not spoken about.
    public static let none = SnapshotVersion(microseconds: 0)

    /// The commit time this version stands for.
    public var timestamp: Timestamp { Timestamp(microseconds: microseconds) }

    public static func < (a: SnapshotVersion, b: SnapshotVersion) -> Bool { a.microseconds < b.microseconds }

    public var description: String { String(microseconds) }
}

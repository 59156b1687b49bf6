public import DocModel

/// The resume tokens the server hands out: where a listener's copy of its targets stands.
///
/// Format (17 bytes): `0x01` (token format 1), the tenant database's incarnation (8 bytes,
/// big-endian), the snapshot version in microseconds (8 bytes, big-endian). Tokens are opaque
/// to clients. A token is resumed only in the database incarnation that issued it, and only
/// while the change log still reaches back to its version; otherwise the target is `reset`.
/// Forging a token gains nothing: it can only make the server send less to the forger, who
/// then has an inconsistent copy of its own tenant's data.
public struct WatchToken: Sendable, Hashable, CustomStringConvertible {
    /// The incarnation of the tenant database that issued the token.
    public var incarnation: UInt64
    /// The snapshot version the token stands for.
    public var version: SnapshotVersion

    /// The first byte of every token of this format.
    public static let format: UInt8 = 0x01

    /// A token for `version` of the database incarnation `incarnation`. Versions are never
    /// negative; a token made for one anyway encodes to bytes ``init(bytes:)`` refuses.
    public init(incarnation: UInt64, version: SnapshotVersion) {
        self.incarnation = incarnation
        self.version = version
    }

    /// Reads a token; `nil` for bytes that are not a token of this format.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 17, bytes[0] == Self.format else { return nil }
        var incarnation: UInt64 = 0
        var version: UInt64 = 0
        for i in 1...8 { incarnation = incarnation << 8 | UInt64(bytes[i]) }
        for i in 9...16 { version = version << 8 | UInt64(bytes[i]) }
        guard version <= UInt64(Int64.max) else { return nil }
        self.init(incarnation: incarnation, version: SnapshotVersion(microseconds: Int64(version)))
    }

    /// The token's bytes, as sent to clients.
    public var bytes: [UInt8] {
        var out: [UInt8] = [Self.format]
        for i in (0..<8).reversed() { out.append(UInt8(truncatingIfNeeded: incarnation >> (8 * i))) }
        let v = UInt64(bitPattern: version.microseconds)
        for i in (0..<8).reversed() { out.append(UInt8(truncatingIfNeeded: v >> (8 * i))) }
        return out
    }

    public var description: String { "WatchToken(\(version))" }
}

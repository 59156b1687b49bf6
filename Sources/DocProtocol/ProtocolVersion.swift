/// The version of the doccache wire protocol.
///
/// The client names the version it speaks in its ``ClientMessage/Hello`` frame; the server
/// answers with its own in ``ServerMessage/Welcome`` or refuses the connection with a
/// `failedPrecondition` error when it does not speak the client's version. Frames are only
/// ever read under the version agreed in the handshake.
public struct ProtocolVersion: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The version number (1, 2, …).
    public let rawValue: Int

    /// Creates a version from its number.
    public init(_ rawValue: Int) { self.rawValue = rawValue }

    /// The version this module speaks.
    public static let current = ProtocolVersion(1)

    /// The versions a server built from this module accepts.
    public static let supported: ClosedRange<ProtocolVersion> = current...current

    public static func < (a: ProtocolVersion, b: ProtocolVersion) -> Bool { a.rawValue < b.rawValue }

    public var description: String { String(rawValue) }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(Int.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

public import DocModel

/// The name of a tenant: one database on the server. It comes only from a verified token, so a
/// connection's tenant is fixed at its handshake.
public struct TenantID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The name as given.
    public let rawValue: String

    /// The longest tenant name, in UTF-8 bytes.
    public static let maxBytes = 128

    /// Validates a tenant name: 1…128 UTF-8 bytes, no control characters, no `/`.
    public init(_ rawValue: String) throws(DocError) {
        guard !rawValue.isEmpty, rawValue.utf8.count <= Self.maxBytes else {
            throw DocError(.invalidArgument, "a tenant name has 1…\(Self.maxBytes) bytes", at: "tenant")
        }
        guard !rawValue.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F || $0 == "/" }) else {
            throw DocError(.invalidArgument, "a tenant name has no control characters and no '/'", at: "tenant \(rawValue)")
        }
        self.rawValue = rawValue
    }

    public var description: String { rawValue }

    public static func < (a: TenantID, b: TenantID) -> Bool { Array(a.rawValue.utf8).lexicographicallyPrecedes(b.rawValue.utf8) }
}

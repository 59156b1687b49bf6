/// A byte string as a set member or dictionary key, hashed in one pass over its bytes.
///
/// `[UInt8]` itself hashes element by element: for index rows and storage keys (tens of
/// bytes, compared as sets on every document write) that is about three times slower.
package struct HashedBytes: Hashable, Sendable {
    /// The bytes.
    package let bytes: [UInt8]

    package init(_ bytes: [UInt8]) { self.bytes = bytes }

    package func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    package static func == (a: HashedBytes, b: HashedBytes) -> Bool { a.bytes == b.bytes }
}

/// A key and its value.
public struct Entry: Sendable, Hashable {
    /// The key.
    public var key: [UInt8]
    /// The value stored under the key.
    public var value: [UInt8]

    /// Creates an entry.
    public init(key: [UInt8], value: [UInt8]) {
        self.key = key
        self.value = value
    }
}

import CLevelDB

/// A list of puts and deletes that ``Database/write(_:options:)`` applies atomically: after the
/// write, readers (and a database reopened after a crash) see all of them or none.
///
/// A plain value: building a batch touches no database, and a batch that is never written
/// changes nothing. Operations apply in order, so a later operation on a key wins.
public struct WriteBatch: Sendable, Hashable {
    /// One operation of a batch.
    public enum Operation: Sendable, Hashable {
        /// Store `value` under `key`.
        case put(key: [UInt8], value: [UInt8])
        /// Remove `key`.
        case delete(key: [UInt8])
    }

    /// The operations, in the order they will be applied.
    public private(set) var operations: [Operation] = []

    /// The size LevelDB's serialized form of the batch would have (LevelDB's
    /// `WriteBatch::ApproximateSize`): a 12-byte header, then per operation a tag byte and the
    /// length-prefixed key (and value).
    public private(set) var approximateSize: Int = WriteBatch.headerSize

    private static let headerSize = 12

    /// Creates an empty batch.
    public init() {}

    /// The number of operations.
    public var count: Int { operations.count }

    /// Whether the batch has no operations.
    public var isEmpty: Bool { operations.isEmpty }

    /// Adds a put of `value` under `key`.
    public mutating func put(_ key: [UInt8], _ value: [UInt8]) {
        operations.append(.put(key: key, value: value))
        approximateSize += 1 + Self.varintLength(key.count) + key.count
            + Self.varintLength(value.count) + value.count
    }

    /// Adds a delete of `key`.
    public mutating func delete(_ key: [UInt8]) {
        operations.append(.delete(key: key))
        approximateSize += 1 + Self.varintLength(key.count) + key.count
    }

    /// Adds a put of the UTF-8 bytes of `value` under the UTF-8 bytes of `key`.
    public mutating func put(_ key: String, _ value: String) {
        put(Array(key.utf8), Array(value.utf8))
    }

    /// Adds a delete of the UTF-8 bytes of `key`.
    public mutating func delete(_ key: String) {
        delete(Array(key.utf8))
    }

    /// Removes every operation.
    public mutating func clear() {
        operations.removeAll()
        approximateSize = Self.headerSize
    }

    /// Adds the operations to a native batch.
    func append(to batch: inout NativeWriteBatch) {
        for operation in operations {
            switch operation {
            case .put(let key, let value): batch.put(key, value)
            case .delete(let key): batch.delete(key)
            }
        }
    }

    /// The length of LevelDB's varint32 encoding of `value`.
    private static func varintLength(_ value: Int) -> Int {
        var length = 1
        var rest = value >> 7
        while rest > 0 {
            length += 1
            rest >>= 7
        }
        return length
    }
}

/// A range of keys in LevelDB's bytewise order: an optional inclusive lower bound and an
/// optional upper bound that excludes or includes its key.
///
/// ```swift
/// KeyRange.all                                   // every key
/// KeyRange(from: a, upTo: b)                     // a ≤ key < b
/// KeyRange(from: a, through: b)                  // a ≤ key ≤ b
/// KeyRange.prefix(Array("user/".utf8))           // keys starting with "user/"
/// ```
/// A range whose lower bound is above its upper bound is empty.
public struct KeyRange: Sendable, Hashable {
    /// The upper end of a range.
    public enum UpperBound: Sendable, Hashable {
        /// Keys below this one.
        case excluding([UInt8])
        /// Keys up to and including this one.
        case including([UInt8])
    }

    /// The smallest key in the range; `nil`: no lower bound.
    public var lowerBound: [UInt8]?
    /// Where the range ends; `nil`: no upper bound.
    public var upperBound: UpperBound?

    /// Creates a range from its bounds.
    public init(lowerBound: [UInt8]? = nil, upperBound: UpperBound? = nil) {
        self.lowerBound = lowerBound
        self.upperBound = upperBound
    }

    /// Every key.
    public static let all = KeyRange()

    /// Keys `lower ≤ key < upper`.
    public init(from lower: [UInt8], upTo upper: [UInt8]) {
        self.init(lowerBound: lower, upperBound: .excluding(upper))
    }

    /// Keys `lower ≤ key ≤ upper`.
    public init(from lower: [UInt8], through upper: [UInt8]) {
        self.init(lowerBound: lower, upperBound: .including(upper))
    }

    /// Keys `lower ≤ key`.
    public init(from lower: [UInt8]) {
        self.init(lowerBound: lower, upperBound: nil)
    }

    /// Keys `key < upper`.
    public init(upTo upper: [UInt8]) {
        self.init(lowerBound: nil, upperBound: .excluding(upper))
    }

    /// Keys `key ≤ upper`.
    public init(through upper: [UInt8]) {
        self.init(lowerBound: nil, upperBound: .including(upper))
    }

    /// The keys that start with `prefix`: from `prefix` up to (excluding) the smallest key
    /// greater than every key with that prefix (see ``prefixUpperBound(_:)``). The empty
    /// prefix is every key.
    public static func prefix(_ prefix: [UInt8]) -> KeyRange {
        KeyRange(
            lowerBound: prefix.isEmpty ? nil : prefix,
            upperBound: prefixUpperBound(prefix).map { .excluding($0) })
    }

    /// The smallest key greater than every key that starts with `prefix`: drop the trailing
    /// `0xFF` bytes and increment the last remaining byte (`[0x61, 0xFF]` → `[0x62]`). `nil`
    /// when there is none (the prefix is empty or all `0xFF`), meaning no upper bound.
    public static func prefixUpperBound(_ prefix: [UInt8]) -> [UInt8]? {
        var bound = prefix
        while let last = bound.last {
            if last < 0xFF {
                bound[bound.count - 1] = last + 1
                return bound
            }
            bound.removeLast()
        }
        return nil
    }

    /// Whether `key` is in the range.
    public func contains(_ key: [UInt8]) -> Bool {
        isAboveLowerBound(key) && isBelowUpperBound(key)
    }

    /// Whether `key` is not below the lower bound.
    func isAboveLowerBound(_ key: [UInt8]) -> Bool {
        guard let lowerBound else { return true }
        return !key.lexicographicallyPrecedes(lowerBound)
    }

    /// Whether `key` is not beyond the upper bound.
    func isBelowUpperBound(_ key: [UInt8]) -> Bool {
        switch upperBound {
        case nil: return true
        case .excluding(let upper)?: return key.lexicographicallyPrecedes(upper)
        case .including(let upper)?: return !upper.lexicographicallyPrecedes(key)
        }
    }
}

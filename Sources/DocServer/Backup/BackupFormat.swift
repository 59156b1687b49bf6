/// The backup file of the embedded store (docs/operations.md, "Backups"): every key and value
/// of the LevelDB database as of one snapshot, framed so that a truncated, corrupted or
/// foreign file is recognized before anything is restored from it.
///
/// ```
/// magic          8 bytes   "DCBK" 0x0D 0x0A 0x1A 0x0A
/// format         u32       1
/// header length  u32       H
/// header         H bytes   JSON (BackupHeader): layout, creation time, every tenant's state
/// records        tag 0x01, u32 key length, key, u32 value length, value     (in key order)
/// trailer        tag 0xFF, u64 record count, 32 bytes SHA-256 of every byte before it
/// ```
///
/// Integers are big-endian. The file ends right after the trailer. A server that fails while
/// streaming a backup writes tag 0x02, u32 length, a UTF-8 message instead of the trailer: the
/// file is then refused, with that message.
enum BackupFormat {
    static let magic: [UInt8] = [0x44, 0x43, 0x42, 0x4B, 0x0D, 0x0A, 0x1A, 0x0A]
    /// The version of this framing (not of the store's layout, which the header names).
    static let version: UInt32 = 1

    static let entryTag: UInt8 = 0x01
    static let errorTag: UInt8 = 0x02
    static let endTag: UInt8 = 0xFF

    /// Bounds a reader enforces before allocating: lengths beyond them mean a corrupt file.
    static let maxHeaderBytes = 16 << 20
    static let maxKeyBytes = 1 << 20
    static let maxValueBytes = 256 << 20
    static let maxErrorBytes = 64 << 10

    /// The SHA-256 digest's length in the trailer.
    static let digestBytes = 32
}

/// Big-endian integers into and out of byte arrays.
extension Array where Element == UInt8 {
    mutating func appendBigEndian(_ value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    mutating func appendBigEndian(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }
}

extension Collection where Element == UInt8 {
    /// The bytes as one big-endian unsigned integer (at most 8 of them).
    var bigEndianValue: UInt64 { reduce(0) { $0 << 8 | UInt64($1) } }
}

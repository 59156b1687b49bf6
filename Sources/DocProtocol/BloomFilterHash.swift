import Crypto

/// The hashing of an existence filter's bloom filter, as Firestore's: the MD5 digest of a
/// document's name (``ServerMessage/ExistenceFilter/documentName(of:)``) as two 64-bit
/// integers read little-endian, and the `i`th bit `(h1 + i·h2) mod 2⁶⁴ mod bitCount`. The
/// server sets these bits, the client tests them; one definition keeps them the same.
public enum BloomFilterHash {
    /// The two 64-bit halves of the MD5 digest of `name`'s UTF-8 bytes, each little-endian.
    public static func hash(_ name: String) -> (h1: UInt64, h2: UInt64) {
        var md5 = Insecure.MD5()
        var utf8 = name
        utf8.withUTF8 { md5.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        var h1: UInt64 = 0
        var h2: UInt64 = 0
        md5.finalize().withUnsafeBytes { digest in
            for i in 0..<8 {
                h1 |= UInt64(digest[i]) << (8 * UInt64(i))
                h2 |= UInt64(digest[8 + i]) << (8 * UInt64(i))
            }
        }
        return (h1, h2)
    }

    /// The `i`th bit index of a hash: `(h1 + i * h2) mod bitCount`, wrapping at 64 bits.
    public static func bitIndex(_ hash: (h1: UInt64, h2: UInt64), _ i: Int, bitCount: Int) -> Int {
        Int((hash.h1 &+ UInt64(i) &* hash.h2) % UInt64(bitCount))
    }
}

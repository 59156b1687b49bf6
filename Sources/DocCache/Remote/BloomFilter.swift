package import DocModel
internal import DocProtocol

/// The bloom filter of an existence filter: the names of the documents the server has in a
/// target, with false positives but no false negatives (Firestore's `BloomFilter`).
///
/// The filter has `bitCount = bitmap.count * 8 - padding` bits; bit `i` is bit `i % 8`
/// (least significant first) of byte `i / 8`. A name is hashed with MD5 over its UTF-8 bytes,
/// whose two little-endian 64-bit halves `h1`, `h2` give `hashCount` bit indexes
/// `(h1 + i * h2) mod bitCount` (unsigned 64-bit arithmetic, wrapping). The name is possibly
/// in the filter when all of them are set. The server builds filters the same way
/// (DocServer's `BloomFilterBuilder`; the protocol: docs/protocol.md, `existenceFilter`).
package struct BloomFilter: Sendable, Hashable {
    /// The bits.
    package let bitmap: [UInt8]
    /// The number of bits of ``bitmap`` in the filter (the last byte's `padding` high bits
    /// are not).
    package let bitCount: Int
    /// How many bits each name sets.
    package let hashCount: Int

    /// A filter, when the parameters fit together as Firestore requires: padding 0…7 and 0
    /// for an empty bitmap, a hash count that is not negative and not 0 for a non-empty
    /// bitmap. Otherwise throws `invalidArgument` (the client then ignores the filter).
    package init(bitmap: [UInt8], padding: Int, hashCount: Int) throws(DocError) {
        guard (0..<8).contains(padding) else {
            throw DocError(.invalidArgument, "invalid bloom filter padding \(padding) (expected 0…7)")
        }
        guard hashCount >= 0 else {
            throw DocError(.invalidArgument, "invalid bloom filter hash count \(hashCount)")
        }
        if !bitmap.isEmpty && hashCount == 0 {
            throw DocError(.invalidArgument, "invalid bloom filter hash count 0 for a bitmap of \(bitmap.count) bytes")
        }
        if bitmap.isEmpty && padding != 0 {
            throw DocError(.invalidArgument, "invalid bloom filter padding \(padding) for an empty bitmap (expected 0)")
        }
        self.bitmap = bitmap
        self.bitCount = bitmap.count * 8 - padding
        self.hashCount = hashCount
    }

    /// Whether `name` may be in the filter: `false` means it certainly is not. An empty
    /// filter contains nothing.
    package func mightContain(_ name: String) -> Bool {
        guard bitCount > 0 else { return false }
        let hash = BloomFilterHash.hash(name)
        for i in 0..<hashCount where !isSet(BloomFilterHash.bitIndex(hash, i, bitCount: bitCount)) {
            return false
        }
        return true
    }

    /// Whether bit `index` is set.
    private func isSet(_ index: Int) -> Bool {
        bitmap[index / 8] & (1 << UInt8(index % 8)) != 0
    }
}

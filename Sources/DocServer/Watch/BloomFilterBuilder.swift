internal import DocModel
internal import DocProtocol

#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif

/// Builds the bloom filter an existence filter carries: the names of a target's documents
/// (`ServerMessage.ExistenceFilter.documentName(of:)`), in Firestore's form (the bit layout
/// and the MD5 double hashing are described on `ServerMessage.ExistenceFilter.BloomFilter`;
/// the client's reader is DocCache's `BloomFilter`).
///
/// Sized by the standard formulas for `n` names and a false-positive rate `p`: `m =
/// ceil(-n ln p / (ln 2)²)` bits and `k = round(m / n · ln 2)` hashes (at least 1), with `n`
/// at least 1 so that an empty target still gets a filter that rules everything out. At the
/// default 1 % that is about 9.6 bits (1.2 bytes) per document and 7 hashes. The bitmap is
/// `ceil(m / 8)` bytes; the unused high bits of the last byte are its padding.
struct BloomFilterBuilder {
    private(set) var bitmap: [UInt8]
    let bitCount: Int
    let hashCount: Int

    /// An empty filter sized for `count` names at `falsePositiveRate` (in `(0, 1)`).
    init(count: Int, falsePositiveRate: Double) {
        let n = Double(max(count, 1))
        let p = min(max(falsePositiveRate, 1e-9), 0.999_999)
        let ln2 = log(2.0)
        let bits = max(1, Int((-n * log(p) / (ln2 * ln2)).rounded(.up)))
        bitCount = bits
        hashCount = max(1, Int((Double(bits) / n * ln2).rounded()))
        bitmap = [UInt8](repeating: 0, count: (bits + 7) / 8)
    }

    /// The filter of `keys` at `falsePositiveRate`, in wire form.
    static func filter(of keys: some Collection<DocumentKey>, falsePositiveRate: Double) -> ServerMessage.ExistenceFilter.BloomFilter {
        var builder = BloomFilterBuilder(count: keys.count, falsePositiveRate: falsePositiveRate)
        for key in keys {
            builder.insert(ServerMessage.ExistenceFilter.documentName(of: key))
        }
        return builder.wire
    }

    /// The filter in wire form.
    var wire: ServerMessage.ExistenceFilter.BloomFilter {
        .init(bitmap: bitmap, padding: bitmap.count * 8 - bitCount, hashCount: hashCount)
    }

    /// Adds `name`: sets its `hashCount` bits.
    mutating func insert(_ name: String) {
        let hash = BloomFilterHash.hash(name)
        for i in 0..<hashCount {
            let index = BloomFilterHash.bitIndex(hash, i, bitCount: bitCount)
            bitmap[index / 8] |= 1 << UInt8(index % 8)
        }
    }
}
